// EXPECT: 2:1: error: expected an identifier after '#'
#!/usr/bin/env python
"""A docstring of xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
"""
import torch

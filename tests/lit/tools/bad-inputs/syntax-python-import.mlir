// EXPECT: 2:1: error: unknown operation 'import'
import torch


def f(x):
    return x.split(4)

"""Shared pytest setup: make tests/ (models.py) and examples/ importable."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

_TESTS = Path(__file__).resolve().parent
for path in (_TESTS, _TESTS.parent / "examples"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

"""Shared pytest setup: make tests/ (models.py) and examples/ importable, and
verify the IR after every pass in every pipeline the tests run, and price
batch fusion with the cost model's fixed default constants.

`OPTIMUS_VERIFY_EACH=1` makes `optimize()`, the torch.compile backend and
`run_pipeline` verify the whole module after every pass (production runs
verify once, at the end; see `optimus_ir.pipeline.default_verify_each`).
A test that wants the production behaviour deletes the variable with
`monkeypatch.delenv`.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

_TESTS = Path(__file__).resolve().parent
for path in (_TESTS, _TESTS.parent / "examples"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

os.environ["OPTIMUS_VERIFY_EACH"] = "1"
# Fusion decisions must not depend on how loaded the test machine is: the
# cost model's documented constants, not a calibration (tests that want the
# calibrated model delete the variable).
os.environ.setdefault("OPTIMUS_COST_MODEL", "default")
# ... and optimize() does not time its result against the captured graph
# (a test of that check turns it on explicitly).
os.environ.setdefault("OPTIMUS_CHECK_SPEED", "0")
# A failure inside optimus-ir raises in the tests instead of falling back to
# the unoptimized graph (which would compute the right values and hide the
# bug); tests of the fallback delete the variable or pass strict=False.
os.environ.setdefault("OPTIMUS_STRICT", "1")

# Without a CUDA device, Triton kernels run in Triton's interpreter on CPU
# tensors (numerics only; never timed). It must be set before any kernel is
# decorated: triton.jit reads it then.
import torch  # noqa: E402

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

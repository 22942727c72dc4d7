"""No deprecation warning reaches the user from our use of torch (issue 34):
torch's pytree `FutureWarning` about `LeafSpec` (copying a graph's calling
convention built `LeafSpec`s again: `exporter.copy_graph` shares them) and
the `torch.jit.script_method` DeprecationWarnings that importing Inductor's
`compile_fx` gives (torch's own, filtered narrowly where the backend
imports it: `backend.inductor_compile_fx`).

Run in a fresh interpreter: a module imported once never warns again, and
the test process has imported Inductor long before."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent(
    r"""
    import sys, warnings
    # errors, for these messages only: any of them raised fails the run
    warnings.filterwarnings("error", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated", category=FutureWarning)
    warnings.filterwarnings("error", message=r"`torch\.jit\.script_method`", category=DeprecationWarning)
    import torch
    import optimus_ir
    from models import multi_task_dict

    model, batch = multi_task_dict(steps=1)
    expected = model(batch)
    for freeze in (False, True):  # freeze copies the graph (dict in, dict out: a pytree calling convention)
        result = optimus_ir.optimize(model, [batch], freeze=freeze)
        for task, value in expected.items():
            torch.testing.assert_close(result(batch)[task], value)
    from optimus_ir.translate.exporter import copy_graph
    copied = copy_graph(result.graph)  # shares the specs, copies the nodes
    assert copied._codegen.pytree_info.in_spec is result.graph._codegen.pytree_info.in_spec
    assert len(copied.nodes) == len(result.graph.nodes)

    # the compile below imports Inductor's compile_fx (and torch.utils.mkldnn) first
    assert "torch.utils.mkldnn" not in sys.modules
    small = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()).eval()
    x = torch.randn(3, 4)
    with torch.no_grad():
        out = torch.compile(small, backend="optimus", options={"freeze": True})(x)
    torch.testing.assert_close(out, small(x))
    assert "torch.utils.mkldnn" in sys.modules
    print("OK")
    """
)


def test_no_leafspec_or_script_method_warnings_from_optimize_and_the_backend() -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.strip().endswith("OK")
    assert "LeafSpec" not in done.stderr and "script_method" not in done.stderr

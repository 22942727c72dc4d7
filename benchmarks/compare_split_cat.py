"""Compare our split/cat simplification with PyTorch's pre-grad split-cat passes.

For each model of `benchmarks/split_cat_models.py`:

* original: the Dynamo-captured graph
  (`torch._dynamo.export(model, assume_static_by_default=True)`);
* PyTorch: that graph after `torch._inductor.fx_passes.pre_grad.pre_grad_passes`
  with `config.pre_grad_fusion_options` enabling every split-cat pattern pass
  (`PYTORCH_PASSES`, each run `--counter` times, default 2: some passes feed
  each other) and nothing else (no batch fusion);
* ours: `optimus_ir.optimize(model, inputs,
  pipeline="raise-fx,split-cat-simplify,dce,lower-to-fx")`.

Op counts are FX `call_function` / `call_method` / `call_module` nodes
(placeholders, get_attr and output left out). `getitem` nodes (tuple
indexing of split/unbind results, and tensor indexing/slicing) are counted
separately: `ops` excludes them, `getitem` counts them, `total` is both.
Both results are run on the example inputs and compared with the original
module's outputs bit for bit (`assert_close(rtol=0, atol=0)`).

Usage::

    python benchmarks/compare_split_cat.py                 # table
    python benchmarks/compare_split_cat.py --json out.json # also JSON
    python benchmarks/compare_split_cat.py --models split_stack,mixed
"""

from __future__ import annotations

import argparse
import copy
import json
import operator
import sys
import warnings
from pathlib import Path
from typing import Any

import torch
import torch.fx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from split_cat_models import MODELS  # noqa: E402

PIPELINE = "raise-fx,split-cat-simplify,dce,lower-to-fx"

PYTORCH_PASSES: tuple[str, ...] = (
    "normalization_pass",
    "remove_split_with_size_one_pass",
    "merge_getitem_cat_pass",
    "merge_stack_tahn_unbind_pass",
    "merge_splits_pass",
    "mutate_cat_pass",
    "split_cat_pass",
    "unbind_stack_pass",
    "split_cat_to_slices_pass",
    "unbind_cat_to_view_pass",
    "split_stack_to_cats_pass",
    "unbind_stack_to_slices_pass",
    "move_reshape_out_of_split_stack_pass",
)
"""PyTorch's pre-grad split/cat pattern passes (torch/_inductor/fx_passes/split_cat.py)."""


def count_ops(gm: torch.fx.GraphModule) -> dict[str, int]:
    """`ops` (compute and plumbing nodes, getitem excluded), `getitem`, `total`."""
    ops = getitem = 0
    for node in gm.graph.nodes:
        if node.op not in ("call_function", "call_method", "call_module"):
            continue
        if node.op == "call_function" and node.target is operator.getitem:
            getitem += 1
        else:
            ops += 1
    return {"ops": ops, "getitem": getitem, "total": ops + getitem}


def capture(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> torch.fx.GraphModule:
    gm, _ = torch._dynamo.export(model, assume_static_by_default=True)(*inputs)  # noqa: SLF001
    return gm


def run_pytorch(gm: torch.fx.GraphModule, inputs: tuple[torch.Tensor, ...], counter: int) -> torch.fx.GraphModule:
    """PyTorch's pre-grad split-cat passes on a copy of the captured graph."""
    from torch._inductor import config
    from torch._inductor.fx_passes.pre_grad import pre_grad_passes

    gm = copy.deepcopy(gm)
    options = {name: {"counter": counter} for name in PYTORCH_PASSES}
    with config.patch(pre_grad_fusion_options=options, pattern_matcher=True):
        return pre_grad_passes(gm, list(inputs))


def run_ours(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> torch.fx.GraphModule:
    import optimus_ir

    return optimus_ir.optimize(model, list(inputs), pipeline=PIPELINE)


def _flat(out: Any) -> list[torch.Tensor]:
    return list(torch.utils._pytree.tree_leaves(out))  # noqa: SLF001


def identical(expected: Any, got: Any) -> str | None:
    """None when the outputs are bitwise equal, else the error text."""
    a, b = _flat(expected), _flat(got)
    if len(a) != len(b):
        return f"{len(b)} outputs, expected {len(a)}"
    try:
        for x, y in zip(a, b):
            torch.testing.assert_close(y, x, rtol=0, atol=0)
    except AssertionError as err:
        return str(err).splitlines()[0]
    return None


def compare(name: str, counter: int) -> dict[str, Any]:
    spec = MODELS[name]
    model = spec.make()
    inputs = spec.inputs()
    with torch.no_grad():
        expected = model(*inputs)
        gm = capture(model, inputs)
        row: dict[str, Any] = {"model": name, "original": count_ops(gm)}
        try:
            theirs = run_pytorch(gm, inputs, counter)
            row["pytorch"] = count_ops(theirs)
            row["pytorch_error"] = identical(expected, theirs(*inputs))
        except Exception as err:  # noqa: BLE001 - report and go on
            row["pytorch"] = None
            row["pytorch_error"] = f"{type(err).__name__}: {err}"
        try:
            ours = run_ours(spec.make(), inputs)
            row["ours"] = count_ops(ours)
            row["ours_error"] = identical(expected, ours(*inputs))
        except Exception as err:  # noqa: BLE001
            row["ours"] = None
            row["ours_error"] = f"{type(err).__name__}: {err}"
    theirs_c, ours_c = row["pytorch"], row["ours"]
    # Not worse: no more ops and no more ops + getitems than PyTorch (or
    # PyTorch failed / gave different outputs while we did not).
    ours_ok = ours_c is not None and row["ours_error"] is None
    theirs_ok = theirs_c is not None and row["pytorch_error"] is None
    row["ours_not_worse"] = ours_ok and (
        not theirs_ok
        or (ours_c["ops"] <= theirs_c["ops"] and ours_c["total"] <= theirs_c["total"])
    )
    return row


def _cell(counts: dict[str, int] | None) -> str:
    if counts is None:
        return "failed"
    return f"{counts['ops']:>3} +{counts['getitem']:>2}"


def format_table(rows: list[dict[str, Any]]) -> str:
    width = max(len(r["model"]) for r in rows)
    head = (
        f"{'model':<{width}}  {'original':>9}  {'pytorch':>9}  {'ours':>9}  "
        "pytorch==orig  ours==orig  ours<=pytorch"
    )
    lines = [
        "op counts as 'ops +getitem' (call_function/method/module nodes; getitem counted apart)",
        head,
        "-" * len(head),
    ]
    for r in rows:
        theirs = "yes" if r["pytorch_error"] is None else "NO"
        ours = "yes" if r["ours_error"] is None else "NO"
        lines.append(
            f"{r['model']:<{width}}  {_cell(r['original']):>9}  {_cell(r['pytorch']):>9}  "
            f"{_cell(r['ours']):>9}  {theirs:>13}  {ours:>10}  "
            f"{'yes' if r['ours_not_worse'] else 'NO':>13}"
        )
    for r in rows:
        for who in ("pytorch", "ours"):
            if r[f"{who}_error"]:
                lines.append(f"  {r['model']} ({who}): {r[f'{who}_error']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated model names")
    parser.add_argument("--json", help="write the rows as JSON to this file")
    parser.add_argument("--counter", type=int, default=2, help="runs of each PyTorch pass")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    rows = [compare(name, args.counter) for name in args.models.split(",") if name]
    print(format_table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"pipeline": PIPELINE, "pytorch_passes": PYTORCH_PASSES, "rows": rows}, indent=2))
    ok = all(r["ours_error"] is None and r["ours_not_worse"] for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

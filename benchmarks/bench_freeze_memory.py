"""Tensor bytes an optimized module holds once the model is dropped (issue 24).

For the recsys model (`examples/recsys.py`, the suite's 'mixed' variant),
optimizes it in the default mode and with `freeze=True`, deletes the model,
collects garbage, and reports the bytes of the distinct tensor storages
still reachable from the returned module (`held_bytes`) against the bytes
of the model's parameters and buffers, how many original parameters are
still alive, and what the report says (`frozen_bytes`,
`parameter_copy_bytes`). Memory, not time: one run each.

    .venv/bin/python benchmarks/bench_freeze_memory.py                  # 64 towers, hidden 256, batch 64
    .venv/bin/python benchmarks/bench_freeze_memory.py --towers 8 --json out.json
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import types
import warnings
import weakref
from pathlib import Path
from typing import Any


import torch

_ROOT = Path(__file__).resolve().parent.parent
for _path in (_ROOT, _ROOT / "examples", _ROOT / "benchmarks"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))


def storages(root: Any) -> dict[tuple[Any, int], int]:
    """(device, data pointer) -> bytes of every real storage reachable from
    `root` through module dicts, plain attributes of objects and containers
    (its parameters, buffers, tensor attributes of it and its submodules,
    tensors in lists and dicts, the guard, the model it reads from, ...).
    Fake and meta tensors hold no memory and are left out."""
    found: dict[tuple[Any, int], int] = {}
    visited: set[int] = set()
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in visited or obj is None or isinstance(obj, (type, str, bytes, int, float, bool)):
            continue
        visited.add(id(obj))
        if isinstance(obj, torch.Tensor):
            try:
                storage = obj.untyped_storage()
                pointer = storage.data_ptr()
            except (RuntimeError, NotImplementedError):
                continue
            if pointer:
                found[(obj.device, pointer)] = storage.nbytes()
            continue
        if isinstance(obj, types.ModuleType) or (isinstance(obj, dict) and "__builtins__" in obj):
            continue  # a module or a module's globals (a `forward`'s, which the calling convention names)
        if isinstance(obj, dict):
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend(obj)
        elif hasattr(obj, "__dict__") and not callable(getattr(obj, "__self__", None)):
            stack.extend(vars(obj).values())
    return found


def held_bytes(root: Any) -> int:
    """Bytes of the distinct tensor storages reachable from `root`, each once."""
    return sum(storages(root).values())


def parameter_bytes(model: torch.nn.Module) -> int:
    """Bytes of the distinct storages of `model`'s parameters and buffers."""
    return held_bytes([*model.parameters(), *model.buffers()])


def measure(towers: int, hidden: int, batch: int, freeze: bool) -> dict[str, Any]:
    """One mode: optimize, drop the model, count what the module holds."""
    import optimus_ir
    from optimus_ir.examples.recsys import make_recsys_model
    from suite_models import RECSYS_VARIANTS

    model, (x,) = make_recsys_model(num_towers=towers, hidden=hidden, batch=batch, seed=0, **RECSYS_VARIANTS["mixed"])
    weights = parameter_bytes(model)
    originals = [weakref.ref(p) for p in model.parameters()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opt = optimus_ir.optimize(model, (x,), freeze=freeze)
    del model
    gc.collect()
    held = held_bytes(opt)
    report = opt.optimus_report
    return {
        "weight_bytes": weights,
        "held_bytes": held,
        "ratio": held / weights,
        "originals_alive": sum(r() is not None for r in originals),
        "parameters": len(originals),
        "frozen_bytes": report.frozen_bytes,
        "parameter_copy_bytes": report.parameter_copy_bytes,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--towers", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    results = {
        "model": f"recsys-mixed-{args.towers}, hidden {args.hidden}, batch {args.batch}, eval",
        "modes": {
            name: measure(args.towers, args.hidden, args.batch, freeze)
            for name, freeze in (("default", False), ("freeze", True))
        },
    }
    print(results["model"] + "; after `del model; gc.collect()`:")
    for name, row in results["modes"].items():
        print(
            f"  {name:<8} held {row['held_bytes'] / 1e6:.2f} MB / weights {row['weight_bytes'] / 1e6:.2f} MB "
            f"= {row['ratio']:.2f}x; originals alive {row['originals_alive']}/{row['parameters']}; "
            f"frozen {row['frozen_bytes'] / 1e6:.2f} MB, copies {row['parameter_copy_bytes'] / 1e6:.2f} MB"
        )
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()

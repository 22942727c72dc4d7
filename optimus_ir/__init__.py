"""optimus-ir: operator-level model transformation for PyTorch on an xDSL IR.

Public API (imported lazily, so that `import optimus_ir` stays cheap):

* `optimize(model_or_graph_module, example_inputs, pipeline=None, *, strict=None, ...) -> GraphModule`:
  guarded (`optimus_ir.api.guards`; `OptimusGuardWarning` when it runs the
  original model), the captured graph with an `OptimusFallbackWarning` on an
  internal failure unless strict;
* `import_graph(gm, example_inputs=None) -> ImportedGraph`
* `export_graph(imported_or_module, owner=None) -> GraphModule`
* `torch.compile(model, backend="optimus")`, registered as an entry point;
  `optimus_ir.backend(**options)` makes a backend with options;
* `optimus_ir.inductor_pass(**options)`: the pipeline as Inductor's pre-grad
  custom pass (`torch._inductor.config.pre_grad_custom_pass`);
* `@register_pass`: class decorator registering a user's `ModulePass` under
  its kebab-case `name` (pipelines, `optimus-opt -p` can then name it);
  installed plugin packages (entry points, group `optimus_ir.plugins`) are
  loaded once, lazily (`optimus_ir.plugins`; a broken one is one
  `OptimusPluginWarning`);
* `OptimizeOptions` (`optimus_ir.options`): the knobs of all three, one
  frozen attrs class (`options=OptimizeOptions(...)` instead of keywords);
  the environment variables optimus-ir reads are read there, in one place;
* `measure_call_memory(fn, *args)`, `resident_tensor_bytes(module, model)`
  (`optimus_ir.memory`): tensor memory at the allocator, per call and
  held between calls (`OptimizeReport.memory`);
* `retain_freed_memory()` (`optimus_ir.api.allocator`): glibc keeps freed
  heap in the process, so that calls stop faulting fresh pages (opt-in,
  process-wide; `optimize()` never calls it).

Importing the package registers the custom ops `torch.ops.optimus.*`
(`optimus_ir.kernels.ops`, `optimus_ir.inductor_handoff`; torch only, no
triton), so an exported graph that calls them runs in any process that
imported optimus_ir.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

import optimus_ir.kernels.ops  # noqa: E402,F401  (registers torch.ops.optimus.*)
import optimus_ir.backend  # noqa: E402,F401  (a callable module: optimus_ir.backend(...))
import optimus_ir.inductor_handoff  # noqa: E402,F401  (registers torch.ops.optimus.stack)

_LAZY = {
    "optimize": "optimus_ir.api",
    "capture": "optimus_ir.api",
    "OptimizeReport": "optimus_ir.api",
    "CaptureError": "optimus_ir.api",
    "OptimusFallbackWarning": "optimus_ir.foundation.diagnostics",
    "OptimusGuardWarning": "optimus_ir.api.guards",
    "register_pass": "optimus_ir.passes.registry",
    "OptimusPluginWarning": "optimus_ir.plugins",
    "import_graph": "optimus_ir.translate.importer",
    "ImportedGraph": "optimus_ir.translate.importer",
    "GraphImportError": "optimus_ir.translate.importer",
    "export_graph": "optimus_ir.translate.exporter",
    "GraphExportError": "optimus_ir.translate.exporter",
    "optimus_backend": "optimus_ir.backend",
    "BackendOptions": "optimus_ir.backend",
    "OptimizeOptions": "optimus_ir.options",
    "inductor_pass": "optimus_ir.inductor_hook",
    "OptimusInductorPass": "optimus_ir.inductor_hook",
    "register_replacement": "optimus_ir.replacements",
    "measure_call_memory": "optimus_ir.memory",
    "resident_tensor_bytes": "optimus_ir.memory",
    "unshare_parameters": "optimus_ir.api.shared_stacks",
    "retain_freed_memory": "optimus_ir.api.allocator",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'optimus_ir' has no attribute '{name}'")
    import importlib

    return getattr(importlib.import_module(module_name), name)


__all__ = sorted([*_LAZY, "backend"])

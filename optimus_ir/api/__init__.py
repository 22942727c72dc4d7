"""The api layer (rank 7, with the entry-point modules at
the package root): capture, import, optimize, export, the guards, the
model's names, parameter freshness.

`optimize(model, example_inputs)` is the whole compiler stage in one call:

1. capture: an nn.Module (or any callable) is captured the way torch.compile
   captures it -- Dynamo, one whole graph, static shapes -- so ordinary Python
   such as a loop over the pieces of a split is fine; a GraphModule is taken
   as it is;
2. import into the `fx` dialect;
3. run the pass pipeline (`DEFAULT_PIPELINE` unless one is given), ending with
   `lower-to-fx` (appended when the pipeline leaves operator ops behind);
4. export a GraphModule that is called like the model (positional and
   keyword inputs) and references the model's own parameters.

`optimize` never changes the model it was given. The returned module is
specialized for the example inputs and guarded (`optimus_ir.api.guards`): on
every call it checks the shapes, dtypes, devices and types of the tensor
arguments and the values and types of the others, and for other inputs runs
a version optimized for them (a bounded cache; a batch-generic graph runs
at any batch size as it is) or, past the bound, the original model. It is
also specialized for the strides of the example inputs where the layout
reasoning of the passes relied on them: called with tensors of other
strides, it runs the unoptimized captured graph instead (one `.stride()`
comparison per tensor input). Its outputs have the strides the captured
graph returns. A failure inside optimus-ir after the capture returns the
captured graph with an `OptimusFallbackWarning` (`strict=True` raises).
Production runs verify the IR once, after the last pass; `verify_each=True`
(or `OPTIMUS_VERIFY_EACH=1`, as in the tests) verifies after every pass.

The returned module carries an `optimus_report` (`OptimizeReport`): ops per
kind before and after, the passes run with their statistics, time per phase.

The package, by concern:

* `capturing` -- `capture()`: the model to one FX graph (Dynamo), the checks
  that it behaves like the model, the flat graph inputs of a call;
* `optimizing` -- `_optimize`: one captured graph through import, the
  passes, the export and freezing, each phase timed;
* `module` -- the module `optimize` returns: `_OptimizeFor` (what the guard
  calls again), the fall back on a failure, the guard installed;
* `fallback` -- the unoptimized modules returned instead, and how a
  failure is named (`describe_failure`);
* `speed_check` -- the speed check and the op-count guard;
* `report` -- `OptimizeReport` and its records, and its formatting;
* `op_counts` -- counting ops one way everywhere (`PLUMBING_KINDS`);
* `entry` -- `optimize()` itself.

What the module `optimize` returns guarantees:

The model is never changed; the result keeps it by reference. Its state
is the model's, under the model's names: `state_dict()`,
`load_state_dict()`, `named_parameters()`, `named_buffers()` and
`parameters()` hold the model's very tensors (`optimus_ir.api.model_names`),
so checkpoints move freely between the two. A wrapper (DDP,
DataParallel, FSDP, a `torch.compile`d module) is a `CaptureError`
saying what to do instead (optimize the wrapped module, or use
`torch.compile(..., backend="optimus")`).

Guards: the result is specialized for the example inputs, and checks on
every call, cheaply (about a microsecond; `benchmarks/bench_guards.py`),
everything it was specialized on: the shape, dtype, device and type of
every tensor argument and the value *and Python type* of every other
argument (`2`, `2.0` and `True` differ). Called with other inputs, it
runs a version optimized for them (optimized again with the same
options, and kept, for up to `guards.MAX_SPECIALIZATIONS` input
signatures: logged at INFO on `optimus_ir.api.guards`), and beyond that the
original model, with one `OptimusGuardWarning`. A graph that does not
depend on the batch size (proved once, at the first call with another
one: see `optimus_ir.api.guards`) runs at any batch size >= 2 without being
optimized again. `result.optimus_guard` (`guards.InputGuard`) counts the
re-optimizations. It is also specialized for the strides of the example
inputs where its rewrites relied on them, and runs the captured graph
(not optimized) for tensors of other strides (one `.stride()`
comparison per tensor input).

Failures: a model Dynamo cannot capture whole raises `CaptureError`, and
bad arguments (a bad `pipeline` text, inputs that do not fit the model)
raise as well. A failure inside optimus-ir after the capture (the import,
a pass, the export) is not the caller's: by default `optimize` returns
the captured graph, unoptimized (but guarded), with one
`OptimusFallbackWarning` naming the pass or phase and the error's first
line (`optimus_report.fallback` says the same); `strict=True` (default:
`OPTIMUS_STRICT=1`, which the tests set) raises the error instead. With
`validate=True`, a `ValidationError` always raises: it is what was asked for.

Parameters and buffers are read from the model's own modules on every
call, and values the graph computes from them alone (the stacked
weights of a fused linear) are computed on every call: every change of
the model's parameters and buffers is followed (optimizers, fused ones
included, `.data` writes, `load_state_dict`, reassigned parameters,
`.to()`), and gradients reach the parameters. The cost model charges
that stacking, so a group is fused only where it pays with it.
`freeze=True` is the fast path for inference: the parameters are
constants. Parameter-only values are computed once, now, and stored as
buffers read without any check; later changes of the parameters are not
followed (like Inductor's freezing), and a backward that needs the
gradient of a frozen parameter raises a RuntimeError. The module owns
those values and keeps no second copy of the weights in them: it reads
views of them instead, through a stand-in of `model` (which is not
changed), so once the caller drops `model` each stacked weight is held
once (`report.frozen_bytes`, `report.parameter_copy_bytes`). See
`optimus_ir.api.param_cache`.

The result is never slower than the captured graph it started from by
a clear margin: with `check_speed` (default: on; `check_speed=False` or
`OPTIMUS_CHECK_SPEED=0` turns it off), when batch fusion fused anything
in a graph without side effects, both are timed on the example inputs
in `SPEED_ROUNDS` interleaved rounds (about a tenth of a second), and
only if the fused module is more than `SPEED_MARGIN` (15%) slower in
every round (`speed_veto`) does the named pipeline `unfused` (the
default one without batch fusion) run instead; `optimus_report.speed_check`
says what was measured and decided. The cost model decides; the check
catches only a large misprediction on the machine at hand, so that load
from other processes does not change the graph from run to run. When
the speed check ran, `optimus_report.memory` also holds the tensor
memory of one call of the result and of the captured graph and what
each holds between calls (`MemoryCheck`, `optimus_ir.memory`; about
0.1 s on 64 towers, the first time in a process 0.2 s); otherwise
`optimus_report.measure_memory(result, model, example_inputs)` measures it.

The result never has more ops than the captured graph (`count_fx_ops`,
as `optimus_report.ops_before`/`ops_after` count them): a result with
more is replaced by the `unfused` pipeline's, or, when that has more
too, by the captured graph, with a remark saying so. After any such fall
back the report describes the module returned: its remarks and
statistics are the rerun's, and what the discarded attempt did is in
`optimus_report.discarded_remarks`.
"""

from __future__ import annotations

from optimus_ir.api.capturing import _flat_inputs, capture
from optimus_ir.api.entry import optimize
from optimus_ir.api.fallback import _running_the_model, _unoptimized, describe_failure
from optimus_ir.api.module import _OptimizeFor
from optimus_ir.api.op_counts import (
    PLUMBING_KINDS,
    OpCounts,
    count_compute_ops,
    count_fx_ops,
    count_parameter_only_ops,
    count_per_call_ops,
    count_view_ops,
    is_plumbing,
    op_kind,
)
from optimus_ir.api.optimizing import FAILED_PHASE_ATTRIBUTE, _optimize, _run_passes, failed_phase
from optimus_ir.api.report import MEMORY_METHOD, SPEED_MARGIN, MemoryCheck, OptimizeReport, SpeedCheck, memory_check
from optimus_ir.api.speed_check import SPEED_CHECK_FALLBACK, SPEED_ROUNDS, _per_call_rounds, speed_veto
from optimus_ir.foundation.diagnostics import OptimusFallbackWarning
from optimus_ir.dialects import fx
from optimus_ir.translate.exporter import FALLBACK_ATTRIBUTE, export_graph, finish_code
from optimus_ir.translate.importer import ImportedGraph, import_graph
from optimus_ir.translate.model_state import AttributeAssignmentError, CaptureError
from optimus_ir.options import (
    CHECK_SPEED_ENV,
    CostModelChoice,
    InnerCompiler,
    KernelChoice,
    OptimizeOptions,
    environment,
)

__all__ = [
    "AttributeAssignmentError",
    "CaptureError",
    "OptimusFallbackWarning",
    "ImportedGraph",
    "OptimizeOptions",
    "OptimizeReport",
    "SpeedCheck",
    "capture",
    "count_fx_ops",
    "export_graph",
    "fx",
    "import_graph",
    "optimize",
]

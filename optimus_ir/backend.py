"""`torch.compile(model, backend="optimus")`: optimus-ir as a compiler stage.

Registered through the `torch_dynamo_backends` entry point, so it works right
after installing the package, without importing optimus_ir first. Dynamo
hands us each captured graph (several per model at graph breaks, one more
per recompile), with its example values in `node.meta`; we optimize it and
pass the result on to Inductor (default) or run it as it is
(`inner="eager"`). Options (`optimus_ir.options.OptimizeOptions`, shared
with `optimize()` and the Inductor hook) come through
`torch.compile(..., options={...})` or the factory::

    torch.compile(model, backend="optimus", options={"remarks": True})
    torch.compile(model, backend=optimus_ir.backend(strict=True, inner="eager"))

The factory is this module itself: `optimus_ir.backend(...)` calls `backend`.
The `OptimusBackend` it returns records what it did with every graph
(`outcomes`).

A graph optimus-ir cannot handle (one it cannot import or type, a pass or
the export failing, a validation failure) is not an error of the user's
program: the backend warns once per graph (`OptimusFallbackWarning`, naming
the graph, the pass or phase and the error) and hands the graph on
unoptimized; `strict=True` (or `OPTIMUS_STRICT=1`) raises
`OptimusBackendError` instead. A bad `pipeline` text or an unknown option
is the caller's mistake and always raises.

Observability: one INFO line per graph on the `optimus_ir.backend` logger
(`optimus: graph 0/0: 69 -> 25 ops, ...`: Dynamo's compile id, and for the
graphs DDPOptimizer splits per DDP bucket the submodule, `graph 0/0
submod_1: ...`; ops before -> after, fusions applied, time in our passes) -- enable it with
`TORCH_LOGS="optimus_ir"` or `OPTIMUS_LOG=info`. At DEBUG
(`TORCH_LOGS="+optimus_ir"`, `OPTIMUS_LOG=debug`) the `optimus_ir.ir` logger
gets the IR after every pass and `optimus_ir.remarks` every remark (what was
fused and why the rest was not); `remarks=True` prints the remarks to stderr
without any logging set-up.

Before Inductor gets our graph, wide stacks of graph inputs (the weights of
a batched linear) become one opaque call (`optimus_ir.inductor_handoff`):
Inductor would generate a loop per input for them.

Dynamo guards on the strides of the inputs itself, so the backend's graph
carries no stride check of its own (`optimize()`'s result does). Dynamo
lifts the parameters to graph inputs, so values computed from them (the
stacked weights of fused linears) are computed on every call from the
parameters of that call: every update is followed, as in `optimize()`'s
default. `freeze=True` is for inference, parameters being constants:
Inductor freezes them (its own `freezing` option for this compile) and
folds the stacks; with `inner="eager"` the frozen parameter-only values of
`optimus_ir.api.param_cache` apply where a graph reads parameters as attributes.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import io
import itertools
import logging
import sys
import time
import types
import warnings
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, get_args

import torch
import torch.fx

# defined where optimize() imports them too; importable from here as before
from optimus_ir.foundation.diagnostics import STRICT_ENV, OptimusFallbackWarning
from optimus_ir.translate.exporter import copy_graph
from optimus_ir.options import LOG_ENV, InnerCompiler, OptimizeOptions, ResolvedOptions, ResolvedPipeline, environment

log = logging.getLogger("optimus_ir.backend")
ir_log = logging.getLogger("optimus_ir.ir")
remark_log = logging.getLogger("optimus_ir.remarks")

INNER_COMPILERS: tuple[str, ...] = get_args(InnerCompiler)
"""What the optimized graph is handed to: Inductor, or nothing (run it)."""


class OptimusBackendError(RuntimeError):
    """A graph could not be optimized and the backend runs in strict mode."""


BackendOptions = OptimizeOptions
"""The options of the backend: `optimus_ir.options.OptimizeOptions` (one
class for `optimize()`, the backend and the Inductor hook; the name is kept
for the code that imports it from here)."""


@dataclass
class GraphOutcome:
    """What the backend did with one graph Dynamo handed it."""

    graph: str
    """Dynamo's compile id of the graph (`0/1`: frame 0, recompile 1)."""
    ops_before: int
    ops_after: int
    optimized: bool
    """False: the graph runs unoptimized (`reason` says why)."""
    reason: str | None = None
    fusions: int = 0
    """Batch-fusion groups fused."""
    rewrites: int = 0
    """Pattern rewrites of all passes (split/cat eliminations included)."""
    seconds: float = 0.0
    """Time spent in optimus-ir on this graph (import, passes, export)."""
    report: Any = None
    """The `OptimizeReport` (None when the graph was passed through)."""
    opaque_stacks: int = 0
    """Wide stacks of graph inputs handed to Inductor as one opaque call
    (`optimus_ir.inductor_handoff`)."""
    unchanged: bool = False
    """Our pipeline changed nothing (no fusion, no rewrite, as many ops), so
    the inner compiler got Dynamo's graph itself."""
    subgraph: str | None = None
    """Which piece of the compile id's graph this is, where Dynamo's graph
    was split before the backend got it: DDPOptimizer's submodule
    (`submod_0`, `submod_1`, ...: one per DDP bucket, in graph order;
    `split_subgraph`); None for a whole graph."""

    @property
    def name(self) -> str:
        """The graph's name in the log: the compile id, and the subgraph (`0/0 submod_1`)."""
        return self.graph if self.subgraph is None else f"{self.graph} {self.subgraph}"

    def describe(self) -> str:
        """The one line the backend logs for the graph: its ops counted as
        the report counts them (`OptimizeReport.op_counts`: compute and view
        ops before -> per call, the ops on parameters alone that Inductor's
        freezing folds stated apart), and where the result has more ops
        than the graph Dynamo captured, why."""
        head = f"optimus: graph {self.name}: "
        if not self.optimized:
            return head + f"{self.ops_before} ops passed through unoptimized: {self.reason}"
        if self.report is not None:
            counts = self.report.op_counts()
            summary, why = counts.summary(), counts.why_more()
        else:
            summary, why = f"{self.ops_before} -> {self.ops_after} ops", None
        return (
            head
            + f"{summary}, {self.fusions} batch fusion(s), "
            f"{self.rewrites} rewrite(s), {self.seconds * 1e3:.1f} ms in optimus-ir"
            + (f"; {why}" if why else "")
        )


def current_graph_name() -> str:
    """Dynamo's compile id of the graph being compiled (`frame/recompile`)."""
    try:
        from torch._guards import CompileContext

        compile_id = CompileContext.current_compile_id()
    except Exception:  # noqa: BLE001 - an internal API; the name is cosmetic
        compile_id = None
    if compile_id is None:  # not under Dynamo (a graph handed over by hand)
        return f"#{next(_UNNAMED_GRAPHS)}"
    return str(compile_id)


_UNNAMED_GRAPHS = itertools.count(1)

DDP_SPLIT_MARK = "DDPOptimizer"
"""What the `compile_subgraph_reason` of a graph DDPOptimizer split off says
(torch/_dynamo/backends/distributed.py marks each submodule it hands the
backend so)."""

_SUBGRAPHS_SEEN: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
"""DDPOptimizer submodules handed over so far, per Dynamo compilation (its
`TracingContext`: compile ids start again after `torch._dynamo.reset()`)."""

_SUBGRAPHS_SEEN_BY_ID: collections.Counter[str] = collections.Counter()
"""The same, per compile id, where no tracing context is set."""


def split_subgraph(gm: Any, compile_id: str) -> str | None:
    """The name of `gm` within its compile id's graph when DDPOptimizer split
    that graph per DDP bucket (`submod_<k>`: it hands the backend one
    submodule per bucket, in graph order, all under one compile id, each
    marked `DDP_SPLIT_MARK` in its `compile_subgraph_reason`); None for a
    graph handed over whole."""
    reason = getattr(gm, "compile_subgraph_reason", None)
    if DDP_SPLIT_MARK not in str(getattr(reason, "reason", "") or ""):
        return None
    try:
        from torch._guards import TracingContext

        context = TracingContext.try_get()
    except Exception:  # noqa: BLE001 - an internal API; the name is cosmetic
        context = None
    if context is not None:
        try:
            index = _SUBGRAPHS_SEEN.get(context, 0)
            _SUBGRAPHS_SEEN[context] = index + 1
            return f"submod_{index}"
        except TypeError:  # not weakly referable
            pass
    index = _SUBGRAPHS_SEEN_BY_ID[compile_id]
    _SUBGRAPHS_SEEN_BY_ID[compile_id] += 1
    return f"submod_{index}"


def _configure_logging_from_env() -> None:
    """`OPTIMUS_LOG=info|debug`: a stderr handler on the `optimus_ir` logger
    (once; left alone when TORCH_LOGS or the user configured it)."""
    level = environment().log_level.upper()
    root = logging.getLogger("optimus_ir")
    if not level or getattr(root, "_optimus_env_handler", False):
        return
    if level not in ("INFO", "DEBUG"):
        warnings.warn(f"{LOG_ENV}={level.lower()!r} is not 'info' or 'debug'; ignored", stacklevel=3)
        root._optimus_env_handler = True  # type: ignore[attr-defined]
        return
    root.setLevel(level)
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
        root.addHandler(handler)
    root._optimus_env_handler = True  # type: ignore[attr-defined]


def _log_ir_after(graph: str) -> Callable[[Any, Any], None] | None:
    """The after-pass hook that logs the IR (only when DEBUG is on: printing
    a large module costs as much as a pass)."""
    if not ir_log.isEnabledFor(logging.DEBUG):
        return None
    from xdsl.printer import Printer

    def after_pass(pass_: Any, module: Any) -> None:
        text = io.StringIO()
        Printer(stream=text).print_op(module)
        ir_log.debug("graph %s: IR after %s:\n%s", graph, pass_.name, text.getvalue())

    return after_pass


def _describe_failure(error: BaseException) -> str:
    from optimus_ir.api import describe_failure

    return describe_failure(error)


def optimize_dynamo_graph(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    options: OptimizeOptions,
    *,
    cache_parameters: bool,
    who: str = "optimus backend",
    frozen: bool = False,
    free_parameter_stacks: bool = False,
) -> tuple[torch.fx.GraphModule, GraphOutcome]:
    """Optimize one graph Dynamo captured; the graph to run (`gm` itself when
    it is passed through) and what happened. Never raises for a failure
    inside optimus-ir unless `options.is_strict`. The knobs `options`
    leaves None are read from the environment now, once per graph.
    `frozen`: Inductor will freeze the graph's parameters;
    `free_parameter_stacks`: stacks of parameters cost nothing per call
    (frozen, or shared: `parameter_stacks="shared"`)."""
    from optimus_ir.api import count_fx_ops
    from optimus_ir.plugins import load_plugins

    _configure_logging_from_env()
    options = options.resolve()  # once per graph: the environment read, the pipeline built
    load_plugins(strict=options.strict)  # installed plugins, once per process (the Inductor hook comes here too)
    compile_id = current_graph_name()
    subgraph = split_subgraph(gm, compile_id)
    graph = compile_id if subgraph is None else f"{compile_id} {subgraph}"  # the name in messages
    ops_before = sum(count_fx_ops(gm).values())
    if ops_before == 0:
        return gm, passed_through(compile_id, 0, "no operations to optimize", subgraph)
    start = time.perf_counter()
    try:
        optimized = _optimize_graph(
            gm, example_inputs, options, cache_parameters, _log_ir_after(graph), frozen or free_parameter_stacks,
            checked=free_parameter_stacks and not frozen,
        )
    except Exception as error:  # noqa: BLE001 - whatever fails, the user's program must run
        reason = _describe_failure(error)
        if options.strict:
            raise OptimusBackendError(f"{who}: graph {graph}: {reason}") from error
        outcome = passed_through(compile_id, ops_before, reason, subgraph)
        warnings.warn(
            f"{who}: cannot optimize graph {graph}: {reason}; running it unoptimized "
            f"(strict=True or {STRICT_ENV}=1 raises instead)",
            OptimusFallbackWarning,
            stacklevel=3,
        )
        return gm, outcome
    report = optimized.optimus_report  # type: ignore[attr-defined]
    _count_parameter_ops(report, gm, optimized, example_inputs, frozen)
    # A remark holds its op, and with it the whole IR of the graph: keep
    # the message and the location only.
    report.remarks = [dataclasses.replace(remark, op=None) for remark in report.remarks]
    outcome = GraphOutcome(
        compile_id,
        ops_before,
        sum(count_fx_ops(optimized).values()),
        optimized=True,
        fusions=sum(r.counters.get("groups fused", 0) for r in report.statistics.by_pass("batch-fusion")),
        rewrites=report.statistics.total_rewrites,
        seconds=time.perf_counter() - start,
        report=report,
        subgraph=subgraph,
    )
    log.info("%s", outcome.describe())
    _emit_remarks(graph, report.remarks, options.remarks)
    return optimized, outcome


FOLDED_BY_INDUCTOR = "folded into constants by Inductor's freezing"
"""`OptimizeReport.computed_once_by` of a graph Inductor freezes."""


def _count_parameter_ops(
    report: Any,
    gm: torch.fx.GraphModule,
    optimized: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    frozen: bool,
) -> None:
    """Set what `report` counts of the ops on parameters alone: where
    Inductor freezes the graph (`frozen`: the parameters are attributes)
    it folds them into constants, so they are not run per call
    (`ops_per_call`, `computed_once_by`); otherwise Dynamo lifted the
    parameters to graph inputs and what is computed from them alone (the
    stacks of weights) runs on every call (`parameter_ops_per_call`)."""
    from optimus_ir.api import count_compute_ops, count_parameter_only_ops

    if report.ops_per_call is not None:
        return  # freeze=True with inner="eager": our freezing computed them once
    if frozen:
        report.ops_per_call = report.ops_after - count_parameter_only_ops(optimized)
        report.computed_once_by = FOLDED_BY_INDUCTOR
        report.parameter_ops_per_call = 0
        return
    originals = list(gm.graph.find_nodes(op="placeholder"))
    placeholders = list(optimized.graph.find_nodes(op="placeholder"))
    if len(originals) != len(example_inputs) or len(placeholders) != len(example_inputs):
        return
    parameters = {
        str(node.target)
        for node, original, value in zip(placeholders, originals, example_inputs)
        if _is_frozen_input(original, value)
    }
    report.parameter_ops_per_call = count_compute_ops(count_parameter_only_ops(optimized, parameters))


def passed_through(graph: str, ops: int, reason: str, subgraph: str | None = None) -> GraphOutcome:
    """The outcome of a graph left as it is, logged with its reason."""
    outcome = GraphOutcome(graph, ops, ops, optimized=False, reason=reason, subgraph=subgraph)
    log.info("%s", outcome.describe())
    return outcome


def _emit_remarks(graph: str, remarks: Sequence[Any], to_stderr: bool) -> None:
    if remark_log.isEnabledFor(logging.DEBUG):
        for remark in remarks:
            remark_log.debug("graph %s: %s", graph, remark.message)
    if to_stderr:
        for remark in remarks:
            print(f"optimus: graph {graph}: remark: {remark.message}", file=sys.stderr)


def _optimize_graph(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    options: ResolvedOptions,
    cache_parameters: bool,
    after_pass: Callable[[Any, Any], None] | None,
    frozen: bool = False,
    *,
    checked: bool = False,
) -> torch.fx.GraphModule:
    """`gm` optimized for the backend (no stride guard: Dynamo guards),
    priced for the compiler that runs it (`options.inner`)."""
    from optimus_ir.api import _optimize  # looked up there: tests record its calls
    from optimus_ir.api.optimizing import knobs_of

    return _optimize(
        gm,
        example_inputs,
        passes_for_target(options.pipeline, options.inner, frozen, checked=checked),
        statistics=None,
        example_kwargs=None,
        guard_strides=False,
        cache_parameters=cache_parameters,
        after_pass=after_pass,
        **knobs_of(options),
    )


def passes_for_target(
    pipeline: ResolvedPipeline, inner: str, frozen: bool = False, *, checked: bool = False
) -> ResolvedPipeline:
    """The pipeline to run when `inner` runs the result (its passes replaced
    in memory): with Inductor, every `batch-fusion` that leaves its `target`
    at the default prices its groups for Inductor (`target=inductor`:
    pointwise chains fuse vertically there anyway, views are free, linears
    are extern calls; see `optimus_ir.analysis.cost_model.InductorCosts`), and every
    `lower-batch` so lowers each batch op in the form Inductor compiles best
    (`target=inductor`: small layer norms whose parameters are graph inputs
    per member; `optimus_ir.analysis.cost_model.layer_norm_lowering`), and
    `reinplace` leaves the graph alone (Inductor re-inplaces itself). A pipeline
    that sets `target=inductor` itself is kept as it is; `target=eager` is
    the default and so is replaced too (as `OptimizeOptions.resolve` treats
    option values equal to the default). `frozen`: Inductor freezes the
    parameters (its `freezing`), so stacks of parameters are folded to
    constants at compile time and cost nothing per call (`constant-parameters`);
    so do shared stacks (`parameter_stacks="shared"`), with either compiler,
    whose members are checked per call (`checked`: `checked-parameters`)."""
    if inner != "inductor" and not frozen:
        return pipeline

    def for_inductor(pass_: Any) -> Any:
        if (
            inner == "inductor"
            and getattr(pass_, "name", None) in ("batch-fusion", "lower-batch", "reinplace", "write-into-join")
            and getattr(pass_, "target", None) == "eager"
        ):
            pass_ = dataclasses.replace(pass_, target="inductor")
        if frozen and getattr(pass_, "name", None) == "batch-fusion" and not pass_.constant_parameters:
            pass_ = dataclasses.replace(pass_, constant_parameters=True, checked_parameters=checked)
        return pass_

    return pipeline.replacing(for_inductor)


def pipeline_for_target(pipeline: str | None, inner: str, frozen: bool = False) -> str | None:
    """`passes_for_target` of a pipeline text (None: the default pipeline),
    as text: the text given where no pass changes."""
    if inner != "inductor":
        return pipeline
    from optimus_ir.options import OptimizeOptions

    resolved = OptimizeOptions(pipeline=pipeline).resolve().pipeline
    for_target = passes_for_target(resolved, inner, frozen)
    return pipeline if for_target is resolved else for_target.text


@dataclass
class OptimusBackend:
    """A Dynamo backend with fixed options (what `optimus_ir.backend(...)`
    returns): `torch.compile(model, backend=optimus_ir.backend(...))`."""

    options: OptimizeOptions = field(default_factory=OptimizeOptions)
    outcomes: list[GraphOutcome] = field(default_factory=list)
    """Every graph this backend was handed, in order, and what it did."""

    def __repr__(self) -> str:
        # what Dynamo prints in its errors: the options, not the outcomes
        return f"optimus_ir.backend({self.options.describe()})"

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **ignored: Any) -> Callable[..., Any]:
        # Inductor traces the module with fake tensors (the cache would only
        # compute its values inline) and folds constants itself; with
        # Dynamo's default of lifting parameters to graph inputs there are no
        # parameter-only values to cache anyway.
        eager = self.options.inner == "eager"
        from torch._inductor import config

        # Inductor freezes the parameters where the user asked for it
        # (`freeze=True`) or configured it (`config.freezing` under no_grad,
        # which also makes Dynamo hand them over as attributes).
        freezing = not eager and (self.options.freeze or (config.freezing and not torch.is_grad_enabled()))
        kept: list[int] | None = None
        if freezing and self.options.freeze:
            gm, kept = parameters_as_attributes(gm, example_inputs)
            example_inputs = [example_inputs[i] for i in kept]
        optimized, outcome = optimize_dynamo_graph(
            gm,
            example_inputs,
            self.options,
            cache_parameters=eager,
            frozen=freezing,
            free_parameter_stacks=freezing or (self.options.parameter_stacks == "shared"),
        )
        self.outcomes.append(outcome)
        if (
            not eager
            and outcome.optimized
            and not outcome.fusions
            and not outcome.rewrites
            and outcome.ops_after == outcome.ops_before
        ):
            # Nothing changed: Inductor gets Dynamo's own graph, so the code
            # it generates is exactly Inductor alone's.
            optimized = gm
            outcome.unchanged = True

        stacks = self._share_stacks(optimized, example_inputs, outcome, freezing)
        if stacks:
            example_inputs = [*example_inputs, *stacks.example_values(example_inputs)]
        if eager:
            if stacks:
                stacks.home()
                return stacks.wrap(optimized.forward)
            return optimized.forward
        compile_fx = inductor_compile_fx()
        if outcome.optimized and not outcome.unchanged:
            from optimus_ir.inductor_handoff import make_wide_input_stacks_opaque

            # Dynamo guards on grad mode: a graph compiled with it off only
            # runs with it off, and needs no autograd of its stacks.
            outcome.opaque_stacks = make_wide_input_stacks_opaque(optimized, inference=not torch.is_grad_enabled())
        # Inductor pickles the module into its FX graph cache key; the
        # report is ours (kept in `outcomes`), not part of the graph.
        report = optimized.__dict__.pop("optimus_report", None)
        try:
            # freeze=False leaves a freezing the user configured alone
            with config.patch(freezing=True) if self.options.freeze else contextlib.nullcontext():
                compiled = compile_fx(optimized, list(example_inputs))
        finally:
            if report is not None:
                optimized.optimus_report = report  # type: ignore[attr-defined]
        if stacks:
            stacks.home()  # after the compiler: it checks its inputs against what Dynamo saw
            return stacks.wrap(compiled)
        if kept is None:
            return compiled
        return _dropping_frozen_inputs(compiled, kept)

    def _share_stacks(
        self, optimized: torch.fx.GraphModule, example_inputs: Sequence[Any], outcome: GraphOutcome, freezing: bool
    ) -> Any:
        """With `parameter_stacks="shared"` (and no freezing): the stacks of
        parameter inputs of fused groups made extra graph inputs, their
        parameters re-homed (`shared_stacks.stacks_as_inputs`); None else."""
        if self.options.parameter_stacks != "shared" or freezing or not outcome.optimized or outcome.unchanged:
            return None
        from optimus_ir.api.shared_stacks import stacks_as_inputs

        stacks = stacks_as_inputs(optimized, example_inputs)
        if outcome.report is not None:
            outcome.report.shared_parameter_stacks = len(stacks)
        return stacks or None


SCRIPT_METHOD_DEPRECATION = r"`torch\.jit\.script_method` is (deprecated|not supported)"
"""The message of torch's own DeprecationWarning that importing Inductor's
`compile_fx` gives (torch 2.13), filtered where we import it."""


def inductor_compile_fx() -> Callable[..., Any]:
    """Inductor's `compile_fx`. The first import of it imports
    `torch.utils.mkldnn` (through Inductor's pre-grad passes and
    `torch.fx.experimental.optimization`), whose classes decorate a dozen
    methods with `torch.jit.script_method`, which torch 2.13 deprecates: a
    DeprecationWarning per method, about torch's own code and nothing the
    user can change, shown wherever DeprecationWarnings are (tests, `-W
    default`). Importing it is unavoidable for compiling with Inductor, so
    those warnings alone are filtered while we import it (once a module is
    imported, its decorators never run again)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=SCRIPT_METHOD_DEPRECATION, category=DeprecationWarning)
        from torch._inductor.compile_fx import compile_fx
    return compile_fx


def _is_frozen_input(node: torch.fx.Node, value: Any) -> bool:
    """A graph input Dynamo lifted from the module: a parameter, or a
    tensor Dynamo marked static (a buffer)."""
    if isinstance(value, torch.nn.Parameter):
        return True
    tensor_dict = node.meta.get("tensor_dict") or {}
    return bool(tensor_dict.get("_dynamo_static_input_type")) and isinstance(value, torch.Tensor)


def parameters_as_attributes(
    gm: torch.fx.GraphModule, example_inputs: Sequence[Any]
) -> tuple[torch.fx.GraphModule, list[int]]:
    """For `freeze=True` under Inductor: a copy of `gm` in which the
    parameters (and static buffers) Dynamo lifted to graph inputs are
    attributes again, so that Inductor's freezing folds them -- and every
    stack of them our lowering made -- into constants; and the positions
    of the inputs kept. `gm` itself is left as it is (Dynamo keeps it)."""
    placeholders = list(gm.graph.find_nodes(op="placeholder"))
    if len(placeholders) != len(example_inputs):
        return gm, list(range(len(example_inputs)))
    frozen = [i for i, (node, value) in enumerate(zip(placeholders, example_inputs)) if _is_frozen_input(node, value)]
    if not frozen:
        return gm, list(range(len(example_inputs)))
    graph = copy_graph(gm.graph)
    root = torch.nn.Module()
    new_placeholders = list(graph.find_nodes(op="placeholder"))
    for i in frozen:
        node, value = new_placeholders[i], example_inputs[i]
        name = f"_optimus_frozen_{i}"
        if isinstance(value, torch.nn.Parameter):
            root.register_parameter(name, value)
        else:
            root.register_buffer(name, value)
        with graph.inserting_before(node):
            attribute = graph.get_attr(name)
        attribute.meta = dict(node.meta)
        node.replace_all_uses_with(attribute)
        graph.erase_node(node)
    result = torch.fx.GraphModule(root, graph, gm.__class__.__name__)
    result.meta.update({k: v for k, v in gm.meta.items() if k != "dynamo_compile_id"})
    frozen_set = set(frozen)
    return result, [i for i in range(len(example_inputs)) if i not in frozen_set]


def _dropping_frozen_inputs(compiled: Callable[..., Any], kept: Sequence[int]) -> Callable[..., Any]:
    """`compiled`, called with the inputs Dynamo passes (parameters
    included) and handed only the ones it still takes."""

    def run(*args: Any) -> Any:
        return compiled(*[args[i] for i in kept])

    return run


def backend(options: OptimizeOptions | None = None, **keywords: Any) -> OptimusBackend:
    """A torch.compile backend with these options (`OptimizeOptions`, or its
    fields as keywords): `torch.compile(model,
    backend=optimus_ir.backend(remarks=True))`. Bad options raise here,
    before anything is compiled."""
    return OptimusBackend(_options_of(options, keywords, "backend"))


def _options_of(
    options: OptimizeOptions | Mapping[str, Any] | None, keywords: Mapping[str, Any], entry: Any
) -> OptimizeOptions:
    """The `OptimizeOptions` of an entry point called with `options=` (an
    instance, or a dict of its fields) and/or keywords: a dict's entries
    override the keywords; an instance and keywords together raise."""
    if isinstance(options, OptimizeOptions):
        if keywords:
            raise TypeError(
                f"optimus: give options=OptimizeOptions(...) or keyword options, not both "
                f"(got {', '.join(map(repr, sorted(keywords)))} too)"
            )
        options.check_entry(entry)
        return options
    if options is not None and not isinstance(options, Mapping):
        raise TypeError(f"optimus: options must be an OptimizeOptions or a dict, not {type(options).__name__}")
    return OptimizeOptions.from_mapping({**keywords, **dict(options or {})}, entry)


def optimus_backend(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    *,
    options: Mapping[str, Any] | OptimizeOptions | None = None,
    **keywords: Any,
) -> Callable[..., Any]:
    """The registered backend (`backend="optimus"`): optimize `gm`, then
    compile it with the inner compiler. torch.compile hands
    `options={...}` over as one keyword; its entries override keywords."""
    return OptimusBackend(_options_of(options, keywords, "backend"))(gm, example_inputs)


class _BackendModule(types.ModuleType):
    """This module, callable: `optimus_ir.backend(...)` is `backend(...)`,
    while `from optimus_ir.backend import OptimusFallbackWarning` and the
    entry point `optimus_ir.backend:optimus_backend` keep working."""

    def __call__(self, options: OptimizeOptions | None = None, **keywords: Any) -> OptimusBackend:
        return backend(options, **keywords)


sys.modules[__name__].__class__ = _BackendModule

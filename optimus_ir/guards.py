"""Call-time guards of `optimize()`'s result: it runs only on inputs like
the ones it was specialized for.

`optimize` captures the model with Dynamo at static shapes and drops
Dynamo's guards, so the optimized graph has baked in everything the
capture saw: the shapes, dtypes and devices of the tensor inputs, and the
value *and Python type* of every other argument (`2`, `2.0` and `True` are
three different specializations; `-0.0` is not `0.0`; NaN is NaN).
`install_guard` puts a check of all of these at the top of the module's
generated `forward` (one generated Python function, no loop, no
allocation: about a microsecond for a few inputs, see
`benchmarks/bench_guards.py`). Strides are checked where the graph depends
on them by the exporter's own stride guard (`export_graph(fallback=...)`).

On a mismatch (`InputGuard.miss`), in this order:

1. **batch-generic graph**: when the inputs differ from the example only in
   the leading (batch) size of the tensor inputs that had the example's
   batch size, the guard proves once that neither the model nor the
   optimized graph depends on that size (`_batch_generic`), and from then
   on checks every size but the batch size (which must be the same for
   those inputs and at least 2: Dynamo specializes 0 and 1). The proof has
   two halves, both done by PyTorch's own symbolic-shape machinery:

   * the *model*: Dynamo captures it again with the batch size dynamic
     (one `torch.export.Dim` shared by those inputs, `min=2`). Any Python
     decision on the size (`if x.shape[0] > 8`) becomes a guard on it,
     which Dynamo reports as a violated constraint; and any use of the
     size as a value (`x.view(x.shape[0], ...)`, `x * x.shape[0]`) is a
     SymInt node in the graph, which the static capture baked in as a
     number. Either makes the graph batch-specific;
   * the *optimized graph* (as the pipeline left it, before the parameter
     cache): it runs once on fake tensors whose batch size is a symbol.
     A size the passes baked in (a view, split, expand or stack to the
     example's batch size) then puts a guard on the symbol or replaces it
     by a number; the outputs must have the sizes, as expressions of the
     symbol, of the dynamic capture's outputs.

   Together: the model computes one program for every batch size >= 2, the
   static graph is that program, and the optimized graph is valid at any
   batch size. (The passes put sizes into shape arguments only, which the
   symbolic run sees; none turns a size into a scalar operand.) This costs
   about one capture (the symbolic run adds about a second on a 64-tower
   model), once; a graph that fails it is re-optimized per batch size as
   below.
2. **re-optimize**: the model is optimized again for the new inputs, with
   the same options, and the result is kept (up to `MAX_SPECIALIZATIONS`
   input signatures, as Dynamo recompiles up to its limit); each is logged
   at INFO on the `optimus_ir.guards` logger. Not done when the graph has
   side effects (capturing runs the model: its writes would happen twice).
3. **fall back** to the original model (kept by reference, never changed)
   once the cache is full, the graph has side effects, or the new inputs
   cannot be captured: reported once, with `OptimusGuardWarning`.

`InputGuard.reoptimizations` counts the re-optimizations and
`InputGuard.batch_generic` says what the batch proof found (None: not tried
yet); the guard is the module's `optimus_guard` attribute.

Not guarded (as with `torch.export`): Python attributes of the model that
`forward` reads, global state such as grad mode, and objects of other
types than tensors, numbers, strings, None, dtypes/devices and tuples,
lists and dicts of these, which are compared by identity. A module restored
by unpickling is re-traced without its guards (as without its stride check).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import math
import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import torch
import torch.fx
from torch.utils import _pytree as pytree

from optimus_ir.model_state import CaptureError, ModuleState

log = logging.getLogger("optimus_ir.guards")

GUARD_ATTRIBUTE = "optimus_guard"
"""Where the guarded GraphModule keeps its `InputGuard` (in `__dict__`)."""

OWN_GRAPH = "own graph"
"""`uncached_graph` of a guard whose module's own graph is the one the
batch proof runs (nothing was frozen in it): the proof reads the module's
graph when it runs, without mutating it, so no copy of a graph of 100k
nodes is made or kept (and a copy of the module proves with its own)."""

MAX_SPECIALIZATIONS = 8
"""How many other input signatures a guarded module re-optimizes for before
it runs the original model for the rest."""


class OptimusGuardWarning(UserWarning):
    """An optimized module runs the original model (unoptimized) for inputs
    it was not specialized for."""


_SCALAR_TYPES = (bool, int, str, bytes, complex, type(None))
_VALUE_TYPES = (torch.dtype, torch.device, torch.layout, torch.memory_format)


def signature(value: Any) -> Hashable:
    """What a specialized graph may depend on in `value`: shape, dtype,
    device and type of a tensor; type and value of anything else (a float
    by its exact bits, so that -0.0 and NaN are told apart); containers
    element-wise; any other object by identity."""
    if isinstance(value, torch.Tensor):
        return ("tensor", type(value), tuple(value.shape), value.dtype, value.device)
    kind = type(value)
    if kind is float:
        return (float, value.hex())
    if kind in _SCALAR_TYPES or isinstance(value, _VALUE_TYPES):
        return (kind, value)
    if kind in (tuple, list):
        return (kind, tuple(signature(item) for item in value))
    if kind is dict:
        return (kind, tuple((key, signature(item)) for key, item in value.items()))
    return ("object", id(value))


class _Source:
    """Builds the source of a check function and the globals it names."""

    def __init__(self) -> None:
        self.globals: dict[str, Any] = {"_copysign": math.copysign, "_signature": signature}

    def constant(self, value: Any) -> str:
        name = f"_c{len(self.globals)}"
        self.globals[name] = value
        return name

    def condition(self, name: str, example: Any, sig: Hashable, batch: bool) -> list[str]:
        """The conditions under which argument `name` matches `example`
        (whose `signature` is `sig`); `batch`: a batch tensor, whose
        leading size is checked by the caller."""
        if isinstance(sig, tuple) and sig[:1] == ("tensor",):
            _, kind, shape, dtype, device = sig
            parts = [f"type({name}) is {self.constant(kind)}"]
            if not batch:
                parts.append(f"{name}.shape == {self.constant(shape)}")
            else:
                parts.append(f"{name}.shape[1:] == {self.constant(shape[1:])}")
            parts.append(f"{name}.dtype is {self.constant(dtype)}")
            parts.append(f"{name}.device == {self.constant(device)}")
            return parts
        kind = type(example)
        if example is None or kind is bool:
            return [f"{name} is {example!r}"]
        if kind is float:
            if math.isnan(example):
                return [f"type({name}) is float", f"{name} != {name}"]
            value = f"{name} == {self.constant(example)}"
            if example == 0.0:  # the sign of zero is observable (1 / x)
                return [f"type({name}) is float", value,
                        f"_copysign(1.0, {name}) == {math.copysign(1.0, example)!r}"]
            return [f"type({name}) is float", value]
        if kind in _SCALAR_TYPES or isinstance(example, _VALUE_TYPES):
            return [f"type({name}) is {self.constant(kind)}", f"{name} == {self.constant(example)}"]
        if sig[:1] == ("object",):
            return [f"{name} is {self.constant(example)}"]
        return [f"_signature({name}) == {self.constant(sig)}"]


def _is_proxy(value: Any) -> bool:
    return isinstance(value, torch.fx.Proxy)


def _slow_path(*values: Any) -> bool | None:
    """What the check returns when the fast conditions fail: False, or None
    while FX traces the module (unpickling re-traces the code with proxies,
    and the guard must stay out of the traced graph)."""
    return None if any(map(_is_proxy, values)) else False


class InputGuard:
    """The call-time guard of one optimized module (see the module
    docstring). `check(*arguments)` is a generated function: True when the
    arguments (the module's `forward` parameters, in order) are ones the
    module was specialized for; `miss(module, *arguments)` computes the
    result of a call that failed the check."""

    def __init__(
        self,
        model: Callable[..., Any],
        reoptimize: Callable[[Sequence[Any], Mapping[str, Any]], Callable[..., Any]] | None,
        parameters: Sequence[str],
        example: Sequence[Any],
        call_structure: Any,
        uncached_graph: torch.fx.Graph | str | None,
        side_effect_free: bool,
    ) -> None:
        self.model = model
        """The original model, by reference."""
        self.reoptimize = reoptimize
        """`optimize` with the same options, for other inputs (None: never)."""
        self.parameters = tuple(parameters)
        self.signatures = tuple(signature(v) for v in example)
        # constants of the check for non-tensor arguments (not the example
        # tensors: the guard must not keep them alive)
        self._constants = tuple(None if isinstance(v, torch.Tensor) else v for v in example)
        self.call_structure = call_structure
        """The pytree spec of `(args, kwargs)` of the example call (None: the
        arguments are passed positionally), to call the model like the user."""
        self.uncached_graph = uncached_graph
        """The graph the batch proof runs: the pipeline's, before `freeze`
        replaced values (`OWN_GRAPH`: the module's own; None: no proof)."""
        self.side_effect_free = side_effect_free
        self.batch_size, self.batch_arguments = _batch_of(self.signatures)
        self.batch_generic: bool | None = None
        """Whether the module was proven to work at any batch size >= 2
        (None: not tried yet; tried at the first call at another batch size)."""
        self.reoptimizations = 0
        """How many times the model was optimized again for other inputs."""
        self.specializations: dict[Hashable, Callable[..., Any]] = {}
        """Input signature -> what runs for it (a re-optimized module, or the model)."""
        self.fell_back = False
        """Whether the original model ran for some inputs (warned once)."""
        self.check = self._make_check(batch_generic=False)

    # -- the check -----------------------------------------------------------

    def _make_check(self, *, batch_generic: bool) -> Callable[..., bool | None]:
        source = _Source()
        source.globals["_slow_path"] = _slow_path
        arguments = [f"a{i}" for i in range(len(self.parameters))]
        conditions: list[str] = []
        first = min(self.batch_arguments) if self.batch_arguments else None
        for i, (name, sig, constant) in enumerate(zip(arguments, self.signatures, self._constants)):
            batch = batch_generic and i in self.batch_arguments
            parts = source.condition(name, constant, sig, batch)
            if batch:
                # after the type check: the rank, then the first batch tensor's
                # batch size is >= 2 and the others' equal it
                size = "0" if i == first else f"{arguments[first]}.shape[0]"
                parts[1:1] = [
                    f"len({name}.shape) == {len(sig[2])}",
                    f"{name}.shape[0] >= 2" if i == first else f"{name}.shape[0] == {size}",
                ]
            conditions.extend(parts)
        conditions = conditions or ["True"]
        body = " and ".join(conditions)
        text = (
            f"def check({', '.join(arguments)}):\n"
            f"    if {body}:\n"
            f"        return True\n"
            f"    return _slow_path({', '.join(arguments)})\n"
        )
        namespace = dict(source.globals)
        exec(compile(text, "<optimus guard>", "exec"), namespace)  # noqa: S102 - our own generated code
        check = namespace["check"]
        check.source = text  # type: ignore[attr-defined]
        return check

    @property
    def source(self) -> str:
        """The generated check (for people)."""
        return self.check.source  # type: ignore[attr-defined]

    # -- a call that failed the check ---------------------------------------

    def miss(self, module: torch.nn.Module, *arguments: Any) -> Any:
        """The result of a call of `module` whose arguments failed the check."""
        args, kwargs = self._call(arguments)
        key = tuple(map(signature, arguments))
        known = self.specializations.get(key)
        if known is not None:
            return known(*args, **kwargs)
        if self.batch_generic is None and self._batch_only(key):
            self.batch_generic = self._prove_batch_generic(module, arguments, args, kwargs)
            if self.batch_generic:
                self.check = self._make_check(batch_generic=True)
                log.info("optimus: the optimized graph works at any batch size >= 2")
        if self.batch_generic and self.check(*arguments):
            return module(*args, **kwargs)
        return self._specialize(key, arguments)(*args, **kwargs)

    def _call(self, arguments: Sequence[Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """`(args, kwargs)` to call the model with, from `forward`'s arguments."""
        if self.call_structure is None:
            return tuple(arguments), {}
        args, kwargs = pytree.tree_unflatten(list(arguments), self.call_structure)
        return tuple(args), dict(kwargs)

    def _specialize(self, key: Hashable, arguments: Sequence[Any]) -> Callable[..., Any]:
        """What runs for input signature `key` from now on: a module
        optimized for it, or the original model (warned once)."""
        runner: Callable[..., Any] = self.model
        why = None
        if self.reoptimize is None or not self.side_effect_free:
            why = "its graph has side effects (capturing it again would repeat them)"
        elif len(self.specializations) >= MAX_SPECIALIZATIONS:
            why = f"it was optimized for {MAX_SPECIALIZATIONS} other input signatures already"
        else:
            args, kwargs = self._call(arguments)
            try:
                runner = self.reoptimize(args, kwargs)
            except CaptureError as error:
                why = f"they cannot be captured ({(str(error).splitlines() or [''])[0]})"
            else:
                self.reoptimizations += 1
                log.info(
                    "optimus: re-optimized for new inputs (%d of at most %d): %s",
                    self.reoptimizations, MAX_SPECIALIZATIONS, self.describe_difference(key),
                )
        if why is not None:
            if not self.fell_back:
                warnings.warn(
                    "optimus: the optimized module was called with inputs it was not specialized "
                    f"for ({self.describe_difference(key)}) and runs the original model for them, "
                    f"unoptimized, because {why}",
                    OptimusGuardWarning,
                    stacklevel=4,
                )
            self.fell_back = True
            if len(self.specializations) >= MAX_SPECIALIZATIONS:
                return runner  # the cache stays bounded
        self.specializations[key] = runner
        return runner

    def describe_difference(self, key: Sequence[Hashable]) -> str:
        """The arguments whose signature differs from the example's."""
        changes = [
            f"{name}: {_describe(new)} instead of {_describe(old)}"
            for name, old, new in zip(self.parameters, self.signatures, key)
            if old != new
        ]
        return "; ".join(changes) or "same signature"

    # -- batch-generic proof ---------------------------------------------------

    def _batch_only(self, key: Sequence[Hashable]) -> bool:
        """Whether the call differs from the example only in the batch size
        (the same one, >= 2, for every batch tensor)."""
        if not self.batch_arguments or len(key) != len(self.signatures):
            return False
        sizes = set()
        for i, (old, new) in enumerate(zip(self.signatures, key)):
            if i not in self.batch_arguments:
                if old != new:
                    return False
                continue
            if not (isinstance(new, tuple) and new[:1] == ("tensor",)):
                return False
            if new[:2] != old[:2] or new[3:] != old[3:] or len(new[2]) != len(old[2]) or new[2][1:] != old[2][1:]:
                return False
            sizes.add(new[2][0])
        return len(sizes) == 1 and min(sizes) >= 2

    def _prove_batch_generic(
        self, module: torch.nn.Module, arguments: Sequence[Any],
        args: Sequence[Any], kwargs: Mapping[str, Any],
    ) -> bool:
        if self.uncached_graph is None or not self.side_effect_free:
            return False
        try:
            graph = self.uncached_graph
            if isinstance(graph, str):  # OWN_GRAPH
                graph = module.graph if isinstance(module, torch.fx.GraphModule) else None
            if not isinstance(graph, torch.fx.Graph):
                return False
            return _batch_generic(self.model, module, graph, arguments, args, kwargs, self.batch_arguments)
        except Exception as error:  # noqa: BLE001 - unproven is a safe answer
            log.info("optimus: batch-size proof failed: %s: %s", type(error).__name__, error)
            return False

    # -- copies ----------------------------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["check"] = None  # generated code: made again
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.check = self._make_check(batch_generic=bool(self.batch_generic))


def _describe(sig: Hashable) -> str:
    if isinstance(sig, tuple) and sig[:1] == ("tensor",):
        _, kind, shape, dtype, device = sig
        name = "tensor" if kind is torch.Tensor else kind.__name__
        return f"{name} {list(shape)} {str(dtype).removeprefix('torch.')} on {device}"
    if isinstance(sig, tuple) and len(sig) == 2 and sig[0] is float:
        return f"float {float.fromhex(sig[1])!r}"
    if isinstance(sig, tuple) and len(sig) == 2 and isinstance(sig[0], type) and sig[0] not in (tuple, list, dict):
        return f"{sig[0].__name__} {sig[1]!r}"
    if isinstance(sig, tuple) and sig[:1] == ("object",):
        return "another object"
    return repr(sig)


def _batch_of(signatures: Sequence[Hashable]) -> tuple[int | None, frozenset[int]]:
    """The example's batch size (the leading size of the first tensor
    argument with at least one dimension) and the arguments that have it."""
    tensors = [
        (i, sig[2]) for i, sig in enumerate(signatures)
        if isinstance(sig, tuple) and sig[:1] == ("tensor",) and len(sig[2]) >= 1
    ]
    if not tensors:
        return None, frozenset()
    batch = tensors[0][1][0]
    return batch, frozenset(i for i, shape in tensors if shape[0] == batch)


@contextlib.contextmanager
def _quiet(*names: str) -> Any:
    """Silence loggers that report an expected failure as an error."""
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _batch_generic(
    model: Callable[..., Any],
    module: torch.nn.Module,
    graph: torch.fx.Graph,
    arguments: Sequence[Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    batch_arguments: frozenset[int],
) -> bool:
    """The proof of the module docstring: the model captured with the batch
    size dynamic neither guards on it nor uses it as a value, and `graph`
    (the optimized graph before `freeze` replaced values, run with `module`'s
    attributes) runs on a symbolic batch size without a guard on it and
    returns the sizes the model's graph returns."""
    import sympy
    from torch._dispatch.python import enable_python_dispatcher
    from torch._dynamo.source import ConstantSource
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.export import Dim
    from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv

    batch_tensors = [arguments[i] for i in sorted(batch_arguments)]
    if not all(t.is_contiguous() for t in batch_tensors):
        return False  # a batch-sized stride would be one more thing to prove
    # 1. the model, captured with a dynamic batch size
    function = model.forward if isinstance(model, torch.nn.Module) else model
    batch_ids = {id(t) for t in batch_tensors}
    dim = Dim("batch", min=2)
    bound = inspect.signature(function).bind(*args, **kwargs)
    dynamic_shapes = {
        name: pytree.tree_map(lambda leaf: {0: dim} if id(leaf) in batch_ids else None, value)
        for name, value in bound.arguments.items()
    }
    # as `api.capture` does: undo the attribute rebindings Dynamo replays
    state = ModuleState(model) if isinstance(model, torch.nn.Module) else None
    with _quiet("torch._guards", "torch._dynamo", "torch.fx.experimental.symbolic_shapes"):
        try:
            captured, _ = torch._dynamo.export(  # noqa: SLF001
                model, dynamic_shapes=dynamic_shapes, assume_static_by_default=True
            )(*args, **kwargs)
        except Exception:  # noqa: BLE001 - a violated constraint: batch-specific
            return False
        finally:
            if state is not None:
                state.restore()
    expected = []
    for node in captured.graph.nodes:
        value = node.meta.get("example_value", node.meta.get("val"))
        if isinstance(value, torch.SymInt | torch.SymFloat | torch.SymBool):
            return False  # the size is used as a value: baked into the static graph
        if node.op == "output":
            for leaf in pytree.tree_leaves(node.args):
                if isinstance(leaf, torch.fx.Node):
                    out = leaf.meta.get("example_value", leaf.meta.get("val"))
                    expected.append(out.shape if isinstance(out, torch.Tensor) else out)
    # 2. the optimized graph, run on a symbolic batch size
    env = ShapeEnv()
    mode = FakeTensorMode(shape_env=env, allow_non_fake_inputs=True)
    hint = batch_tensors[0].shape[0]
    symbol = env.create_symbol(hint, source=ConstantSource("batch"), dynamic_dim=DimDynamic.DYNAMIC)
    size = env.create_symintnode(symbol, hint=hint)
    range_before = env.var_to_range[symbol]
    flat: list[Any] = []
    with mode:
        for i, value in enumerate(arguments):
            if i in batch_arguments:
                flat.append(torch.empty((size, *value.shape[1:]), dtype=value.dtype, device=value.device))
                continue
            for leaf in pytree.tree_leaves(value):
                flat.append(mode.from_tensor(leaf, static_shapes=True) if isinstance(leaf, torch.Tensor) else leaf)
    with mode, enable_python_dispatcher(), _quiet("torch._subclasses.fake_tensor"):
        results = torch.fx.Interpreter(module, graph=graph).run(*flat)
    if symbol in env.replacements or env.var_to_range[symbol] != range_before:
        return False
    if any(symbol in guard.expr.free_symbols for guard in env.guards):
        return False
    produced = [r.shape if isinstance(r, torch.Tensor) else r for r in pytree.tree_leaves(results)]
    if len(produced) != len(expected):
        return False
    common = sympy.Symbol("batch", positive=True, integer=True)

    def in_common(dim: Any) -> Any:
        expr = dim.node.expr if isinstance(dim, torch.SymInt) else sympy.Integer(dim)
        return expr.subs({s: common for s in expr.free_symbols})

    for got, want in zip(produced, expected):
        if isinstance(got, torch.Size) != isinstance(want, torch.Size):
            return False
        if not isinstance(got, torch.Size):
            continue
        if len(got) != len(want) or any(
            sympy.simplify(in_common(a) - in_common(b)) != 0 for a, b in zip(got, want)
        ):
            return False
    return True


def forward_parameters(gm: torch.fx.GraphModule) -> list[str] | None:
    """The names of `gm.forward`'s parameters (the names its generated code
    binds), or None where one is not a plain name (`*args`)."""
    codegen = gm.graph._codegen  # noqa: SLF001
    info = getattr(codegen, "pytree_info", None)
    if info is not None and getattr(info, "orig_args", None) is not None:
        names = [a for a in info.orig_args if a != "self"]
    else:
        names = [n.target for n in gm.graph.find_nodes(op="placeholder")]
    if not all(isinstance(n, str) and n.isidentifier() for n in names):
        return None
    return names


def preserve_on_copy(gm: torch.fx.GraphModule, name: str, value: Any) -> None:
    """Make `copy.deepcopy(gm)` keep attribute `name` (a GraphModule copy
    keeps only what its graph references, but its generated code reads
    this one): FX restores the attributes listed in this `meta` entry."""
    from torch.fx.graph_module import _USER_PRESERVED_ATTRIBUTES_KEY

    gm.meta.setdefault(_USER_PRESERVED_ATTRIBUTES_KEY, {})[name] = value


def install_guard(
    gm: torch.fx.GraphModule,
    model: Callable[..., Any],
    example_inputs: Sequence[Any],
    example_kwargs: Mapping[str, Any],
    reoptimize: Callable[[Sequence[Any], Mapping[str, Any]], Callable[..., Any]] | None,
    *,
    uncached_graph: torch.fx.Graph | str | None,
    side_effect_free: bool,
) -> InputGuard | None:
    """Make `gm` (optimized for `example_inputs`/`example_kwargs`) check its
    arguments on every call (the module docstring); the guard, also kept as
    `gm.optimus_guard`, or None where the signature of `gm.forward` cannot
    be guarded (then `gm` is left as it is)."""
    from optimus_ir.exporter import fast_codegen, finish_code, recompile

    names = forward_parameters(gm)
    if names is None:
        finish_code(gm)
        warnings.warn(
            "optimus: the optimized module's forward takes variadic arguments, which its "
            "guard cannot check: it is specialized for the example inputs and must only be "
            "called with inputs of the same shapes, dtypes and values",
            OptimusGuardWarning,
            stacklevel=3,
        )
        return None
    call = ", ".join(names)
    source = (
        f"\n    if self.{GUARD_ATTRIBUTE}.check({call}) is False:  # not the inputs this code was specialized for"
        f"\n        return self.{GUARD_ATTRIBUTE}.miss(self, {call})"
    )
    codegen = gm.graph._codegen  # noqa: SLF001
    existing = getattr(codegen, "_guard", None)
    if existing is not None:
        codegen._guard = source + existing  # type: ignore[attr-defined]
    else:
        gm.graph.set_codegen(fast_codegen(codegen, source))
    # The check is in the codegen before the code is made: a module whose
    # code is pending (optimize()'s) gets it generated here, once; one that
    # has code is regenerated. Nothing calls it before the guard is set.
    recompile(gm)
    finish_code(gm)
    bound = inspect.signature(gm.forward).bind(*example_inputs, **example_kwargs)
    bound.apply_defaults()
    example = [bound.arguments[name] for name in names]
    info = getattr(gm.graph._codegen, "pytree_info", None)  # noqa: SLF001
    structure = info.in_spec if info is not None else None
    guard = InputGuard(model, reoptimize, names, example, structure, uncached_graph, side_effect_free)
    gm.__dict__[GUARD_ATTRIBUTE] = guard
    preserve_on_copy(gm, GUARD_ATTRIBUTE, guard)
    return guard


__all__ = [
    "GUARD_ATTRIBUTE",
    "MAX_SPECIALIZATIONS",
    "OWN_GRAPH",
    "InputGuard",
    "OptimusGuardWarning",
    "install_guard",
    "signature",
]

"""Call-time guards of `optimize()`'s result: it runs only on inputs like
the ones it was specialized for, and for any other call does what the model
does.

`optimize` captures the model the way torch.compile does (`dynamo_capture`):
Dynamo traces `forward` on the example call and, besides the graph, leaves
its guards -- the check of everything the graph was specialized on, over
the whole input structure (every tensor in a dict, list, dataclass or
jagged tensor: shape, strides, dtype, device, `requires_grad`; the values
and types of Python arguments; dict keys and tuple lengths; the attributes
of the model that `forward` branched on). Those guards are the source of
truth: `install_guard` puts at the top of the module's generated `forward`
a call of Dynamo's own guard manager (C++) on the call's arguments, plus
our rule for grad mode (below). A module made from a `torch.fx.GraphModule`
(not captured by Dynamo) is guarded by the `signature` of each argument.

On a miss (`InputGuard.miss`), in this order:

1. **a specialization made earlier** whose guard accepts the call runs it;
2. **size-generic**: when the call differs from a specialization's example
   only in some sizes of its tensors (same structure, types, dtypes,
   devices, ranks, and those sizes at least 2 in both: Dynamo specializes
   0 and 1, so a graph captured at size 1 may hold a branch taken at 1
   only), the guard proves once that neither the model nor the optimized
   graph depends on those sizes (`_prove_sizes`):

   * the *model*: Dynamo captures it again with those sizes dynamic
     (`torch._dynamo.mark_dynamic`, min 2). A Python decision on one of them
     (`if x.shape[0] > 8`) is a constraint violation, and any use of one as a
     value (`x.view(x.shape[0], ...)`) is a node computing a symbolic number,
     which the static capture baked in: either makes the graph size-specific;
   * the *optimized graph* (as the pipeline left it, before `freeze`
     replaced values) runs once on the dynamic capture's fake tensors: a size
     the passes baked in guards on or replaces a symbol, and the outputs
     must have the dynamic capture's output sizes.

   Then the same module serves every call the dynamic capture's guards
   accept (Dynamo's symbolic guards: those sizes >= 2, equal where the
   model needs them equal). About one capture and a symbolic run, once;
3. **re-optimize**: the model is optimized again for the call (captured
   anew, so with its own guards), kept, up to `MAX_SPECIALIZATIONS` (as
   Dynamo's recompile limit); logged at INFO on `optimus_ir.api.guards`. A
   graph with side effects (a batch norm's running statistics in
   training) is no exception: capturing does not run the graph
   (`dynamo_capture`), so its writes happen once, in the call;
4. **fall back** to the original model (kept by reference, never changed)
   once the cache is full or the call cannot be captured: reported once,
   with `OptimusGuardWarning`.

A call with arguments or keywords the example did not pass is no special
case: the module's `forward` has the model's signature (defaults, `*args`,
`**kwargs`), Dynamo's guards see the value of every parameter, and a call
they reject goes down the list above.

Grad mode: a specialization made with grad enabled also serves calls under
`no_grad` (what it computes is the same; Dynamo's ambient global-state guard,
which also covers thread count and autocast, is left out), but one made
under `no_grad` does not serve calls with grad enabled (its passes may have
relied on nothing requiring grad). A `forward` that branches on
`torch.is_grad_enabled()` itself is not told apart.

Not guarded: the model's parameters and buffers (read at call time), the
structure of its submodules and hooks added after `optimize`, global state
other than grad mode. A module restored by unpickling is re-traced without
its guards (as without its stride check).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import math
import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from torch.utils import _pytree as pytree

from optimus_ir.translate.calling import ModelCall, ModelCallCodeGen
from optimus_ir.translate.model_state import CaptureError

log = logging.getLogger("optimus_ir.api.guards")

GUARD_ATTRIBUTE = "optimus_guard"
"""Where the guarded GraphModule keeps its `InputGuard` (in `__dict__`)."""

CAPTURE_GUARD_ATTRIBUTE = "_optimus_capture_guard"
"""Where a module `optimize` made (before its guard is installed) keeps the
Dynamo guard of the capture it was made from (`dynamo_capture.CapturedGuard`)."""

UNCACHED_GRAPH_ATTRIBUTE = "_optimus_uncached_graph"
"""Where `api._optimize(keep_uncached_graph=True)` leaves the graph as the
pipeline made it, before `freeze` replaces parameter-only values (for the
size proof)."""

OWN_GRAPH = "own graph"
"""`uncached_graph` of a guard whose module's own graph is the one the
size proof runs (nothing was frozen in it): the proof reads the module's
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
    element-wise; any other object by identity. (What the guard of a module
    made from a GraphModule compares, and what miss reports describe.)"""
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


def leaf_signatures(frame: Mapping[str, Any]) -> tuple[Any, tuple[Hashable, ...], tuple[torch.Tensor | None, ...]]:
    """The pytree structure of a call's arguments, the `signature` of each
    leaf (tensors also by strides and `requires_grad`), and the tensor leaves."""
    leaves, spec = pytree.tree_flatten(dict(frame))
    signatures = []
    tensors: list[torch.Tensor | None] = []
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            signatures.append(
                ("tensor", type(leaf), tuple(leaf.shape), leaf.dtype, leaf.device, leaf.requires_grad, leaf.is_contiguous())
            )
            tensors.append(leaf)
        else:
            signatures.append(signature(leaf))
            tensors.append(None)
    return spec, tuple(signatures), tuple(tensors)


@dataclass(frozen=True, eq=False)
class _TensorLike:
    """What a guard sees of an example tensor (not the tensor: a guard keeps
    no example alive)."""

    kind: type
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: torch.dtype
    device: torch.device
    requires_grad: bool

    def make(self) -> torch.Tensor:
        made = torch.empty_strided(self.shape, self.stride, dtype=self.dtype, device=self.device)
        if self.kind is torch.nn.Parameter:
            return torch.nn.Parameter(made, requires_grad=self.requires_grad)
        return made.requires_grad_(self.requires_grad) if made.is_floating_point() or made.is_complex() else made


@dataclass(frozen=True, eq=False)
class ExampleFrame:
    """The arguments of the call a specialization was made for, as its guard
    sees them: pytree structure, leaf signatures, and the leaves (tensors as
    `_TensorLike`, other values as they are)."""

    spec: Any
    signatures: tuple[Hashable, ...]
    leaves: tuple[Any, ...]

    @classmethod
    def of(cls, frame: Mapping[str, Any]) -> ExampleFrame:
        spec, signatures, tensors = leaf_signatures(frame)
        leaves = pytree.tree_leaves(dict(frame))
        kept = tuple(
            _TensorLike(type(t), tuple(t.shape), tuple(t.stride()), t.dtype, t.device, t.requires_grad)
            if t is not None else leaf
            for t, leaf in zip(tensors, leaves)
        )
        return cls(spec, signatures, kept)

    def stand_in(self) -> dict[str, Any]:
        """A frame like the example's (tensors freshly allocated, uninitialized)."""
        return pytree.tree_unflatten([v.make() if isinstance(v, _TensorLike) else v for v in self.leaves], self.spec)


def _describe(sig: Hashable) -> str:
    if isinstance(sig, tuple) and sig[:1] == ("tensor",):
        kind, shape, dtype, device = sig[1], sig[2], sig[3], sig[4]
        name = "tensor" if kind is torch.Tensor else kind.__name__
        text = f"{name} {list(shape)} {str(dtype).removeprefix('torch.')} on {device}"
        if len(sig) > 5:
            text += ", requires grad" if sig[5] else ""
            text += "" if sig[6] else ", not contiguous"
        return text
    if isinstance(sig, tuple) and len(sig) == 2 and sig[0] is float:
        return f"float {float.fromhex(sig[1])!r}"
    if isinstance(sig, tuple) and len(sig) == 2 and isinstance(sig[0], type) and sig[0] not in (tuple, list, dict):
        return f"{sig[0].__name__} {sig[1]!r}"
    if isinstance(sig, tuple) and sig[:1] == ("object",):
        return "another object"
    return repr(sig)


def _slow_path(*values: Any) -> bool | None:
    """What the check returns when the fast conditions fail: False, or None
    while FX traces the module (unpickling re-traces the code with proxies,
    and the guard must stay out of the traced graph)."""
    return None if any(isinstance(v, torch.fx.Proxy) for v in values) else False


class SignatureGuard:
    """The guard of a module made from a GraphModule (no Dynamo capture):
    each argument's `signature` equals the example's."""

    def __init__(self, names: Sequence[str], example: Sequence[Any]) -> None:
        self.names = tuple(names)
        self.signatures = tuple(signature(v) for v in example)

    def check(self, frame: Mapping[str, Any]) -> bool:
        return tuple(signature(frame.get(name)) for name in self.names) == self.signatures


@dataclass(eq=False)
class Specialization:
    """What runs for the calls one guard accepts."""

    guard: Any
    """`check(frame) -> bool` on the frame of a call: a Dynamo guard
    (`dynamo_capture.CapturedGuard`) or a `SignatureGuard`."""
    runner: Callable[..., Any]
    """The optimized module (without a guard of its own) or the model."""
    grad_enabled: bool = True
    """Grad mode when it was made: made under no_grad, it serves only calls under no_grad."""
    example: ExampleFrame | None = None
    """The arguments of the call it was made for (None: not a base for the size proof)."""
    proof_graph: torch.fx.Graph | str | None = None
    """The graph the size proof runs (`OWN_GRAPH`: the runner's own)."""
    generalized: bool | None = None
    """Whether a size proof succeeded from this one (None: not tried)."""
    proofs_tried: set[frozenset[tuple[int, int]]] = field(default_factory=set)
    """The sets of (leaf, dim) a size proof was tried for from this one:
    each once (batch sizes proven after the lengths of jagged values, ...)."""
    reason: str = ""
    """For the model: why it runs."""
    zero_signs: tuple[tuple[str, float], ...] = ()
    """Float arguments that were a zero, with its sign (`signed_zeros`)."""

    def accepts(self, frame: Mapping[str, Any]) -> bool:
        return (
            (self.grad_enabled or not torch.is_grad_enabled())
            and all(math.copysign(1.0, frame[name]) == sign for name, sign in self.zero_signs)
            and (
                bool(self.guard.check(frame))
                or (torch._C._len_torch_dispatch_stack() > 0 and outside_dispatch_modes(self.guard.check, frame))  # noqa: SLF001
            )
        )


def outside_dispatch_modes(check: Callable[[Mapping[str, Any]], Any], frame: Mapping[str, Any]) -> bool:
    """`check(frame)` with the active `TorchDispatchMode`s set aside: a mode
    (a FLOP counter, a memory tracker, a profiler's) adds the Python
    dispatch key to every tensor as Dynamo's guard sees it, though the
    tensors are the ones the module was made for; the module runs under the
    mode as any code does."""
    from torch.utils._python_dispatch import _disable_current_modes

    with _disable_current_modes():
        return bool(check(frame))


def signed_zeros(frame: Mapping[str, Any]) -> tuple[tuple[str, float], ...]:
    """The float arguments of a call that are a zero, with its sign: Dynamo
    compares floats with `==`, which takes -0.0 for 0.0, yet `1 / x` tells
    them apart, so the guards add the sign."""
    return tuple(
        (name, math.copysign(1.0, value)) for name, value in frame.items() if type(value) is float and value == 0.0
    )


class InputGuard:
    """The call-time guard of one optimized module (module docstring).
    `check(*arguments)` is a generated function: True when the arguments
    (the module's `forward` parameters, in order) are ones the module was
    specialized for; `miss(module, *arguments)` computes the result of a
    call that failed it."""

    def __init__(
        self,
        model: Callable[..., Any],
        reoptimize: Callable[[Sequence[Any], Mapping[str, Any]], Callable[..., Any]] | None,
        parameters: Sequence[str],
        example: Sequence[Any],
        call: ModelCall | None,
        captured: Any,
        uncached_graph: torch.fx.Graph | str | None,
        call_structure: Any = None,
    ) -> None:
        self.model = model
        """The original model, by reference."""
        self.reoptimize = reoptimize
        """`optimize` with the same options, for other inputs (None: never)."""
        self.parameters = tuple(parameters)
        self.call = call
        """The calling convention (None: a GraphModule's plain one)."""
        self.call_structure = call_structure
        """For a GraphModule's pytree convention: the spec of `(args, kwargs)`."""
        self.uncached_graph = uncached_graph
        """The graph the size proof runs: the pipeline's, before `freeze`
        replaced values (`OWN_GRAPH`: the module's own; None: no proof)."""
        frame = dict(zip(self.parameters, example))
        guard = captured if captured is not None else SignatureGuard(self.parameters, example)
        self.primary = Specialization(
            guard, _OWN_MODULE, torch.is_grad_enabled(), ExampleFrame.of(frame) if captured is not None else None,
            uncached_graph, zero_signs=signed_zeros(frame) if captured is not None else (),
        )
        self.specializations: list[Specialization] = []
        """Specializations made after the first (re-optimized modules, size-
        generic ones, and the model itself once the bound is reached)."""
        self.reoptimizations = 0
        """How many times the model was optimized again for other inputs."""
        self.fell_back = False
        """Whether the original model ran for some inputs (warned once)."""
        self.check = self._make_check()

    # -- the check -----------------------------------------------------------

    def modules(self) -> list[torch.nn.Module]:
        """The modules optimized again for other inputs (each once)."""
        found: list[torch.nn.Module] = []
        for spec in self.specializations:
            runner = spec.runner
            if isinstance(runner, torch.nn.Module) and runner is not self.model and all(runner is not m for m in found):
                found.append(runner)
        return found

    @property
    def batch_generic(self) -> bool | None:
        """Whether the size proof succeeded from the module itself (None: not tried)."""
        return self.primary.generalized

    def frame(self, arguments: Sequence[Any]) -> dict[str, Any]:
        """Dynamo's frame locals of a call: the arguments by name, the model
        under its instance name, the free variables of `forward`."""
        return self._with_model(dict(zip(self.parameters, arguments)))

    def _with_model(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        if self.call is None:
            return dict(arguments)
        return self.call.frame(arguments, self.model)

    def _make_check(self) -> Callable[..., bool | None]:
        arguments = [f"a{i}" for i in range(len(self.parameters))]
        entries = [f"{name!r}: {a}" for name, a in zip(self.parameters, arguments)]
        if self.call is not None and self.call.instance is not None:
            entries.append(f"{self.call.instance!r}: _model")
        free = dict(self.call.free_variables) if self.call is not None else {}
        entries += [f"{name!r}: _free[{name!r}]" for name in free]
        grad = "" if self.primary.grad_enabled else " and not _grad_enabled()"
        position = dict(zip(self.parameters, arguments))
        grad += "".join(
            f" and _copysign(1.0, {position[name]}) == {sign!r}" for name, sign in self.primary.zero_signs
        )
        text = (
            f"def check({', '.join(arguments)}):\n"
            f"    if _compiling():  # traced by Dynamo, which guards the call itself\n"
            f"        return True\n"
            f"    frame = {{{', '.join(entries)}}}\n"
            f"    if _guard(frame){grad}:\n"
            f"        return True\n"
            f"    if _modes() and _outside_modes(_guard, frame){grad}:\n"
            f"        return True\n"
            f"    return _slow_path({', '.join(arguments)})\n"
        )
        guard = self.primary.guard
        manager = getattr(guard, "manager", None)
        namespace = {
            "_guard": manager.check if manager is not None else guard.check,
            "_model": self.model,
            "_grad_enabled": torch.is_grad_enabled,
            "_slow_path": _slow_path,
            "_copysign": math.copysign,
            "_compiling": torch.compiler.is_compiling,
            "_free": free,
            "_modes": torch._C._len_torch_dispatch_stack,  # noqa: SLF001
            "_outside_modes": outside_dispatch_modes,
        }
        exec(compile(text, "<optimus guard>", "exec"), namespace)  # noqa: S102 - our own generated code
        check = namespace["check"]
        check.source = text  # type: ignore[attr-defined]
        return check

    @property
    def source(self) -> str:
        """The generated check (for people)."""
        return self.check.source  # type: ignore[attr-defined]

    def failures(self, *arguments: Any) -> list[str]:
        """Why the module's own guard rejects a call (Dynamo's words)."""
        guard = self.primary.guard
        explain = getattr(guard, "failures", None)
        return explain(self.frame(arguments)) if explain is not None else []

    # -- a call that failed the check ---------------------------------------

    def miss(self, module: torch.nn.Module, *arguments: Any) -> Any:
        """The result of a call of `module` whose arguments failed the check."""
        args, kwargs = self._call_arguments(arguments)
        frame = self.frame(arguments)
        for spec in self.specializations:
            if spec.accepts(frame):
                return self._run(spec, module, args, kwargs)
        proven = self._generalize(module, frame, args, kwargs)
        if proven is not None:
            return self._run(proven, module, args, kwargs)
        return self._run(self._specialize(frame, arguments, args, kwargs), module, args, kwargs)

    def _run(self, spec: Specialization, module: torch.nn.Module, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        runner = spec.runner
        if runner is _OWN_MODULE:
            return self._unguarded(module, args, kwargs)
        return runner(*args, **kwargs)

    def _unguarded(self, module: torch.nn.Module, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        """Call `module` itself past its own check (a call its size-generic
        specialization accepts)."""
        check = self.check
        self.check = _accept
        try:
            return module(*args, **kwargs)
        finally:
            self.check = check

    def _call_arguments(self, arguments: Sequence[Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """`(args, kwargs)` to call the model with, from `forward`'s arguments."""
        if self.call is not None:
            return self.call.call_arguments(dict(zip(self.parameters, arguments)))
        if self.call_structure is None:
            return tuple(arguments), {}
        args, kwargs = pytree.tree_unflatten(list(arguments), self.call_structure)
        return tuple(args), dict(kwargs)

    def _specialize(
        self, frame: Mapping[str, Any], arguments: Sequence[Any], args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> Specialization:
        """What runs for this call and the calls its guard accepts from now
        on: a module optimized for it, or the original model (warned once)."""
        why = None
        captured_failed = False
        made = sum(1 for s in self.specializations if s.runner is not self.model)
        if self.reoptimize is None:
            why = "it cannot be optimized again"
        elif made >= MAX_SPECIALIZATIONS:
            why = f"it was optimized for {MAX_SPECIALIZATIONS} other input signatures already"
        elif self.call is None:
            why = None
        if why is None:
            try:
                runner = self.reoptimize(args, kwargs)  # type: ignore[misc]
            except CaptureError as error:
                why = f"they cannot be captured ({(str(error).splitlines() or [''])[0]})"
                captured_failed = True
            else:
                self.reoptimizations += 1
                log.info(
                    "optimus: re-optimized for new inputs (%d of at most %d): %s",
                    self.reoptimizations, MAX_SPECIALIZATIONS, self.describe_difference(arguments),
                )
                captured = runner.__dict__.get(CAPTURE_GUARD_ATTRIBUTE) if isinstance(runner, torch.nn.Module) else None
                guard = captured if captured is not None else SignatureGuard(self.parameters, arguments)
                arguments_only = {k: v for k, v in frame.items() if self.call is None or k != self.call.instance}
                made_spec = Specialization(
                    guard, runner, torch.is_grad_enabled(),
                    ExampleFrame.of(arguments_only) if captured is not None else None,
                    _proof_graph_of(runner),
                    zero_signs=signed_zeros(frame) if captured is not None else (),
                )
                self.specializations.append(made_spec)
                return made_spec
        if not self.fell_back:
            warnings.warn(
                "optimus: the optimized module was called with inputs it was not specialized "
                f"for ({self.describe_difference(arguments)}) and runs the original model for them, "
                f"unoptimized, because {why}",
                OptimusGuardWarning,
                stacklevel=4,
            )
        self.fell_back = True
        if captured_failed:
            # this call cannot be captured: the model runs for calls like it
            # (leaf by leaf), others are still optimized for
            arguments_only = {k: v for k, v in frame.items() if self.call is None or k != self.call.instance}
            model_spec = Specialization(_LeavesLike(arguments_only), self.model, True, reason=str(why))
        else:
            # no more specializations (or side effects): the model for every other call
            model_spec = next((s for s in self.specializations if s.runner is self.model and s.reason == why), None)
            if model_spec is not None:
                return model_spec
            model_spec = Specialization(_AcceptAll(), self.model, True, reason=str(why))
        self.specializations.append(model_spec)
        return model_spec

    def describe_difference(self, arguments: Sequence[Any]) -> str:
        """What differs between the call and the example, leaf by leaf
        (and what Dynamo's guard says where the leaves agree)."""
        frame = dict(zip(self.parameters, arguments))
        example = self.primary.example
        if example is not None:
            spec, sigs, _ = leaf_signatures(frame)
            if spec != example.spec:
                return f"the arguments have another structure ({_spec_text(spec)} instead of {_spec_text(example.spec)})"
            names = _leaf_names(frame)
            changes = [
                f"{name}: {_describe(new)} instead of {_describe(old)}"
                for name, old, new in zip(names, example.signatures, sigs)
                if old != new
            ]
            if changes:
                return "; ".join(changes)
            failures = self.failures(*arguments)
            return "; ".join(failures[:3]) or "same arguments"
        if isinstance(self.primary.guard, SignatureGuard):
            changes = [
                f"{name}: {_describe(signature(new))} instead of {_describe(old)}"
                for name, old, new in zip(self.parameters, self.primary.guard.signatures, arguments)
                if old != signature(new)
            ]
            return "; ".join(changes) or "same signature"
        return "other arguments"

    # -- size-generic proof ----------------------------------------------------

    def _generalize(
        self, module: torch.nn.Module, frame: Mapping[str, Any], args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> Specialization | None:
        """A specialization that differs from the call only in sizes (>= 2
        in both), proven size-generic now (`_prove_sizes`) and kept, with the
        dynamic capture's guard; None where there is none."""
        if self.call is None:
            return None
        arguments_only = {k: v for k, v in frame.items() if k != self.call.instance}
        spec, sigs, _ = leaf_signatures(arguments_only)
        for base in [self.primary, *self.specializations]:
            if base.example is None or base.proof_graph is None:
                continue
            if not (base.grad_enabled or not torch.is_grad_enabled()):
                continue
            dims = _size_only_difference(base.example, spec, sigs)
            if dims is None or frozenset(dims) in base.proofs_tried:
                continue
            base.proofs_tried.add(frozenset(dims))
            runner = module if base.runner is _OWN_MODULE else base.runner
            try:
                guard = _prove_sizes(self.model, runner, base.proof_graph, args, kwargs, arguments_only, dims)
                if guard is not None and not guard.check(self._with_model(base.example.stand_in())):
                    # the example takes another path through the model (a branch
                    # on a size): the graph made for it is not the dynamic one
                    guard = _unproven("the example the graph was made for fails the dynamic capture's guard")
            except Exception as error:  # noqa: BLE001 - unproven is a safe answer
                log.info("optimus: size proof failed: %s: %s", type(error).__name__, error)
                guard = None
            base.generalized = bool(base.generalized) or guard is not None
            if guard is None:
                continue
            log.info("optimus: the optimized graph works for any size >= 2 of %d input dim(s)", len(dims))
            proven = Specialization(guard, base.runner, base.grad_enabled, None, None, True)
            self.specializations.append(proven)
            return proven
        return None

    # -- copies ----------------------------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["check"] = None  # generated code: made again
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.check = self._make_check()


class _OwnModule:
    """The runner of the primary specialization: the guarded module itself."""

    def __repr__(self) -> str:
        return "<the module itself>"

    def __deepcopy__(self, memo: dict[int, Any]) -> _OwnModule:
        return self

    def __reduce__(self) -> str:
        return "_OWN_MODULE"


_OWN_MODULE = _OwnModule()


class _AcceptAll:
    def check(self, frame: Mapping[str, Any]) -> bool:
        return True


class _LeavesLike:
    """Accepts the calls whose arguments have the structure and leaf
    signatures of one call (`leaf_signatures`)."""

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        spec, signatures, _ = leaf_signatures(arguments)
        self.spec, self.signatures = spec, signatures

    def check(self, frame: Mapping[str, Any]) -> bool:
        spec, signatures, _ = leaf_signatures({k: v for k, v in frame.items() if k in self.names})
        return spec == self.spec and signatures == self.signatures

    @property
    def names(self) -> set[str]:
        return set(self.spec.context) if self.spec.context else set()


def _accept(*arguments: Any) -> bool:
    return True


def _proof_graph_of(runner: Any) -> torch.fx.Graph | str | None:
    if not isinstance(runner, torch.fx.GraphModule):
        return None
    return runner.__dict__.pop(UNCACHED_GRAPH_ATTRIBUTE, None)


def _spec_text(spec: Any) -> str:
    text = str(spec)
    return text if len(text) < 120 else text[:117] + "..."


def _leaf_names(frame: Mapping[str, Any]) -> list[str]:
    """Readable names of the pytree leaves of a call (`feats['f0']`)."""
    from optimus_ir.api.dynamo_capture import leaf_source_names

    return leaf_source_names(frame)


def _size_only_difference(example: ExampleFrame, spec: Any, sigs: Sequence[Hashable]) -> list[tuple[int, int]] | None:
    """(leaf, dim) of every size that differs between the example and the
    call when nothing else does (and those sizes are >= 2 in both, the
    tensors contiguous in both); None otherwise."""
    if spec != example.spec or len(sigs) != len(example.signatures):
        return None
    dims: list[tuple[int, int]] = []
    for index, (old, new) in enumerate(zip(example.signatures, sigs)):
        if old == new:
            continue
        if not (isinstance(old, tuple) and isinstance(new, tuple) and old[:1] == new[:1] == ("tensor",)):
            return None
        if old[1] != new[1] or old[3:] != new[3:] or len(old[2]) != len(new[2]) or not old[6]:
            return None
        for dim, (a, b) in enumerate(zip(old[2], new[2])):
            if a != b:
                if a < 2 or b < 2:
                    return None
                dims.append((index, dim))
    return dims or None


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


class _FakeStateInterpreter(torch.fx.Interpreter):
    """Runs a graph with the module's tensors (parameters, buffers,
    constants) read as fake copies: fake mode runs an in-place op on a real
    tensor for real, and a proof must not update a batch norm's statistics
    or a counter. One fake per tensor, so aliases stay aliases."""

    def __init__(self, module: torch.nn.Module, graph: torch.fx.Graph, fake_mode: Any) -> None:
        super().__init__(module, graph=graph)
        self.fake_mode = fake_mode
        self.fakes: dict[int, Any] = {}

    def fake(self, value: Any) -> Any:
        """The fake copy of a real tensor (the value itself otherwise)."""
        if isinstance(value, torch.Tensor) and not hasattr(value, "fake_mode"):
            if id(value) not in self.fakes:
                self.fakes[id(value)] = (value, self.fake_mode.from_tensor(value, static_shapes=True))
            return self.fakes[id(value)][1]
        return value

    def fake_state(self) -> dict[str, Any]:
        """Fake copies of the parameters and buffers of the module and of
        its submodules (a kept `call_module` target's too)."""
        module = self.module
        return {
            name: self.fake(tensor)
            for named in (module.named_parameters(remove_duplicate=False), module.named_buffers(remove_duplicate=False))
            for name, tensor in named
        }

    def get_attr(self, target: Any, args: Any, kwargs: Any) -> Any:
        return self.fake(super().get_attr(target, args, kwargs))


def _prove_sizes(
    model: Callable[..., Any],
    module: torch.nn.Module,
    graph: torch.fx.Graph | str,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    frame: Mapping[str, Any],
    dims: Sequence[tuple[int, int]],
) -> Any:
    """The proof of the module docstring; the dynamic capture's guard when
    it holds, else None. `graph` is the optimized graph before `freeze`
    replaced values (`OWN_GRAPH`: `module.graph`), run with `module`'s
    attributes; `dims` the (leaf, dim) of the call's pytree leaves whose
    sizes are made symbolic. The caller checks that the example the graph
    was made for passes the dynamic capture's guard (the same path through
    the model)."""
    from torch._dispatch.python import enable_python_dispatcher
    from torch.nn.utils.stateless import _reparametrize_module

    from optimus_ir.api.dynamo_capture import capture_graph

    if isinstance(graph, str):  # OWN_GRAPH
        graph = module.graph if isinstance(module, torch.fx.GraphModule) else None
    if not isinstance(graph, torch.fx.Graph) or not isinstance(module, torch.fx.GraphModule):
        return None
    codegen = module.graph._codegen  # noqa: SLF001
    if not isinstance(codegen, ModelCallCodeGen):
        return None
    # 1. the model, captured with those sizes dynamic, on aliases of the call's tensors
    marked: dict[int, list[int]] = {}
    for leaf, dim in dims:
        marked.setdefault(leaf, []).append(dim)
    leaves, spec = pytree.tree_flatten(dict(frame))
    aliases = list(leaves)
    for leaf, leaf_dims in marked.items():
        alias = leaves[leaf].view(leaves[leaf].shape)
        for dim in leaf_dims:
            torch._dynamo.mark_dynamic(alias, dim)  # noqa: SLF001 - Dynamo keeps 0 and 1 apart itself
        aliases[leaf] = alias
    dynamic_frame = pytree.tree_unflatten(aliases, spec)
    call = codegen.call
    dynamic_args, dynamic_kwargs = call.call_arguments(dynamic_frame)
    with _quiet("torch._guards", "torch._dynamo", "torch.fx.experimental.symbolic_shapes"):
        try:
            captured = capture_graph(model, dynamic_args, dynamic_kwargs, dynamic=True)
        except Exception as error:  # noqa: BLE001 - a violated constraint: size-specific
            return _unproven(f"the model cannot be captured with those sizes dynamic ({type(error).__name__})")
    dynamic_graph = captured.graph_module.graph
    fakes: dict[str, Any] = {}
    shape_env = None
    expected: list[Any] = []
    for node in dynamic_graph.nodes:
        value = node.meta.get("example_value", node.meta.get("val"))
        if node.op == "placeholder":
            fakes[captured.call.sources[node.target]] = value
            if isinstance(value, torch.Tensor) and shape_env is None:
                shape_env = getattr(getattr(value, "fake_mode", None), "shape_env", None)
            continue
        if isinstance(value, torch.SymInt | torch.SymFloat | torch.SymBool):
            return _unproven(f"the model uses a size as a value ('{node.name}'): the static graph baked it in")
        if node.op == "output":
            for out in pytree.tree_leaves(node.args):
                if isinstance(out, torch.fx.Node):
                    got = out.meta.get("example_value", out.meta.get("val"))
                    expected.append(got.shape if isinstance(got, torch.Tensor) else got)
    if shape_env is None:
        return _unproven("the dynamic capture has no symbolic sizes")
    fake_mode = next(v.fake_mode for v in fakes.values() if isinstance(v, torch.Tensor) and hasattr(v, "fake_mode"))
    # 2. the optimized graph, run on the dynamic capture's fake tensors
    real = call.values(call.bind(*args, **kwargs), module.__dict__.get("_optimus_model"))
    inputs: list[Any] = []
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    with fake_mode:
        for node, value in zip(placeholders, real):
            fake = fakes.get(call.sources.get(node.target, ""))
            if fake is None:
                fake = fake_mode.from_tensor(value, static_shapes=True) if isinstance(value, torch.Tensor) else value
            inputs.append(fake)
    symbols = set(shape_env.var_to_range)
    guards_before = len(shape_env.guards)
    replacements_before = dict(shape_env.replacements)
    ranges_before = {s: shape_env.var_to_range.get(s) for s in symbols}
    allow = fake_mode.allow_non_fake_inputs
    fake_mode.allow_non_fake_inputs = True
    try:
        interpreter = _FakeStateInterpreter(module, graph, fake_mode)
        with (
            fake_mode, enable_python_dispatcher(), _quiet("torch._subclasses.fake_tensor"),
            _reparametrize_module(module, interpreter.fake_state(), tie_weights=True),
        ):
            results = interpreter.run(*inputs, enable_io_processing=False)
    finally:
        fake_mode.allow_non_fake_inputs = allow
    if dict(shape_env.replacements) != replacements_before:
        return _unproven("the optimized graph fixes a size the model leaves free")
    if any(shape_env.var_to_range.get(s) != r for s, r in ranges_before.items()):
        return _unproven("the optimized graph narrows the range of a size")
    if any(guard.expr.free_symbols & symbols for guard in shape_env.guards[guards_before:]):
        return _unproven("the optimized graph decides on a size")
    produced = [r.shape if isinstance(r, torch.Tensor) else r for r in pytree.tree_leaves(results)]
    if len(produced) != len(expected):
        return _unproven("the optimized graph returns another number of values")
    for got, want in zip(produced, expected):
        if isinstance(got, torch.Size) != isinstance(want, torch.Size):
            return _unproven("the optimized graph returns another kind of value")
        if isinstance(got, torch.Size) and (
            len(got) != len(want) or any(shape_env.simplify(_expr(a) - _expr(b)) != 0 for a, b in zip(got, want))
        ):
            return _unproven(f"the optimized graph returns shape {list(got)} where the model returns {list(want)}")
    return captured.guard


def _unproven(why: str) -> None:
    log.info("optimus: size proof: %s", why)
    return None


def _expr(dim: Any) -> Any:
    import sympy

    return dim.node.expr if isinstance(dim, torch.SymInt) else sympy.Integer(dim)


def forward_parameters(gm: torch.fx.GraphModule) -> list[str] | None:
    """The names of `gm.forward`'s parameters (the names its generated code
    binds), or None where one is not a plain name (`*args` of a traced graph)."""
    codegen = gm.graph._codegen  # noqa: SLF001
    if isinstance(codegen, ModelCallCodeGen):
        return codegen.call.parameter_names
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
) -> InputGuard | None:
    """Make `gm` (optimized for `example_inputs`/`example_kwargs`) check its
    arguments on every call (the module docstring); the guard, also kept as
    `gm.optimus_guard`, or None where the signature of `gm.forward` cannot
    be guarded (then `gm` is left as it is)."""
    from optimus_ir.translate.exporter import fast_codegen, finish_code, recompile

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
    codegen = gm.graph._codegen  # noqa: SLF001
    call = codegen.call if isinstance(codegen, ModelCallCodeGen) else None
    passed = ", ".join(names)
    source = (
        f"\n    if self.{GUARD_ATTRIBUTE}.check({passed}) is False:  # not the inputs this code was specialized for"
        f"\n        return self.{GUARD_ATTRIBUTE}.miss(self, {passed})"
    )
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
    if call is not None:
        example = [call.bind(*example_inputs, **example_kwargs)[name] for name in names]
    else:
        bound = inspect.signature(gm.forward).bind(*example_inputs, **example_kwargs)
        bound.apply_defaults()
        example = [bound.arguments[name] for name in names]
    info = getattr(gm.graph._codegen, "pytree_info", None)  # noqa: SLF001
    structure = info.in_spec if info is not None else None
    captured = gm.__dict__.pop(CAPTURE_GUARD_ATTRIBUTE, None)
    guard = InputGuard(
        model, reoptimize, names, example, call, captured, uncached_graph, structure
    )
    gm.__dict__[GUARD_ATTRIBUTE] = guard
    preserve_on_copy(gm, GUARD_ATTRIBUTE, guard)
    return guard


__all__ = [
    "CAPTURE_GUARD_ATTRIBUTE",
    "GUARD_ATTRIBUTE",
    "MAX_SPECIALIZATIONS",
    "OWN_GRAPH",
    "InputGuard",
    "OptimusGuardWarning",
    "Specialization",
    "install_guard",
    "signature",
]

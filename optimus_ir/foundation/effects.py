"""Side effects of ops: what `dce` may remove and what `cse` may merge.

Effects are xDSL memory-effect traits on the ops (`xdsl.traits.MemoryEffect`);
this module classifies the fx call ops for their trait (`FxCallEffects`) and
reads any op's effects back (`effect_kind`). Passes ask through
`optimus_ir.foundation.traits.is_removable` / `is_mergeable` (or the aliases here).

The rule is conservative. An op is *pure* (no observable effect: removable
when unused, and mergeable with an identical op) when

* it is a non-fx op whose traits say it has no memory effects (the `Pure`
  trait, as every operator-dialect op but training-mode dropout has); or
* it is `fx.get_attr`; or
* it is `fx.call_function` / `fx.call_method` whose target is *known* pure:
  a torch / aten functional op or tensor method that is not in-place (no
  trailing `_`), has no `out=` kwarg and no `inplace=True`, is not random,
  and is not one of the stateful torch entry points; or one of a list of
  pure Python builtins (`operator.getitem`, `operator.add`, `getattr`...);
  or a dropout with a literal `training=False` (the identity).

Everything else is impure: unknown Python callables, `fx.call_module`,
in-place and random ops, custom-op namespaces (but the batch kernels
`torch.ops.optimus.*`, listed pure), ops with regions.
`fx.placeholder` and `fx.output` are never removed.

Allocating factories (`torch.empty`, `torch.zeros`, ...) are removable when
unused but never merged: two calls return two distinct tensors.

Extend the lists with `register_pure_function(target)` /
`register_impure_function(target)`.
"""

from __future__ import annotations

import functools
import inspect
import weakref
from collections.abc import Callable
from collections.abc import Set as AbstractSet

from xdsl.dialects.builtin import IntegerAttr, IntegerType, UnitAttr
from xdsl.ir import Attribute, Operation
from xdsl.traits import EffectInstance, MemoryEffect, MemoryEffectKind, get_effects

_I1 = IntegerType(1)

# Exact fx targets known to be pure (beyond the torch rule below).
PURE_FUNCTIONS: set[str] = {
    "operator.getitem",
    "operator.add",
    "operator.sub",
    "operator.mul",
    "operator.truediv",
    "operator.floordiv",
    "operator.mod",
    "operator.pow",
    "operator.neg",
    "operator.pos",
    "operator.abs",
    "operator.invert",
    "operator.matmul",
    "operator.and_",
    "operator.or_",
    "operator.xor",
    "operator.not_",
    "operator.lshift",
    "operator.rshift",
    "operator.eq",
    "operator.ne",
    "operator.lt",
    "operator.le",
    "operator.gt",
    "operator.ge",
    "operator.is_",
    "operator.is_not",
    "operator.contains",
    "operator.truth",
    "builtins.getattr",
    "getattr",
    "builtins.len",
    "len",
    "builtins.int",
    "builtins.float",
    "builtins.bool",
    "builtins.min",
    "builtins.max",
    "builtins.abs",
    "math.sqrt",
    "math.ceil",
    "math.floor",
    "math.exp",
    "math.log",
    "torch.ops.aten._to_copy.default",
    "torch.ops.aten._softmax.default",
    "torch.ops.aten._log_softmax.default",
    "torch.ops.aten._unsafe_view.default",
    # the batch kernels (optimus_ir.kernels.ops): fresh results, inputs only read
    "torch.ops.optimus.grouped_linear.default",
    "torch.ops.optimus.batched_layer_norm.default",
    "torch.ops.optimus.multi_pointwise.default",
}

# Exact targets that are never pure, even though they look like torch functions.
IMPURE_FUNCTIONS: set[str] = {
    "torch.manual_seed",
    "torch.seed",
    "torch.set_grad_enabled",
    "torch.set_default_dtype",
    "torch.set_default_device",
    "torch.use_deterministic_algorithms",
    "torch.save",
    "torch.load",
    "torch.set_printoptions",
}

# Last name components of random torch ops (never removed or merged: they
# advance the generator).
RANDOM_NAMES: frozenset[str] = frozenset(
    {
        "rand",
        "randn",
        "randint",
        "randperm",
        "rand_like",
        "randn_like",
        "randint_like",
        "bernoulli",
        "multinomial",
        "normal",
        "poisson",
        "dropout",
        "dropout1d",
        "dropout2d",
        "dropout3d",
        "alpha_dropout",
        "feature_alpha_dropout",
        "feature_dropout",
        "native_dropout",
        "rrelu",
        "gumbel_softmax",
        "uniform",
        "exponential",
        "geometric",
        "cauchy",
        "log_normal",
        "random",
    }
)

# Allocating factories: removable when unused, never merged.
ALLOCATING_NAMES: frozenset[str] = frozenset(
    {
        "empty",
        "empty_like",
        "empty_strided",
        "new_empty",
        "new_empty_strided",
        "zeros",
        "zeros_like",
        "new_zeros",
        "ones",
        "ones_like",
        "new_ones",
        "full",
        "full_like",
        "new_full",
        "tensor",
        "as_tensor",
        "arange",
        "linspace",
        "logspace",
        "eye",
        "clone",
        "contiguous",
        "scalar_tensor",
    }
)

# Exact fx targets that return a fresh tensor (or their input), beyond the
# torch factories above: removable when unused, never merged.
ALLOCATING_FUNCTIONS: set[str] = set()

# Torch namespaces whose functions have effects beyond their result.
_IMPURE_TORCH_PREFIXES = (
    "torch.cuda.",
    "torch.distributed.",
    "torch.autograd.",
    "torch.profiler.",
    "torch.random.",
    "torch.testing.",
    "torch.ops.profiler.",
    "torch.fx.",
    "torch._dynamo.",
)

# Private torch C namespaces that hold ordinary functional ops.
_FUNCTIONAL_C_PREFIXES = (
    "torch._C._nn.",
    "torch._C._VariableFunctions.",
    "torch._C._linalg.",
    "torch._C._fft.",
    "torch._C._special.",
)

# Methods with effects that do not end in `_`.
IMPURE_METHODS: set[str] = {
    "__setitem__",
    "__delitem__",
    "backward",
    "register_hook",
    "retain_grad",
    "record_stream",
    "set_",
    "share_memory_",
    "pin_memory",
    "numpy",
    "data_ptr",
    "tolist",
    "item",
}


_INPLACE_DUNDERS = frozenset(
    f"__i{op}__"
    for op in (
        "add sub mul truediv floordiv mod pow matmul and or xor lshift rshift".split()
    )
)


def has_global_effects(target: str, *, method: bool = False) -> bool:
    """The call has effects beyond its operands and result (the generator
    seeded, a file written, a device synchronized, autograd state changed,
    Python objects exported): it must never be run just to see what it
    returns. `target` is a call_function's qualified name, or with
    `method=True` a Tensor method's name."""
    if method:
        return target in IMPURE_METHODS and target != "__setitem__"
    name = target[1:] if target.startswith("_operator.") else target
    if name in IMPURE_FUNCTIONS or name.startswith(_IMPURE_TORCH_PREFIXES):
        return True
    return name.startswith("torch._C.") and not name.startswith(_FUNCTIONAL_C_PREFIXES)


def register_pure_function(target: str) -> None:
    """Declare an fx call_function target (qualified name) pure."""
    IMPURE_FUNCTIONS.discard(target)
    PURE_FUNCTIONS.add(target)
    _target_kind.cache_clear()


def register_impure_function(target: str) -> None:
    """Declare an fx call_function target impure."""
    PURE_FUNCTIONS.discard(target)
    IMPURE_FUNCTIONS.add(target)
    _target_kind.cache_clear()


def register_allocating_function(target: str) -> None:
    """Declare an fx call_function target (qualified name) allocating: it
    returns a fresh tensor (or its input) and has no other effect."""
    PURE_FUNCTIONS.discard(target)
    IMPURE_FUNCTIONS.discard(target)
    ALLOCATING_FUNCTIONS.add(target)
    _target_kind.cache_clear()


def _aten_name(target: str) -> tuple[str, str] | None:
    """(op name, overload) of a `torch.ops.aten|prims.<op>[.<overload>]` target."""
    parts = target.split(".")
    if len(parts) < 4 or parts[2] not in ("aten", "prims"):
        return None
    return parts[3], (parts[4] if len(parts) > 4 else "")


def _kwargs_make_impure(op: Operation) -> bool:
    kwargs = op.kwargs.data  # type: ignore[attr-defined]
    if not kwargs:
        return False
    if "out" in kwargs:
        return True
    return "inplace" in kwargs and _is_true(kwargs["inplace"])


def _is_true(attr: Attribute) -> bool:
    """Whether an fx argument literal is `True`: the fx dialect spells a bool
    as an `i1` IntegerAttr (`fx.bool_literal`). Checked here on the builtin
    attribute, so that this module, which the dialects import for their
    effect traits, does not import a dialect back."""
    return isinstance(attr, IntegerAttr) and attr.type == _I1 and bool(attr.value.data)


@functools.lru_cache(maxsize=4096)
def _target_kind(target: str) -> str:
    """The kind of a call_function target, from its name alone."""
    if target.startswith("_operator."):
        # what the importer records: `operator.add.__module__` is `_operator`
        target = target[1:]
    if target in PURE_FUNCTIONS:
        return "pure"
    if target in ALLOCATING_FUNCTIONS:
        return "alloc"
    if target in IMPURE_FUNCTIONS or not target.startswith("torch."):
        return "impure"
    if target.startswith(_IMPURE_TORCH_PREFIXES):
        return "impure"
    if target.startswith("torch.ops."):
        aten = _aten_name(target)
        if aten is None:
            return "impure"  # custom-op namespaces: unknown
        name, overload = aten
        if overload == "out" or overload.endswith("_out"):
            return "impure"
    else:
        if target.startswith("torch._C.") and not target.startswith(_FUNCTIONAL_C_PREFIXES):
            return "impure"
        name = target.rsplit(".", 1)[-1]
    if name.endswith("_") or name.startswith("_"):
        return "impure"
    base = name.removesuffix("_")
    if base in RANDOM_NAMES:
        return "impure"
    if base in ALLOCATING_NAMES:
        return "alloc"
    return "pure"


EVAL_DROPOUT_FUNCTIONS: dict[str, int] = {
    "torch.nn.functional.dropout": 2,
    "torch.nn.functional.dropout1d": 2,
    "torch.nn.functional.dropout2d": 2,
    "torch.nn.functional.dropout3d": 2,
    "torch.nn.functional.alpha_dropout": 2,
    "torch.nn.functional.feature_alpha_dropout": 2,
    "torch.dropout": 2,
    "torch.ops.aten.dropout.default": 2,
}
"""Dropout functions -> the position of their `training`/`train` argument.
With a literal `False` there (and not in place) a dropout returns its input
unchanged: it draws no random numbers and writes nothing, so it is pure
(`analysis.alias_facts` finds that it returns its operand)."""


def _is_eval_dropout(op: Operation, target: str) -> bool:
    """`op` is a call of a dropout with a literal `training=False`."""
    position = EVAL_DROPOUT_FUNCTIONS.get(target)
    if position is None:
        return False
    kwargs = op.kwargs.data  # type: ignore[attr-defined]
    training = kwargs.get("training", kwargs.get("train"))
    if training is None:
        args = op.args.data  # type: ignore[attr-defined]
        if len(args) <= position:
            return False  # torch's default: training
        training = args[position]
    return _is_false(training)


def _is_false(attr: Attribute) -> bool:
    """Whether an fx argument literal is `False` (see `_is_true`)."""
    return isinstance(attr, IntegerAttr) and attr.type == _I1 and not attr.value.data


@functools.lru_cache(maxsize=1024)
def _parameter_names(target: str) -> tuple[str, ...] | None:
    """The parameter names of a `torch.nn.functional` function, read from
    its signature (None: not one, or no signature)."""
    if not target.startswith("torch.nn.functional."):
        return None
    from optimus_ir.foundation.objects import UnresolvedNameError, resolve_qualified_name

    try:
        function = resolve_qualified_name(target)
        return tuple(inspect.signature(function).parameters)
    except (UnresolvedNameError, TypeError, ValueError):
        return None


def _argument(op: Operation, names: tuple[str, ...], name: str) -> Attribute | None:
    """The literal bound to parameter `name` (by keyword or position), or
    None when it is left at its default."""
    kwargs = op.kwargs.data  # type: ignore[attr-defined]
    if name in kwargs:
        return kwargs[name]
    position = names.index(name)
    args = op.args.data  # type: ignore[attr-defined]
    return args[position] if position < len(args) else None


def _functional_writes(op: Operation, target: str) -> bool:
    """A `torch.nn.functional` call that writes an argument, by its own
    signature: `inplace=True`, or a `max_norm` that is given (embedding and
    embedding_bag renormalize the rows they read of the weight in place).
    A function without a signature falls back to "any positional `True`
    after the input may be `inplace`"."""
    names = _parameter_names(target)
    if names is None:
        return target.startswith("torch.nn.functional.") and any(
            _is_true(arg) for arg in op.args.data[1:]  # type: ignore[attr-defined]
        )
    if "inplace" in names:
        inplace = _argument(op, names, "inplace")
        if inplace is not None and _is_true(inplace):
            return True
    if "max_norm" in names:
        max_norm = _argument(op, names, "max_norm")
        if max_norm is not None and max_norm.name != "fx.none":
            return True
    return False


def _function_kind(op: Operation, target: str) -> str:
    """'pure', 'alloc' (pure but never merged) or 'impure'."""
    kind = _target_kind(target)
    if kind == "impure":
        if _is_eval_dropout(op, target) and not _kwargs_make_impure(op) and not _functional_writes(op, target):
            return "pure"
        return kind
    if _kwargs_make_impure(op) or _functional_writes(op, target):
        return "impure"
    return kind


@functools.lru_cache(maxsize=4096)
def _method_name_kind(name: str) -> str:
    if name in IMPURE_METHODS:
        return "impure"
    if name.startswith("__") and name.endswith("__"):
        # in-place dunders (__iadd__) are impure; the others are operators
        return "impure" if name in _INPLACE_DUNDERS else "pure"
    if name.endswith("_") or name in RANDOM_NAMES:
        return "impure"
    if name in ALLOCATING_NAMES:
        return "alloc"
    return "pure"


def _method_kind(op: Operation, name: str) -> str:
    kind = _method_name_kind(name)
    if kind != "impure" and _kwargs_make_impure(op):
        return "impure"
    return kind


_effect_probe: Callable[[Operation], bool] | None = None


def set_effect_probe(probe: Callable[[Operation], bool] | None) -> None:
    """Install the check that runs an fx call the names call pure and says
    whether it showed effects (`analysis.alias_facts.call_shows_effects`:
    on fake tensors, a bumped operand version or a random op). It lives
    above this module, which the dialects import; it installs itself."""
    global _effect_probe
    _effect_probe = probe
    _probed.clear()


_probed: weakref.WeakKeyDictionary[Operation, bool] = weakref.WeakKeyDictionary()


def _shows_effects(op: Operation) -> bool:
    probe = _effect_probe
    if probe is None:
        return False
    found = _probed.get(op)
    if found is None:
        found = _probed[op] = probe(op)
    return found


def call_kind(op: Operation) -> str:
    """The classification of an fx call op (`fx.call_function`,
    `fx.call_method`, `fx.call_module`) from its target and arguments:
    'pure', 'alloc' (removable if unused, never merged) or 'impure'."""
    # By op name, not class: the fx dialect imports this module for the
    # trait, so this module may not import the dialect (no import cycle).
    if op.name in ("fx.call_function", "fx.call_method"):
        if op.name == "fx.call_function":
            kind = _function_kind(op, op.target.data)  # type: ignore[attr-defined]
        else:
            kind = _method_kind(op, op.target.data)  # type: ignore[attr-defined]
        if kind != "impure" and _shows_effects(op):
            return "impure"  # torch says otherwise: a write the name hides
        return kind
    if isinstance(op.attributes.get("effect_free"), UnitAttr):
        # a module the importer ran on fake tensors: it wrote nothing and
        # drew no random numbers (`analysis.alias_facts.record_module_facts`)
        return "pure"
    return "impure"  # call_module: arbitrary Python


_NO_EFFECTS: frozenset[EffectInstance] = frozenset()
_ALLOC_EFFECTS = frozenset((EffectInstance(MemoryEffectKind.ALLOC),))
_WRITE_EFFECTS = frozenset((EffectInstance(MemoryEffectKind.WRITE),))
_EFFECTS_OF_KIND = {"pure": _NO_EFFECTS, "alloc": _ALLOC_EFFECTS, "impure": _WRITE_EFFECTS}


class FxCallEffects(MemoryEffect):
    """The memory effects of an fx call op, as `call_kind` classifies it:
    none (a known-pure torch function or method, a pure builtin), `ALLOC`
    (a factory or copy: a fresh tensor) or `WRITE` (in-place, `out=`,
    random, or unknown code, which may write anything)."""

    @classmethod
    def get_effects(cls, op: Operation) -> frozenset[EffectInstance]:
        return _EFFECTS_OF_KIND[call_kind(op)]


_effect_traits: dict[type[Operation], tuple[MemoryEffect, ...]] = {}


def memory_effects(op: Operation) -> AbstractSet[EffectInstance] | None:
    """`xdsl.traits.get_effects(op)` (None: unknown), with the op class's
    memory-effect traits looked up once per class: passes ask it for every
    op, and the generic lookup costs several times the classification."""
    cls = type(op)
    traits = _effect_traits.get(cls)
    if traits is None:
        traits = _effect_traits[cls] = tuple(op.get_traits_of_type(MemoryEffect))
    if not traits:
        return None
    if len(traits) == 1:
        return traits[0].get_effects(op)
    return get_effects(op)


def effect_kind(op: Operation) -> str:
    """'pure', 'alloc' (removable if unused, never merged) or 'impure', from
    the op's memory-effect traits: no effects is pure, only `ALLOC` is
    alloc; unknown effects (no trait: `fx.placeholder`, `fx.output`), any
    other effect, and ops with regions are impure."""
    if op.regions:
        return "impure"
    effects = memory_effects(op)
    if effects is None:
        return "impure"
    if not effects:
        return "pure"
    if all(e.kind is MemoryEffectKind.ALLOC for e in effects):
        return "alloc"
    return "impure"


def is_removable_if_unused(op: Operation) -> bool:
    """May `op` be erased when none of its results is used?"""
    return effect_kind(op) != "impure"


def is_cse_candidate(op: Operation) -> bool:
    """May `op` be merged with an identical op that dominates it?"""
    return effect_kind(op) == "pure"


__all__ = [
    "ALLOCATING_FUNCTIONS",
    "ALLOCATING_NAMES",
    "EVAL_DROPOUT_FUNCTIONS",
    "FxCallEffects",
    "IMPURE_FUNCTIONS",
    "IMPURE_METHODS",
    "PURE_FUNCTIONS",
    "RANDOM_NAMES",
    "call_kind",
    "has_global_effects",
    "set_effect_probe",
    "effect_kind",
    "memory_effects",
    "is_cse_candidate",
    "is_removable_if_unused",
    "register_allocating_function",
    "register_impure_function",
    "register_pure_function",
]

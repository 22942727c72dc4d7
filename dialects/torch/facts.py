"""What an op of the torch dialect *is*, declared once on its class.

Every torch op class may carry `FACTS: ClassVar[OpFacts]`: the spellings of
user code it is raised from, what it lowers to, how batch fusion groups it,
the Triton program step that computes it, its cost class and its torch
reference function. The passes, lowerings, kernels and the cost model read
these facts (through `facts_of` and the indexes at the bottom); they keep no
per-op tables of their own. Adding a unary pointwise op is one declaration,
its facts given as class keywords (those of `unary_facts`)::

    @irdl_op_definition
    class I0Op(
        _PlainUnaryOp, torch_name="i0", layout_exact=False,
        functions=("torch.i0", "torch.special.i0"), cost="transcendental",
    ):
        \"\"\"`torch.i0(input)`.\"\"\"

(with `kernel=` naming its `multi_pointwise` program step where
`optimus_ir.kernels.programs.STEPS` has one).

Effects and aliasing stay xDSL traits (`Pure`, `MemoryEffect`, `ViewLike`):
they are facts the generic passes (dce, cse, the alias analysis) already
read through xDSL. Where an op is raised from aten overloads, a test
(`tests/test_one_definition.py`) holds them to the overloads' schemas: no
effect exactly when nothing is mutated, a view exactly when the result
aliases an input.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

if TYPE_CHECKING:
    from xdsl.ir import Attribute, Operation

ProgramChoice = Callable[["Mapping[str, Attribute]"], "str | None"]
"""A function of an op's properties choosing its program (None: no program
computes that form)."""

FusionKind = Literal[
    "unary-pointwise",   # one tensor in, same shape out: fused over stacked members
    "binary-pointwise",  # lhs OP rhs (or a scalar), broadcasting
    "reduction",         # sum/mean over dims
    "linear",            # linear layers (grouped/batched GEMM)
    "norm",              # normalization over the trailing dims (layer_norm)
    "softmax",           # softmax-like over the last dim, one member at a time
]
"""How batch fusion treats an op (None: never fused horizontally)."""

CostClass = Literal[
    "free",            # no kernel: views, detach
    "pointwise",       # a cheap elementwise kernel (relu, neg, abs, clamp...)
    "transcendental",  # an elementwise kernel computing exponentials or the like
    "binary",          # an elementwise kernel reading two tensors
    "reduction",       # sum/mean
    "linear",          # a GEMM
    "layer_norm",      # a normalization kernel
    "softmax",         # a row-wise softmax kernel
    "copy",            # a kernel that copies (cat, stack, a copying reshape)
]
"""The kernel a cost model measures for an op (see `optimus_ir.analysis.cost_model`)."""


@dataclass(frozen=True)
class Argument:
    """One argument of the torch signature after the tensor operands, bound
    to a property of the op (`prop`, by default the same name).

    `default` is torch's default (None: the argument is required). An
    argument named `inplace` is not a property: raising requires it false."""

    name: str
    default: Any = None
    prop: str | None = None
    choices: tuple[Any, ...] | None = None
    """The values torch accepts (a mode string's choices);
    None: any literal of the property's kind. A call with another value is
    not raised."""

    @property
    def property_name(self) -> str:
        """The op property the argument sets."""
        return self.prop or self.name


INPLACE = Argument("inplace", False)
"""The `inplace=False` flag of `F.relu`, `nn.ReLU`...: raised only when false."""


@dataclass(frozen=True)
class Spellings:
    """Every way user code calls the op, as FX and Dynamo record it.

    * `functions`: qualified `call_function` targets (`torch.add`,
      `operator.add`, ...);
    * `methods`: `Tensor` method names (`call_method`);
    * `modules`: qualified `nn.Module` classes (`call_module`); their
      arguments are read from the module's attributes of the same names;
    * `aten`: aten overloads (`add.Tensor`), as in exported graphs;
    * `arguments`: the signature after the tensor operand(s), in torch's
      positional order, binding each to a property.

    Spellings whose binding differs (a module attribute under another name,
    an argument computed from others) are raised by a hand-written binder in
    `raise-fx` instead, and listed in `custom` for the record."""

    functions: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()
    aten: tuple[str, ...] = ()
    arguments: tuple[Argument, ...] = ()
    custom: tuple[str, ...] = ()


@dataclass(frozen=True)
class OpFacts:
    """Every fact about a torch op that a pass, lowering, kernel or cost model
    needs, declared once on the op class as `FACTS`."""

    spellings: Spellings = field(default_factory=Spellings)
    lowers_to: str | None = None
    """The FX `call_function` target of the generic lowering: the op's
    operands positionally, then each property that differs from its default
    as a keyword argument (the torch name of `spellings.arguments`). None:
    the op has a lowering of its own in `lower-to-fx`."""
    fusion: FusionKind | None = None
    kernel: str | ProgramChoice | None = None
    """What `multi_pointwise` computes one member with
    (`optimus_ir.kernels.programs`): for a unary op its program (a step
    name, or steps joined by `;`), for a binary op the binary step applied to
    its other operand (a tensor or the scalar); or a function of the op's
    properties choosing one (None where no program computes that form)."""
    cost: CostClass = "pointwise"
    reference: Callable[..., Any] | None = None
    """The torch function computing the op (dtype probes, kernel tests);
    resolved lazily from `lowers_to` when not given."""

    def kernel_step(self, properties: Mapping[str, Attribute]) -> str | None:
        """The program (binary op: the step) computing an op with these
        properties (`op.properties`, or a `batch.pointwise`'s member
        properties), or None."""
        if self.kernel is None or isinstance(self.kernel, str):
            return self.kernel
        return self.kernel(properties)

    def reference_function(self) -> Callable[..., Any] | None:
        """The torch function computing the op (`reference`, else the
        function `lowers_to` names)."""
        if self.reference is not None:
            return self.reference
        if self.lowers_to is None:
            return None
        return resolve_target(self.lowers_to)


def unary_facts(
    torch_name: str,
    *,
    nn_activation: str | None = None,
    functions: Iterable[str] = (),
    methods: Iterable[str] | None = None,
    modules: Iterable[str] = (),
    aten: Iterable[str] | None = None,
    arguments: Iterable[Argument] = (),
    lowers_to: str | None = None,
    cost: CostClass = "pointwise",
    kernel: str | ProgramChoice | None = None,
    reference: Callable[..., Any] | None = None,
    fusion: FusionKind | None = "unary-pointwise",
    custom: Iterable[str] = (),
) -> OpFacts:
    """The facts of a unary pointwise op named `torch_name` in torch: by
    default raised from `torch.<name>`, the `Tensor.<name>` method and aten
    `<name>.default`, and lowered to the first function spelling.

    `nn_activation` names the class of an activation module of
    `torch.nn.modules.activation` (`"SiLU"`): the op is then raised, by
    default, from `torch.nn.functional.<name>`, `torch._C._nn.<name>` and
    that module (besides `modules`), and from no `Tensor` method."""
    if nn_activation is not None:
        functions = tuple(functions) or (
            f"torch.nn.functional.{torch_name}", f"torch._C._nn.{torch_name}",
        )
        methods = () if methods is None else methods
        modules = (f"torch.nn.modules.activation.{nn_activation}", *modules)
    functions = tuple(functions) or (f"torch.{torch_name}",)
    return OpFacts(
        spellings=Spellings(
            functions=functions,
            methods=(torch_name,) if methods is None else tuple(methods),
            modules=tuple(modules),
            aten=(f"{torch_name}.default",) if aten is None else tuple(aten),
            arguments=tuple(arguments),
            custom=tuple(custom),
        ),
        lowers_to=lowers_to or functions[0],
        fusion=fusion,
        kernel=kernel,
        cost=cost,
        reference=reference,
    )


def binary_facts(
    torch_name: str, *, custom: Iterable[str], kernel: str | ProgramChoice | None = None
) -> OpFacts:
    """The facts of a binary pointwise op named `torch_name` in torch: raised
    from its `custom` spellings (by `raise-fx`'s binary binder, which reads
    the scalar and reversed forms), lowered to `torch.<name>`, fused and
    costed as a binary pointwise op."""
    return OpFacts(
        spellings=Spellings(custom=tuple(custom)),
        lowers_to=f"torch.{torch_name}",
        fusion="binary-pointwise",
        cost="binary",
        kernel=kernel,
    )


def at_defaults(step: str, **defaults: float) -> ProgramChoice:
    """A `kernel` choice for a program step that computes the op only with
    the given properties at these values (the values a program step
    assumes): `step` for such an op, None for any other. An absent
    property is at its default."""

    def kernel(properties: Mapping[str, Attribute]) -> str | None:
        for name, value in defaults.items():
            attr = properties.get(name)
            if attr is None:
                continue
            number = getattr(attr, "value", attr)  # FloatAttr -> its FloatData
            if getattr(number, "data", None) != value:
                return None
        return step

    kernel.__name__ = f"{step}_at_defaults"
    return kernel


def resolve_target(qualified: str) -> Callable[..., Any]:
    """The Python object a qualified FX target names (`torch.nn.functional.layer_norm`)."""
    import importlib

    module_name, _, attr = qualified.rpartition(".")
    parts = module_name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in [*parts[cut:], attr]:
            obj = getattr(obj, part)
        return obj
    raise LookupError(f"cannot resolve '{qualified}'")


class HasFacts:
    """Mixin marking op classes that declare `FACTS` (all torch ops do)."""

    FACTS: ClassVar[OpFacts | None] = None


_FACTS_BY_NAME: dict[str, OpFacts] = {}


def declare_facts(op_name: str, facts: OpFacts) -> None:
    """Record the facts of the op called `op_name` (done by `TorchOp` for
    every op class that declares them), for code that knows an op by name."""
    _FACTS_BY_NAME[op_name] = facts


def declared_facts(op_name: str) -> OpFacts | None:
    """The facts declared by the op class called `op_name`, or None."""
    return _FACTS_BY_NAME.get(op_name)


def facts_of(op: Operation | type[Operation]) -> OpFacts | None:
    """The declared facts of an op (or op class), None for ops of other dialects."""
    cls = op if isinstance(op, type) else type(op)
    return getattr(cls, "FACTS", None)

"""`raise-fx`: turn known fx ops into operator-level (`torch` dialect) ops.

Every spelling of the same operation becomes one canonical op: `torch.split`,
`Tensor.split`, `aten.split.Tensor` and `aten.split_with_sizes.default` all
become `torch.split` with explicit sections and a non-negative dim; `F.linear`,
an `nn.Linear` submodule call, `aten.linear` and `aten.addmm(b, x, aten.t(w))`
all become `torch.linear`. Positional and keyword arguments are bound by
Python itself: each known target has a small *binder* whose signature mirrors
the torch signature, called with the op's decoded arguments. The binders of
ops that declare their spellings (`FACTS.spellings` in the torch dialect:
the unary pointwise ops) are built from the declaration (`DeclaredBinder`);
the hand-written ones below bind what is specific to an op (split, linear,
clamp, the binary ops, relu6 as hardtanh...).

What is left alone (the op stays an `fx` op, untouched):

* unknown targets, in-place ops (`add_`, `operator.iadd`, `inplace=True`) and
  calls with an `out=` argument (no binder accepts it);
* arguments that are not literals where the op needs one (a size computed by
  `x.size(0)` is an SSA `!fx.value`), and operands or results without a tensor
  type;
* split/unbind/chunk (and `aten.native_layer_norm`) whose tuple result has a
  use other than `operator.getitem` with a constant index (for
  `native_layer_norm`: other than index 0);
* submodule calls whose `fx.call_module` op lacks the `module_attrs`
  description (see `describe_module`), e.g. modules with hooks;
* calls whose declared result type contradicts the operator's type
  inference: counted ("ops kept: declared type contradicts the operator")
  and reported as a remark. Text input never gets here: optimus-opt and
  optimus-translate refuse it first with `verify_declared_types`, a located
  error; an imported graph has torch's own types, so there it is our
  inference that is wrong, and the op is safest left alone.

Submodule calls are raised from the `module_type` and `module_attrs`
attributes that the importer records on `fx.call_module`; parameters are read
through new `fx.get_attr "<path>.weight"` ops.

One walk over each graph, dictionary dispatch: linear in the graph size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    TupleType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from optimus_ir.dialects import fx
from optimus_ir.foundation.rewriting import patch_operands
from optimus_ir.foundation.statistics import current_pass_context
from optimus_ir.foundation.types import DYNAMIC


# ---------------------------------------------------------------------------
# Submodule descriptions (recorded by the importer on fx.call_module)
# ---------------------------------------------------------------------------


from optimus_ir.dialects.literals import describe_module  # noqa: E402
from optimus_ir.passes.raise_binding import (
    Binder,
    FUNCTIONS,
    METHODS,
    MODULES,
    Raiser,
    Skip,
    _convert,
    decode,
)
from optimus_ir.passes import raise_binders  # noqa: F401 - importing it registers the binders


def annotate_modules(module_op: ModuleOp, owner: Any) -> None:
    """Record `module_attrs` on every fx.call_module op from the owner module
    (what the importer is expected to do; kept here for IR imported without)."""
    cache: dict[str, DictionaryAttr | None] = {}
    for op in module_op.walk():
        if isinstance(op, fx.CallModuleOp) and "module_attrs" not in op.attributes:
            path = op.target.data
            if path not in cache:
                cache[path] = describe_module(owner.get_submodule(path))
            if cache[path] is not None:
                op.attributes["module_attrs"] = cache[path]  # type: ignore[assignment]
                if "module_type" not in op.attributes:
                    cls = type(owner.get_submodule(path))
                    op.attributes["module_type"] = StringAttr(
                        f"{cls.__module__}.{cls.__qualname__}"
                    )


def _module_dict(attr: DictionaryAttr) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in attr.data.items():
        if isinstance(value, ArrayAttr):
            out[key] = [_convert(v) for v in value.data]
        else:
            out[key] = _convert(value)
    return out


# ---------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------

_GETITEM = frozenset({"operator.getitem", "_operator.getitem"})


def _tuple_uses(value: SSAValue, count: int) -> list[tuple[Operation, int]] | None:
    """(getitem op, index) for every use, or None if one use is anything else."""
    found: list[tuple[Operation, int]] = []
    for use in value.uses:
        user = use.operation
        if not (
            type(user) is fx.CallFunctionOp
            and user.target.data in _GETITEM
            and len(user.operands) == 1
            and not user.kwargs.data
            and len(user.args.data) == 2
            and isinstance(user.args.data[1], IntAttr)
        ):
            return None
        index = user.args.data[1].data  # type: ignore[attr-defined]
        if index < 0:
            index += count
        if not 0 <= index < count:
            return None
        found.append((user, index))
    return found


def _binder_for(op: Operation, module_cache: dict[Attribute, Any]) -> tuple[Binder, tuple] | None:
    kind = type(op)
    if kind is fx.CallFunctionOp:
        binder = FUNCTIONS.get(op.target.data)  # type: ignore[attr-defined]
        return (binder, ()) if binder is not None else None
    if kind is fx.CallMethodOp:
        binder = METHODS.get(op.target.data)  # type: ignore[attr-defined]
        return (binder, ()) if binder is not None else None
    if kind is fx.CallModuleOp:
        type_attr = op.attributes.get("module_type")
        attrs = op.attributes.get("module_attrs")
        if not isinstance(type_attr, StringAttr) or not isinstance(attrs, DictionaryAttr):
            return None
        binder = MODULES.get(type_attr.data)
        if binder is None:
            return None
        decoded = module_cache.get(attrs)
        if decoded is None:
            decoded = module_cache[attrs] = _module_dict(attrs)
        return binder, (op.target.data, decoded)  # type: ignore[attr-defined]
    return None


def _is_binding_error(error: TypeError) -> bool:
    """The call's arguments do not fit the binder's signature (an arity or
    keyword we do not model): the explicit "cannot raise this op" signal of
    Python's own binding. Python raises it before the binder's frame exists,
    so the traceback holds only the caller's frame; a TypeError raised inside
    a binder or builder is a bug and must reach the tests."""
    trace = error.__traceback__
    return trace is not None and trace.tb_next is None


def _forward(subst: dict[SSAValue, SSAValue], old: SSAValue, new: SSAValue) -> None:
    """Record that the uses of `old` read `new` from now on (as
    `replace_all_uses_with` would, name hint included)."""
    if new.name_hint is None:
        new.name_hint = old.name_hint
    subst[old] = new


def raise_block(block: Block, contradictions: list[Operation] | None = None) -> int:
    """Raise every known fx op of `block`; returns how many ops were raised.
    An op whose declared type contradicts the operator's type inference is
    kept as it is and appended to `contradictions` (text input is refused
    before any pass by `verify_declared_types`; an imported graph has
    torch's own types, so there the inference is what is wrong).

    Replaced values are not patched into their users one use at a time: the
    walk keeps a substitution map and rewrites each later op's operands once,
    when it reaches the op (its users come after a value in the block); the
    replaced fx ops are erased at the end, once nothing reads them.
    """
    r = Raiser()
    r.block = block
    module_cache: dict[Attribute, Any] = {}
    subst: dict[SSAValue, SSAValue] = {}
    dead: list[Operation] = []
    erased: set[Operation] = set()
    raised = 0
    for op in list(block.ops):
        if subst:
            patch_operands(op, subst)
        if op in erased:
            continue
        found = _binder_for(op, module_cache)
        if found is None:
            continue
        binder, prefix = found
        out = op.results[0].type
        getitems: list[tuple[Operation, int]] | None = None
        if isinstance(out, TupleType):
            getitems = _tuple_uses(op.results[0], len(out.types.data))
            if getitems is None:
                continue
            r.used = {i for _, i in getitems}
        r.op = op  # type: ignore[assignment]
        r.out = out
        args, kwargs = decode(op)  # type: ignore[arg-type]
        try:
            result = binder(r, *prefix, *args, **kwargs)
        except Skip:
            continue
        except TypeError as error:
            if not _is_binding_error(error):
                raise
            continue
        if isinstance(result, SSAValue):  # folds to an existing value
            _forward(subst, op.results[0], result)
            dead.append(op)
            raised += 1
            continue
        chain: list[Operation] | None = None
        if isinstance(result, tuple):
            new_op, pieces = result
        elif isinstance(result, list):
            chain, new_op, pieces = result, result[-1], None
        else:
            new_op, pieces = result, None
        try:
            for new in chain or (new_op,):
                # the type check only: the IRDL structure holds by construction
                # (and is verified with the whole module after the pass)
                new.verify_types()
        except VerifyException:
            # the fx op's types disagree with what the operator implies: keep it
            for new in reversed(chain or [new_op]):
                r.transposed.pop(new.results[0], None)
                new.erase()
            if contradictions is not None:
                contradictions.append(op)
            continue
        for new in chain or (new_op,):
            new.location = op.location
        block.insert_ops_before(chain or [new_op], op)
        if pieces is None:
            if op.results[0].name_hint:
                new_op.results[0].name_hint = op.results[0].name_hint
            _forward(subst, op.results[0], new_op.results[0])
        else:
            assert getitems is not None
            for user, index in getitems:
                piece = pieces[index]
                assert piece is not None
                if user.results[0].name_hint:
                    piece.name_hint = user.results[0].name_hint
                _forward(subst, user.results[0], piece)
                erased.add(user)
        dead.append(op)
        if getitems:
            dead.extend(user for user, _ in getitems)
        raised += 1
    # erased users first: an op's getitems are listed after it, and every
    # other dead op after the ops it reads
    for op in reversed(dead):
        block.erase_op(op)
    # transposes folded into linear ops are dead now
    for t in r.transpose_ops:
        if t.parent is block and t.results[0].first_use is None:
            block.erase_op(t)
    return raised


class _DetachedRaiser(Raiser):
    """A `Raiser` that leaves the IR as it is: a module parameter is read
    through an `fx.get_attr` op that is not inserted (`declared_type_error`
    erases it afterwards)."""

    def __init__(self) -> None:
        super().__init__()
        self.detached: list[Operation] = []

    def remark(self, message: str) -> None:
        """Nothing: this raiser only checks types; raise-fx itself reports."""

    def read_param(self, target: str, type: TensorType) -> SSAValue:
        """A detached `fx.get_attr` of `target`, kept for erasing."""
        get = fx.GetAttrOp(target, type)
        self.detached.append(get)
        return get.result


def _types_agree(declared: Attribute, actual: Attribute) -> bool:
    """The same type, up to dynamic (`?`) sizes on either side."""
    if declared == actual:
        return True
    if not (isinstance(declared, TensorType) and isinstance(actual, TensorType)):
        return False
    have, want = declared.get_shape(), actual.get_shape()
    return (
        len(have) == len(want)
        and all(x == DYNAMIC or y == DYNAMIC or x == y for x, y in zip(have, want))
        and declared.element_type == actual.element_type
        and declared.encoding == actual.encoding
    )


def declared_type_error(op: fx.NodeOp) -> str | None:
    """Why the result type `op` declares contradicts the operator it calls,
    or None.

    The operator is what `raise-fx` would make of the op: its binder is run
    without changing the IR, and the torch-dialect op(s) it builds check the
    declared type against their type inference (`TorchOp.verify_types`);
    then they are erased. None as well for an op raise-fx cannot raise
    (unknown target, symbolic arguments, an arity we do not model, a tuple
    used other than through getitem): nothing is known about its type. A
    binder that refuses an op for a reason that involves the declared type
    (a split declared with the wrong number of pieces) is not reported.
    `verify_declared_types` applies it to a whole module.
    """
    found = _binder_for(op, {})
    if found is None:
        return None
    binder, prefix = found
    declared = op.results[0].type
    r = _DetachedRaiser()
    r.op = op
    r.out = declared
    if isinstance(declared, TupleType):
        getitems = _tuple_uses(op.results[0], len(declared.types.data))
        if getitems is None:
            return None
        r.used = {i for _, i in getitems}
    args, kwargs = decode(op)
    built: list[Operation] = []
    try:
        try:
            result = binder(r, *prefix, *args, **kwargs)
        except Skip:
            return None
        except TypeError as error:
            if not _is_binding_error(error):
                raise
            return None
        if isinstance(result, SSAValue):  # the call returns its input
            if _types_agree(declared, result.type):
                return None
            return (
                f"declared result type {declared} contradicts the operator: "
                f"it returns its operand, of type {result.type}"
            )
        if isinstance(result, list):
            built = result
        else:
            built = [result[0] if isinstance(result, tuple) else result]
        for new in built:
            try:
                new.verify_types()
            except VerifyException as error:
                message = str(error).removeprefix(f"'{new.name}' ").strip()
                if len(built) > 1:
                    message = f"{message} (in its '{new.name}')"
                if message.startswith("result"):
                    return f"declared result type {declared} contradicts the operator: {message}"
                return f"the operator does not accept its operands: {message}"
        return None
    finally:
        # the built ops read the op's operands: drop those uses again
        for new in reversed(built):
            new.erase()
        for get in r.detached:
            get.erase()


def verify_declared_types(module: Operation, context: str = "") -> None:
    """Raise `VerificationError` at every fx call op (at most
    `MAX_VERIFY_ERRORS`) whose declared result type contradicts the operator
    it calls (`declared_type_error`): `torch.cat` of 4x8 and 4x16 declared
    8x8.

    For IR whose types someone wrote: optimus-opt and optimus-translate run
    it on their input after `verify_module`. It is not part of the ops'
    `verify_`: a graph imported from torch carries torch's own types, and
    running every binder at each verification would make verifying an
    fx graph about ten times slower (0.3 ms per call op)."""
    from optimus_ir.foundation.diagnostics import MAX_VERIFY_ERRORS, Diagnostic, Severity, VerificationError

    errors: list[Diagnostic] = []
    # The answer depends only on what the binder reads: the op's kind,
    # target, literal arguments, attributes (module calls), operand and
    # result types, and which pieces of a tuple are used. Graphs repeat a
    # handful of such calls (a tower model: the same linear 64 times), so
    # each is inferred once.
    known: dict[tuple[Any, ...], str | None] = {}
    for op in module.walk():
        if not isinstance(op, fx.NodeOp):
            continue
        result = op.results[0]
        uses: tuple[int, ...] = ()
        if isinstance(result.type, TupleType):
            getitems = _tuple_uses(result, len(result.type.types.data))
            uses = (-1,) if getitems is None else tuple(sorted({i for _, i in getitems}))
        key = (
            type(op), op.target, op.args, op.kwargs, tuple(op.attributes.items()),
            tuple(v.type for v in op.operands), result.type, uses,
        )
        if key in known:
            problem = known[key]
        else:
            problem = known[key] = declared_type_error(op)
        if problem is not None:
            errors.append(
                Diagnostic(Severity.ERROR, f"'{op.name}' op calling '{op.target.data}': {problem}", op)
            )
            if len(errors) >= MAX_VERIFY_ERRORS:
                break
    if errors:
        raise VerificationError(errors, context)


@dataclass(frozen=True)
class RaiseFxPass(ModulePass):
    """Raise known `fx` ops into canonical `torch`-dialect ops.

    All spellings of an operation (torch function, Tensor method,
    torch.nn.functional, nn module class, operator.*, ATen overloads) become
    one canonical op with literal attributes and non-negative dims; split,
    chunk and unbind get one result per piece in place of their getitem
    users. Unknown, in-place or side-effecting calls, and calls whose needed
    literals are symbolic, stay fx ops.
    """

    name = "raise-fx"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        record = current_pass_context(self.name).record
        contradictions: list[Operation] = []
        for graph in list(op.ops):  # graphs are top-level; their blocks change
            if isinstance(graph, fx.GraphOp):
                record.bump("ops raised", raise_block(graph.block, contradictions))
        if contradictions:  # never silent: --pass-statistics and --remarks show them
            record.bump("ops kept: declared type contradicts the operator", len(contradictions))
            from optimus_ir.foundation.diagnostics import emit_remark

            for kept in contradictions:
                why = declared_type_error(kept) or "its declared result type contradicts the operator"
                emit_remark(kept, f"kept as an fx op: {why}")

"""`pointwise-of-cat`: a pointwise op of a cat that is sliced back at the cat's
boundaries runs on the cat's inputs instead.

PyTorch's `merge_getitem_cat` / `mutate_cat` (torch/_inductor/fx_passes/
split_cat.py) merge a split's getitems that a cat joins again on the split
dim; `split-cat-simplify`'s core pattern `CatOfSplitPieces` does that job
here. What those passes leave is the mirror image, common where a model
concatenates features to apply one activation and then takes them apart
again:

    y = relu(cat([a, b], 1));  p, q = y[:, :4], y[:, 4:]   ->   p, q = relu(a), relu(b)

The cat (a copy), the pointwise op on the whole and the slices (k + 2 ops)
become one pointwise op per piece that is read (k ops). Each output element
is the same function of the same input element, so the values are
bitwise the same.

Taken when: the op is elementwise, pure (no random state, no effects) and
reads one tensor (a unary op, or a binary op with a Python number); the cat
is read only by it and keeps its inputs' dtype; every user of the op's
result is a step-1 `slice` on the cat dim exactly at one input's boundaries,
or a `split` on the cat dim whose sections are the cat's. Left alone, with a
remark: an input or the result written in place (the pointwise op would
read the input at another point than the cat did), or a piece that a user
reads by its strides, or that is returned, when the new value would not be
laid out like the slice it replaces (a returned one would need a restride).
"""

from __future__ import annotations


from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint

from optimus_ir.analysis import (
    AliasAnalysis,
    alias_class,
    class_is_mutated,
    fresh_reaches_output,
    layout_insensitive,
    same_layout,
)
from optimus_ir.dialects import torch as t
from optimus_ir.passes.canonicalization_patterns.split_cat_common import RemarkOnce, offsets, only_user, sections_of, static_sizes, tensor_type
from optimus_ir.foundation.traits import is_elementwise, is_mergeable


def _piece_users(result: SSAValue, cat: t.CatOp) -> list[tuple[SSAValue, int]] | None:
    """Each value read from `result` (`f` of `cat`) paired with the index of
    the cat input it equals: slices at one input's bounds and pieces of a
    split at the cat's sections; None when some user is anything else or an
    input's size along the cat's dim is not static. (A slice starting where
    an empty input does is of the next input: the one it ends with.)"""
    dim = cat.dim.data
    sizes = static_sizes(list(cat.inputs), dim)
    if sizes is None:
        return None
    bounds = offsets(sizes)
    index_of_start = {start: i for i, start in enumerate(bounds[:-1])}
    pairs: list[tuple[SSAValue, int]] = []
    for use in result.uses:
        user = use.operation
        if isinstance(user, t.SliceOp):
            i = index_of_start.get(user.start.data)
            if (
                user.dim.data != dim
                or user.step.data != 1
                or i is None
                or user.end.data != bounds[i + 1]
            ):
                return None
            pairs.append((user.result, i))
        elif isinstance(user, t.SplitOp):
            if user.dim.data != dim or offsets(sections_of(user)) != bounds:
                return None
            pairs.extend((piece, i) for i, piece in enumerate(user.results) if piece.first_use is not None)
        else:
            return None
    return pairs


class PointwiseOfCat(RewritePattern):
    """`f(cat([x_1, ..., x_k], d))` read only through slices/split pieces at
    the cat's boundaries -> `f(x_i)` for each piece read (see the module
    docstring for the conditions)."""

    name = "pointwise-of-cat"

    def __init__(self, aliases: AliasAnalysis | None = None) -> None:
        self.aliases = aliases
        self.remark = RemarkOnce()

    def _mutated(self, value: SSAValue) -> bool:
        if self.aliases is not None:
            return self.aliases.is_mutated(value)
        return class_is_mutated(alias_class(value))

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if len(op.operands) != 1 or len(op.results) != 1:
            return
        cat = op.operands[0].owner
        if not isinstance(cat, t.CatOp) or len(cat.inputs) < 2:
            return
        if not is_elementwise(op) or not is_mergeable(op) or only_user(cat.result) is not op:
            return
        result = op.results[0]
        out_type = tensor_type(result)
        cat_type = tensor_type(cat.result)
        if out_type is None or cat_type is None or result.first_use is None:
            return
        pairs = _piece_users(result, cat)
        if pairs is None:
            return
        inputs = list(cat.inputs)
        input_types = [tensor_type(x) for x in inputs]
        if any(ty is None or ty.element_type != cat_type.element_type for ty in input_types):
            return  # the cat converts a dtype: f would see other values
        if any(self._mutated(x) for x in inputs) or self._mutated(result):
            self.remark(
                op,
                f"{self.name}: {op.name} of torch.cat left alone: a tensor involved is "
                "written in place",
            )
            return
        for value, i in pairs:
            # A returned piece keeps its strides: output-layout would restride
            # a new value at the cost of another op, so that is no gain.
            if not same_layout(value, inputs[i]) and (
                not layout_insensitive(value) or fresh_reaches_output(value, self.aliases)
            ):
                self.remark(
                    op,
                    f"{self.name}: {op.name} of torch.cat left alone: a user of a piece "
                    "depends on strides the piece would not keep (or is returned with them)",
                )
                return
        # One f per input that is read, made where f was (after the cat read
        # the inputs; nothing writes them in between: checked above).
        made: dict[int, Operation] = {}
        for _, i in pairs:
            if i in made:
                continue
            ty = input_types[i]
            assert ty is not None
            made[i] = type(op).create(
                operands=[inputs[i]],
                result_types=[ty.__class__(out_type.element_type, ty.get_shape(), ty.encoding)],
                properties=dict(op.properties),
                attributes=dict(op.attributes),
            )
        rewriter.insert([made[i] for i in sorted(made)], InsertPoint.before(op))
        input_of = dict(pairs)
        for user in list({id(u.operation): u.operation for u in result.uses}.values()):
            if isinstance(user, t.SliceOp):
                rewriter.replace(user, [], [made[input_of[user.result]].results[0]])
            else:
                rewriter.replace(
                    user,
                    [],
                    [made[i].results[0] if i in made else None for i in range(len(user.results))],
                )
        rewriter.erase(op)
        rewriter.erase(cat)


__all__ = ["PointwiseOfCat"]

"""`optimus_ir.analysis.strided_pieces`: pieces of splits seen as one
strided view, and the identity cache of a split's section offsets."""

from __future__ import annotations

import torch
import torch.fx

from optimus_ir.analysis import strided_pieces
from optimus_ir.analysis.strided_pieces import piece_of, regular_pieces, section_starts
from optimus_ir.dialects import torch as T
from optimus_ir.translate.importer import import_graph
from optimus_ir.pipeline import run_pipeline


class TwoSplits(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        a0, a1, a2, a3 = torch.split(x, [2, 2, 2, 3], 1)
        b0, b1, b2 = torch.split(y, [3, 3, 3], 1)
        return torch.cat([a0 * 2, a1 * 2, a2 * 2, a3 * 2, b0 * 3, b1 * 3, b2 * 3], 1)


def splits() -> list[T.SplitOp]:
    gm = torch.fx.symbolic_trace(TwoSplits())
    program = import_graph(gm, (torch.randn(4, 9), torch.randn(4, 9)))
    run_pipeline(program.module, "raise-fx")
    found = [op for op in program.module.walk() if isinstance(op, T.SplitOp)]
    assert len(found) == 2
    return found


def test_pieces_of_each_split_are_read_from_their_own_sections() -> None:
    first, second = splits()
    assert section_starts(first.sections) == [0, 2, 4, 6]
    assert section_starts(second.sections) == [0, 3, 6]
    # asked again (cached), the answers are the same objects' answers
    assert section_starts(first.sections) == [0, 2, 4, 6]
    assert regular_pieces(list(first.results[:3])) == (first.input, 1, 0, 2, 2)
    assert regular_pieces(list(second.results)) == (second.input, 1, 0, 3, 3)
    # the last piece of the first split is wider: not one strided view
    assert regular_pieces(list(first.results)) is None
    assert piece_of(first.results[3], {}) == (first.input, 1, 6, 3)


def test_the_cache_is_bounded_and_keyed_by_identity() -> None:
    first, second = splits()
    strided_pieces._STARTS.clear()
    for _ in range(strided_pieces._STARTS_LIMIT + 5):
        # equal attributes that are distinct objects are distinct entries
        section_starts(type(first.sections)(first.sections.data))
    assert len(strided_pieces._STARTS) <= strided_pieces._STARTS_LIMIT
    assert section_starts(second.sections) == [0, 3, 6]

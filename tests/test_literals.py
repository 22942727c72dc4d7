"""optimus_ir.dialects.literals: the one translation between Python values and fx literals."""

from __future__ import annotations

import math

import pytest
import torch

from optimus_ir.dialects import fx
from optimus_ir.dialects.literals import NOT_SCALAR, LiteralError, decode_literal, decode_scalar, encode_literal
from optimus_ir.foundation.objects import ObjectTable


def _decode(attr, table: ObjectTable):
    return fx.map_refs(attr, lambda i: f"ref{i}", lambda leaf: decode_literal(leaf, table.resolve))


@pytest.mark.parametrize(
    "value",
    [
        0, -7, 2**70, 1.5, -0.0, math.inf, True, False, "s", None,
        [1, 2.0, "x"], (1, (2, 3)), {"a": 1, "b": [None]}, slice(1, None, 2),
        torch.float16, torch.device("cpu"), Ellipsis, torch.channels_last,
    ],
)
def test_round_trip(value) -> None:
    table = ObjectTable()
    attr = encode_literal(value, name_object=table.name_of)
    back = _decode(attr, table)
    assert back == value or (isinstance(value, float) and math.copysign(1, back) == math.copysign(1, value))
    assert type(back) is type(value) or isinstance(value, dict)


def test_bool_is_not_int_and_negative_zero_is_kept() -> None:
    assert decode_scalar(encode_literal(True)) is True
    assert decode_scalar(encode_literal(1)) == 1 and decode_scalar(encode_literal(1)) is not True
    assert math.copysign(1.0, decode_scalar(encode_literal(-0.0))) == -1.0
    assert decode_scalar(encode_literal(math.nan)) != decode_scalar(encode_literal(math.nan))
    assert decode_scalar(encode_literal(torch.float32)) is NOT_SCALAR


def test_refs_go_through_the_callback() -> None:
    marker = object()
    attr = encode_literal([marker, (3, marker)], ref=lambda v: fx.ref(0) if v is marker else None)
    assert fx.map_refs(attr, lambda i: ("ref", i), lambda leaf: decode_scalar(leaf)) == [("ref", 0), (3, ("ref", 0))]


def test_unknown_object_without_a_table_is_an_error() -> None:
    with pytest.raises(LiteralError, match="no fx literal"):
        encode_literal(object())
    with pytest.raises(LiteralError, match="not a literal"):
        decode_literal(fx.ref(0), ObjectTable().resolve)

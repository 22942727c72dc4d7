"""The in-place spellings `maximize-value-semantics` rewrites are derived,
not listed: from torch's schemas (an overload whose schema writes
`Tensor(a!) self`) and from the op table's facts. These tests hold the
derivation to what torch itself says."""

from __future__ import annotations

import pytest
import torch

from optimus_ir.analysis import alias_facts
from optimus_ir.dialects.torch import ALL_OPS
from optimus_ir.dialects.torch.facts import INPLACE
from optimus_ir.passes.value_semantics import FUNCTIONAL_INPLACE_POSITION

_F = "torch.nn.functional."


def _schemas(name: str) -> list[str]:
    """torch's own schema text of every overload of `aten::<name>`."""
    return [str(s) for s in torch._C._jit_get_schemas_for_operator(f"aten::{name}")]


@pytest.mark.parametrize("name", ["add_", "mul_", "clamp_", "relu_", "sigmoid_", "div_"])
def test_an_in_place_spelling_is_one_whose_schema_writes_self(name: str) -> None:
    schemas = [s for s in _schemas(name) if "Tensor(a!) self" in s]
    assert schemas, f"torch has no overload of {name} writing `Tensor(a!) self`"
    assert alias_facts.writes_only_self(name)
    assert alias_facts.functional_form(name) == name[:-1]


@pytest.mark.parametrize("name", ["add", "mul", "clamp", "relu"])
def test_an_out_of_place_spelling_is_not_in_place(name: str) -> None:
    assert _schemas(name)
    assert not any("(a!) self" in s for s in _schemas(name))  # out= forms write `out` only
    assert not alias_facts.writes_only_self(name)
    assert alias_facts.functional_form(name) is None


def test_metadata_and_random_in_place_forms_have_no_functional_twin() -> None:
    # t_ writes self too, but changes its metadata (inplace_view); bernoulli_ draws numbers
    assert any("Tensor(a!) self" in s for s in _schemas("t_"))
    assert alias_facts.functional_form("t_") is None
    assert any("Tensor(a!) self" in s for s in _schemas("bernoulli_"))
    assert alias_facts.functional_form("bernoulli_") is None


def _method_spellings() -> list[tuple[str, str]]:
    return sorted(
        {(op.name, method) for op in ALL_OPS for method in op.FACTS.spellings.methods}
    )


@pytest.mark.parametrize(("op_name", "method"), _method_spellings())
def test_the_in_place_form_of_a_raised_method_is_derived(op_name: str, method: str) -> None:
    """Every Tensor method the op table raises whose `<method>_` writes only
    `self` (torch's schema says so, and it is no metadata or random form)
    is rewritten to that method: the in-place spelling follows from the facts
    and the schema, no list names it."""
    in_place = method + "_"
    writes_self = any("Tensor(a!) self" in s for s in _schemas(in_place))
    derived = alias_facts.functional_form(in_place)
    if not writes_self:
        assert derived is None
    elif derived is None:
        assert {"inplace_view", "nondeterministic_seeded"} & {
            str(tag).rpartition(".")[2] for tag in alias_facts._tags(in_place)
        }, f"{in_place} writes self but has no functional form"
    else:
        assert derived == method


def test_every_raised_function_with_an_inplace_flag_is_known_to_value_semantics() -> None:
    """The op table's functions that take `inplace=` (`INPLACE` in their
    facts) are exactly torch.nn.functional's that have the parameter:
    value-semantics reads the position from torch's signature."""
    flagged = {
        spelling[len(_F):]
        for op in ALL_OPS
        if INPLACE in op.FACTS.spellings.arguments
        for spelling in op.FACTS.spellings.functions
        if spelling.startswith(_F)
    }
    assert flagged, "the op table declares no `inplace` flag"
    assert flagged <= set(FUNCTIONAL_INPLACE_POSITION)
    assert "relu" in flagged and "add" not in FUNCTIONAL_INPLACE_POSITION

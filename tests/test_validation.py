"""Differential validation (per pass) and rewrite bisection."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import optimus_ir
from optimus_ir.translate.parsing import parse_module
from optimus_ir.translate.importer import import_graph
from optimus_ir.pipeline import run_pipeline
from plugins import miscompile_passes  # noqa: F401 - registers the test-only passes (test-miscompile, test-fail, ...)
from optimus_ir.pipeline.validation import (
    DifferentialValidator,
    ValidationError,
    bisect_rewrites,
    compare_outputs,
    random_inputs,
)

TANHS = """
builtin.module {
  fx.graph @forward {
    %x = fx.placeholder "x" : tensor<2x4xf32, "cpu">
    %w = fx.get_attr "w" : tensor<4x4xf32, "cpu">
    %l = fx.call_function "torch._C._nn.linear"(%x, %w) : tensor<2x4xf32, "cpu">
    %a = fx.call_function "torch.tanh"(%l) : tensor<2x4xf32, "cpu">
    %b = fx.call_function "torch.tanh"(%a) : tensor<2x4xf32, "cpu">
    %c = fx.call_function "torch.tanh"(%b) : tensor<2x4xf32, "cpu">
    fx.output (%c, %a)
  }
}
"""


class Towers(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lins = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(x, 4, dim=1)
        return torch.cat([torch.tanh(l(p)) for l, p in zip(self.lins, pieces)], dim=1)


def test_compare_outputs_is_dtype_aware() -> None:
    a = torch.ones(4)
    assert compare_outputs([a], [a + 1e-7]) is None  # inside f32 tolerance
    difference = compare_outputs([a], [a + 1e-2])
    assert difference is not None and difference.index == 0
    assert difference.max_abs_diff == pytest.approx(1e-2, rel=1e-3)
    ints = torch.arange(4)
    assert compare_outputs([ints], [ints + 1]) is not None  # integers must be exact
    bf16 = torch.ones(4, dtype=torch.bfloat16)
    assert compare_outputs([bf16], [bf16 * 1.0078125]) is None  # one bf16 ulp
    shape = compare_outputs([a], [a.view(2, 2)])
    assert shape is not None and "instead of" in shape.description
    nan = torch.tensor([float("nan")])
    assert compare_outputs([nan], [nan.clone()]) is None


def test_random_inputs_are_seeded_and_typed() -> None:
    module = parse_module(TANHS)
    first, second = random_inputs(module, seed=3), random_inputs(module, seed=3)
    assert first[0].shape == (2, 4) and first[0].dtype == torch.float32
    assert torch.equal(first[0], second[0])


def test_validate_each_accepts_a_correct_pipeline() -> None:
    module = parse_module(TANHS)
    validator = DifferentialValidator(module)
    run_pipeline(
        module,
        "raise-fx,cse,dce,lower-to-fx",
        validate_each=lambda p, m: validator.after_pass(p.name, m),
    )
    assert validator.checks == 4


def test_validate_each_names_the_pass_output_and_difference() -> None:
    module = parse_module(TANHS)
    validator = DifferentialValidator(module)
    with pytest.raises(ValidationError) as info:
        run_pipeline(
            module,
            "raise-fx,test-miscompile{nth=1},lower-to-fx",
            validate_each=lambda p, m: validator.after_pass(str(p.spec()), m),
        )
    error = info.value
    assert error.pass_name == "test-miscompile{nth=1}"
    assert error.output_index == 0  # the first output already differs
    assert error.max_abs_diff is not None and error.max_abs_diff > 1e-3
    assert "validation failed after pass 'test-miscompile{nth=1}'" in str(error)


def test_bisection_finds_the_single_wrong_rewrite() -> None:
    reference = DifferentialValidator(parse_module(TANHS, "tanhs.mlir"))
    result = bisect_rewrites(
        lambda: parse_module(TANHS, "tanhs.mlir"),
        "raise-fx,test-miscompile{nth=2}",
        lambda m: reference.check(m, "pipeline"),
    )
    assert result is not None
    assert result.culprit.pattern == "tanh-to-sigmoid"
    assert result.culprit.op_name == "torch.tanh"
    # the third tanh (%c) is on line 9 of the text
    assert result.culprit.location is not None and result.culprit.location.line == 9
    assert result.rewrites_ok == result.culprit.index
    assert "first failing rewrite" in result.format()


def test_bisection_of_a_correct_pipeline_is_none() -> None:
    reference = DifferentialValidator(parse_module(TANHS))
    assert (
        bisect_rewrites(lambda: parse_module(TANHS), "raise-fx,cse,dce", lambda m: reference.check(m, "p"))
        is None
    )


def test_validator_uses_the_real_parameters_of_an_imported_program() -> None:
    model = Towers().eval()
    x = torch.randn(2, 12)
    gm, _ = torch._dynamo.export(model, assume_static_by_default=True)(x)
    program = import_graph(gm, [x])
    validator = DifferentialValidator(program, inputs=[x])
    torch.testing.assert_close(validator.reference[0], model(x), rtol=0, atol=0)


def test_optimize_validate_runs_after_every_pass() -> None:
    model = Towers().eval()
    x = torch.randn(2, 12)
    optimized = optimus_ir.optimize(model, [x], validate=True)
    torch.testing.assert_close(optimized(x), model(x), rtol=0, atol=0)
    assert "validation setup" in optimized.optimus_report.phase_seconds


def test_optimize_validate_catches_a_miscompile() -> None:
    model = Towers().eval()
    x = torch.randn(2, 12)
    with pytest.raises(ValidationError, match="test-miscompile"):
        optimus_ir.optimize(model, [x], "raise-fx,test-miscompile{nth=1},lower-to-fx", validate=True)

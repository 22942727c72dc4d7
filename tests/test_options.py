"""`OptimizeOptions`: one set of knobs for `optimize()`, the torch.compile
backend and the Inductor hook; the environment read in one place
(`optimus_ir.foundation.environment.environment`); pass options typed `Literal[...]`."""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import pytest
import torch

import optimus_ir
from optimus_ir.foundation.diagnostics import OptimusError
from optimus_ir.options import (
    ENVIRONMENT_VARIABLES,
    Environment,
    OptimizeOptions,
    environment,
    literal_option_problems,
)
from optimus_ir.translate.parsing import parse_module
from optimus_ir.pipeline import PipelineError, parse_pipeline, run_pipeline

REPO = Path(__file__).resolve().parent.parent

PLAIN = "raise-fx,split-cat-simplify,lower-to-fx"


class Towers(torch.nn.Module):
    """Four parallel linear+relu towers on the pieces of one split."""

    def __init__(self) -> None:
        super().__init__()
        self.towers = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(x, 4, dim=1)
        return torch.cat([torch.relu(t(p)) for t, p in zip(self.towers, pieces)], dim=1)


def towers() -> tuple[Towers, torch.Tensor]:
    torch.manual_seed(0)
    return Towers().eval(), torch.randn(3, 16)


# --- the options object -------------------------------------------------------------------


def test_defaults_and_typed_choices() -> None:
    options = OptimizeOptions()
    assert options.pipeline is None and options.inner == "inductor" and options.kernels == "auto"
    assert options.describe() == ""
    assert OptimizeOptions(kernels="torch", freeze=True).describe() == "freeze=True, kernels='torch'"
    with pytest.raises(ValueError, match="option 'kernels' must be one of 'auto', 'triton', 'torch', not 'cuda'"):
        OptimizeOptions(kernels="cuda")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="option 'cost_model' must be one of"):
        OptimizeOptions(cost_model="cheap")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown inner compiler 'tvm'"):
        OptimizeOptions(inner="tvm")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'check_speed' must be True, False or None"):
        OptimizeOptions(check_speed="no")  # type: ignore[arg-type]
    with pytest.raises(PipelineError, match="unknown pass 'nope'"):
        OptimizeOptions(pipeline="nope")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        options.freeze = True  # type: ignore[misc]


def test_knobs_that_do_not_apply_to_an_entry_point_are_refused() -> None:
    model, x = towers()
    with pytest.raises(TypeError, match="'inner' is not an option of optimize"):
        optimus_ir.optimize(model, [x], options=OptimizeOptions(inner="eager"))
    with pytest.raises(TypeError, match="'check_speed' is not an option of the torch.compile backend"):
        optimus_ir.backend(check_speed=False)
    with pytest.raises(TypeError, match="'check_speed' is not an option inside Inductor"):
        optimus_ir.inductor_pass(options=OptimizeOptions(check_speed=True))
    with pytest.raises(TypeError, match="'freeze' is not an option inside Inductor"):
        optimus_ir.inductor_pass(options=OptimizeOptions(freeze=True))
    with pytest.raises(TypeError, match="not both"):
        optimus_ir.optimize(model, [x], options=OptimizeOptions(), freeze=True)
    with pytest.raises(TypeError, match="not both"):
        optimus_ir.backend(options=OptimizeOptions(), remarks=True)


def test_one_options_object_for_the_three_entry_points() -> None:
    options = OptimizeOptions(pipeline=PLAIN, remarks=True, strict=True)
    # keywords build the same object
    assert optimus_ir.backend(pipeline=PLAIN, remarks=True, strict=True).options == options
    assert optimus_ir.backend(options=options).options is options
    assert optimus_ir.inductor_pass(options=options).options is options
    assert optimus_ir.inductor_pass(pipeline=PLAIN, remarks=True, strict=True).options == options
    assert optimus_ir.OptimizeOptions is OptimizeOptions
    assert optimus_ir.BackendOptions is OptimizeOptions  # the old name still imports

    model, x = towers()
    by_keywords = optimus_ir.optimize(model, [x], PLAIN, strict=True)
    by_options = optimus_ir.optimize(model, [x], options=options)
    assert by_options.optimus_report.pipeline == by_keywords.optimus_report.pipeline == PLAIN
    torch.testing.assert_close(by_options(x), model(x))


def test_pass_knobs_reach_the_pipeline_of_every_entry_point() -> None:
    """`kernels` and `cost_model` set the options of lower-batch and
    batch-fusion where the pipeline leaves them at their defaults."""
    options = OptimizeOptions(kernels="torch", cost_model="none")
    text = options.pipeline_to_run()
    assert text is not None
    (fusion,) = [p for p in parse_pipeline(text) if p.name == "batch-fusion"]
    (lower,) = [p for p in parse_pipeline(text) if p.name == "lower-batch"]
    assert (fusion.cost_model, lower.kernels) == ("none", "torch")
    # a value the pipeline gives explicitly is kept
    explicit = OptimizeOptions(pipeline="lower-batch{kernels=triton}", kernels="torch").pipeline_to_run()
    assert parse_pipeline(explicit)[0].kernels == "triton"  # type: ignore[attr-defined]
    assert OptimizeOptions().pipeline_to_run() is None  # the default pipeline, untouched

    model, x = towers()
    result = optimus_ir.optimize(model, [x], options=options)
    assert 'kernels="torch"' in result.optimus_report.pipeline
    assert 'cost_model="none"' in result.optimus_report.pipeline
    assert result.optimus_report.ops_after["linear"] < result.optimus_report.ops_before["linear"]
    torch.testing.assert_close(result(x), model(x))

    made = optimus_ir.backend(options=attrs.evolve(options, inner="eager"))
    compiled = torch.compile(model, backend=made)
    torch.testing.assert_close(compiled(x), model(x))
    (outcome,) = made.outcomes
    assert 'kernels="torch"' in outcome.report.pipeline

    # the hook's cache key follows the knobs
    assert optimus_ir.inductor_pass(kernels="torch").uuid() != optimus_ir.inductor_pass().uuid()


def test_remarks_knob_prints_the_remarks_of_optimize(capsys: pytest.CaptureFixture[str]) -> None:
    model, x = towers()
    optimus_ir.optimize(model, [x], options=OptimizeOptions(remarks=True, cost_model="default"))
    err = capsys.readouterr().err
    # the fused attempt may be discarded (op-count guard): its remarks are printed, labelled
    assert "optimus: remark: batch-fusion:" in err or "optimus: remark (discarded attempt): batch-fusion:" in err
    optimus_ir.optimize(model, [x])
    assert "remark" not in capsys.readouterr().err


# --- the documented table of options -------------------------------------------------------

NON_DEFAULT_VALUES = {
    "pipeline": PLAIN,
    "inner": "eager",
    "validate": True,
    "verify_each": True,
    "freeze": True,
    "check_speed": False,
    "strict": True,
    "remarks": True,
    "cost_model": "none",
    "kernels": "torch",
    "memory_budget": "2x",
    "parameter_stacks": "shared",
}
"""A value other than the default for every option (a new option must be added here)."""

ENTRY_COLUMNS = {"`optimize()`": "optimize", "backend": "backend", "Inductor hook": "inductor"}


def documented_options() -> dict[str, tuple[str, set[str]]]:
    """docs/options.md's table of `OptimizeOptions`: field -> (its default
    as written, the entry points marked "yes")."""
    lines = (REPO / "docs" / "options.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| field | default |"))
    header = [cell.strip() for cell in lines[start].strip("|").split("|")]
    rows: dict[str, tuple[str, set[str]]] = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        name = cells[0].strip("`")
        entries = {ENTRY_COLUMNS[column] for column, cell in zip(header, cells) if column in ENTRY_COLUMNS and cell == "yes"}
        rows[name] = (cells[1].strip("`"), entries)
    return rows


def test_docs_table_signatures_and_options_agree() -> None:
    """Every field of `OptimizeOptions` is in docs/options.md's table with
    its default, every documented field is a keyword of `optimize()` with
    that default, and each entry point accepts exactly the fields the table
    marks for it (and refuses the others with a TypeError saying so)."""
    import ast
    import inspect

    table = documented_options()
    fields = {f.name: f.default for f in attrs.fields(OptimizeOptions) if f.init}
    assert list(table) == list(fields), "docs/options.md's table and OptimizeOptions' fields differ"
    assert set(NON_DEFAULT_VALUES) == set(fields)
    signature = inspect.signature(optimus_ir.optimize).parameters
    for name, (default_text, entries) in table.items():
        assert ast.literal_eval(default_text) == fields[name], name
        parameter = signature[name]
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY or name == "pipeline", name
        assert parameter.default == fields[name], name
        for entry in ("optimize", "backend", "inductor"):
            made = lambda: OptimizeOptions.from_mapping({name: NON_DEFAULT_VALUES[name]}, entry)  # noqa: E731
            if entry in entries:
                assert getattr(made(), name) == NON_DEFAULT_VALUES[name]
            else:
                with pytest.raises(TypeError, match=f"{name!r} is not an option"):
                    made()
        if "backend" in entries:
            assert getattr(optimus_ir.backend(**{name: NON_DEFAULT_VALUES[name]}).options, name) == NON_DEFAULT_VALUES[name]
        else:
            with pytest.raises(TypeError, match=f"{name!r} is not an option of the torch.compile backend"):
                optimus_ir.backend(**{name: NON_DEFAULT_VALUES[name]})
        if "inductor" in entries:
            made_pass = optimus_ir.inductor_pass(**{name: NON_DEFAULT_VALUES[name]})
            assert getattr(made_pass.options, name) == NON_DEFAULT_VALUES[name]
        else:
            with pytest.raises(TypeError, match=f"{name!r} is not an option inside Inductor"):
                optimus_ir.inductor_pass(**{name: NON_DEFAULT_VALUES[name]})


def test_optimize_takes_every_documented_option_as_a_keyword(capsys: pytest.CaptureFixture[str]) -> None:
    """Each option `optimize()` honours, given as a keyword, runs and has
    its effect (the issue: `cost_model=`, `kernels=` and `remarks=` were a
    TypeError); the others raise a TypeError naming the option."""
    model, x = towers()
    table = documented_options()
    for name, (_, entries) in table.items():
        value = NON_DEFAULT_VALUES[name]
        if "optimize" not in entries:
            with pytest.raises(TypeError, match=f"{name!r} is not an option of optimize"):
                optimus_ir.optimize(model, [x], **{name: value})
            continue
        result = optimus_ir.optimize(model, [x], **{name: value})
        torch.testing.assert_close(result(x), model(x))
    capsys.readouterr()
    # the pass knobs reach the pipeline, and remarks are printed, as with options=
    result = optimus_ir.optimize(model, [x], cost_model="none", kernels="torch", memory_budget="2x", remarks=True)
    pipeline = result.optimus_report.pipeline
    assert 'cost_model="none"' in pipeline and 'kernels="torch"' in pipeline and 'memory_budget="2x"' in pipeline
    assert "optimus: remark" in capsys.readouterr().err
    same = optimus_ir.optimize(
        model, [x], options=OptimizeOptions(cost_model="none", kernels="torch", memory_budget="2x")
    )
    assert same.optimus_report.pipeline == pipeline


def test_torch_compile_options_take_every_backend_option() -> None:
    """`torch.compile(..., backend="optimus", options={...})` takes every
    option the table marks for the backend, and refuses the others."""
    model, x = towers()
    table = documented_options()
    accepted = {name: NON_DEFAULT_VALUES[name] for name, (_, entries) in table.items() if "backend" in entries}
    accepted.update(inner="eager", pipeline=None, remarks=False)  # run it, quietly, with the default pipeline
    torch._dynamo.reset()
    with torch.no_grad():
        compiled = torch.compile(model, backend="optimus", options=accepted)
        torch.testing.assert_close(compiled(x), model(x))
    refused = [name for name, (_, entries) in table.items() if "backend" not in entries]
    assert refused == ["check_speed"]
    for name in refused:
        torch._dynamo.reset()
        with pytest.raises(Exception, match=f"'{name}' is not an option of the torch.compile backend"):
            torch.compile(model, backend="optimus", options={name: NON_DEFAULT_VALUES[name]})(x)
    torch._dynamo.reset()


# --- the environment, read in one place ----------------------------------------------------


def test_environment_is_read_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENVIRONMENT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert environment() == Environment()
    monkeypatch.setenv("OPTIMUS_STRICT", "yes")
    monkeypatch.setenv("OPTIMUS_CHECK_SPEED", "0")
    monkeypatch.setenv("OPTIMUS_VERIFY_EACH", "1")
    monkeypatch.setenv("OPTIMUS_COST_MODEL", " Default ")
    monkeypatch.setenv("OPTIMUS_CACHE_DIR", "/tmp/somewhere")
    monkeypatch.setenv("OPTIMUS_LOG", "DEBUG")
    monkeypatch.setenv("OPTIMUS_TRITON_ON_CPU", "1")
    monkeypatch.setenv("OPTIMUS_TRACEBACK", "1")
    monkeypatch.setenv("OPTIMUS_SNAPSHOT", "Off")
    env = environment()
    assert env == Environment(
        strict=True, check_speed=False, verify_each=True, cost_model="default",
        cache_dir="/tmp/somewhere", log_level="debug", triton_on_cpu=False, traceback=True,
        snapshot=False,
    )  # triton_on_cpu needs TRITON_INTERPRET=1 too
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert environment().triton_on_cpu and environment().triton_interpret
    assert environment({"OPTIMUS_STRICT": "0"}).strict is False  # an explicit mapping


def test_options_take_the_unset_knobs_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPTIMUS_STRICT", "1")
    monkeypatch.setenv("OPTIMUS_CHECK_SPEED", "0")
    monkeypatch.delenv("OPTIMUS_VERIFY_EACH", raising=False)
    options = OptimizeOptions.from_environment(freeze=True)
    assert (options.strict, options.check_speed, options.verify_each, options.freeze) == (True, False, False, True)
    monkeypatch.setenv("OPTIMUS_STRICT", "off")
    monkeypatch.setenv("OPTIMUS_CHECK_SPEED", "1")
    options = OptimizeOptions.from_environment(validate=True)
    assert (options.strict, options.check_speed, options.verify_each) == (False, True, True)  # validate verifies
    # what the caller says wins over the environment
    assert OptimizeOptions(strict=True, check_speed=False).resolved().strict is True
    assert OptimizeOptions(strict=None).is_strict is False


def test_optimize_takes_strict_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """OPTIMUS_STRICT decides whether a broken pass raises (the tests set
    it) when `strict` is not given; `strict=` wins over it."""
    from plugins import miscompile_passes  # noqa: F401 - registers test-fail

    model, x = towers()
    failing = "raise-fx,test-fail{message=boom},lower-to-fx"
    monkeypatch.setenv("OPTIMUS_STRICT", "1")
    with pytest.raises(Exception, match="boom"):
        optimus_ir.optimize(model, [x], failing)
    with pytest.warns(optimus_ir.OptimusFallbackWarning, match="test-fail"):
        optimus_ir.optimize(model, [x], failing, strict=False)
    monkeypatch.setenv("OPTIMUS_STRICT", "0")
    with pytest.warns(optimus_ir.OptimusFallbackWarning, match="test-fail"):
        result = optimus_ir.optimize(model, [x], failing)
    assert "test-fail" in result.optimus_report.fallback
    with pytest.raises(Exception, match="boom"):
        optimus_ir.optimize(model, [x], options=OptimizeOptions(pipeline=failing, strict=True))


def test_no_library_module_reads_the_environment() -> None:
    """`optimus_ir/foundation/environment.py` is the one place that reads environment
    variables: every other source of the package takes its values from it."""
    pattern = re.compile(r"\bos\.environ\b|\bgetenv\b|\benviron\.get\b")
    offenders = []
    for package in ("optimus_ir", "dialects", "passes", "lowering", "tools"):
        for path in sorted((REPO / package).rglob("*.py")):
            if path == REPO / "optimus_ir" / "foundation" / "environment.py":
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if pattern.search(line):
                    offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not offenders, "environment read outside optimus_ir/foundation/environment.py:\n" + "\n".join(offenders)


# --- typed pass options --------------------------------------------------------------------


@pytest.mark.parametrize(
    "pipeline, column, message",
    [
        ("lower-batch{kernels=bogus}", 13,
         "option 'kernels' of pass 'lower-batch' expects one of auto, triton, torch, got 'bogus'"),
        ("dce,batch-fusion{cost-model=cheap}", 18,
         "option 'cost-model' of pass 'batch-fusion' expects one of calibrated, default, none, got 'cheap'"),
    ],
)
def test_literal_pass_options_refuse_other_values(pipeline: str, column: int, message: str) -> None:
    with pytest.raises(PipelineError) as info:
        parse_pipeline(pipeline)
    assert info.value.column == column
    assert message in str(info.value)
    assert parse_pipeline("lower-batch{kernels=torch}")[0].kernels == "torch"  # type: ignore[attr-defined]
    assert parse_pipeline('lower-batch{kernels="triton"}')[0].kernels == "triton"  # type: ignore[attr-defined]


def test_literal_pass_options_are_checked_for_passes_made_in_python() -> None:
    from optimus_ir.lowering.lower_batch import LowerBatch
    from optimus_ir.passes.batch_fusion import BatchFusion

    assert literal_option_problems(LowerBatch()) == []
    bad = LowerBatch(kernels="cuda")  # type: ignore[arg-type]
    assert literal_option_problems(bad) == ["option 'kernels' must be one of auto, triton, torch, got 'cuda'"]
    module = parse_module('fx.graph @g {\n  %x = fx.placeholder "x" : tensor<4xf32>\n  fx.output %x\n}\n')
    with pytest.raises(OptimusError, match="batch-fusion: option 'cost-model' must be one of"):
        run_pipeline(module, [BatchFusion(cost_model="cheap")])  # type: ignore[arg-type]

"""User passes and plugins (issue 22, lane P): the `@optimus_ir.register_pass`
class decorator, entry-point plugins (group `optimus_ir.plugins`) loaded
once and lazily, the `OPTIMUS_PLUGINS=0` switch, and a user pass seen by
every entry point (optimize, the backend, the Inductor hook, optimus-opt)
and by the tooling (statistics, remarks, validation, bisection)."""

from __future__ import annotations

import dataclasses
import itertools
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
import torch
from xdsl.passes import ModulePass

import optimus_ir
from optimus_ir import plugins
from optimus_ir.passes import registry
from optimus_ir.passes.registry import PassPluginError
from optimus_ir.pipeline import parse_pipeline
from optimus_ir.plugins import OptimusPluginWarning, load_plugins, plugin_outcomes
from optimus_ir.tools.optimus_opt import main as optimus_opt_main
from optimus_ir.pipeline.validation import ValidationError
from plugins import user_passes

REPO = Path(__file__).resolve().parent.parent
USER_PASSES = REPO / "tests" / "plugins" / "user_passes.py"
FOLD = "raise-fx,fold-double-neg,dce,lower-to-fx"


@pytest.fixture
def isolated_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pass registry as it is, restored after the test."""
    monkeypatch.setattr(registry, "PASSES", dict(registry.PASSES))


@pytest.fixture
def fresh_plugins(monkeypatch: pytest.MonkeyPatch, isolated_registry: None) -> None:
    """No entry point loaded yet in this process (as in a new one), and the
    registry restored afterwards."""
    monkeypatch.setattr(plugins, "_STATE", plugins._PluginState())
    monkeypatch.delenv("OPTIMUS_PLUGINS", raising=False)


def _noop_pass(pass_name: str, class_name: str = "Noop", module: str = __name__) -> type[ModulePass]:
    """A fresh ModulePass class named `pass_name` (defined in `module`)."""

    def apply(self, ctx, op) -> None:  # noqa: ANN001
        pass

    cls = type(class_name, (ModulePass,), {"name": pass_name, "apply": apply, "__module__": module})
    cls.__qualname__ = class_name
    return dataclasses.dataclass(frozen=True)(cls)


class DoubleNeg(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.neg(torch.neg(x)).tanh() * 2


def _calls(gm: torch.fx.GraphModule, target: object) -> int:
    return sum(node.op == "call_function" and node.target is target for node in gm.graph.nodes)


# ---------------------------------------------------------------------------
# @register_pass
# ---------------------------------------------------------------------------


def test_register_pass_is_public_and_registers_the_class(isolated_registry: None) -> None:
    assert "register_pass" in optimus_ir.__all__ and "OptimusPluginWarning" in optimus_ir.__all__
    assert optimus_ir.register_pass is registry.register_pass
    assert issubclass(optimus_ir.OptimusPluginWarning, UserWarning)
    cls = _noop_pass("my-noop")
    assert optimus_ir.register_pass(cls) is cls  # bare: returns the class
    assert registry.get_pass_class("my-noop") is cls
    assert [type(p) for p in parse_pipeline("my-noop,dce")][0] is cls
    other = _noop_pass("my-other", "Other")
    assert optimus_ir.register_pass(replace=True)(other) is other  # with options
    assert optimus_ir.register_pass()(_noop_pass("my-third", "Third")).name == "my-third"
    assert {"my-noop", "my-other", "my-third"} <= set(registry.available_passes())


def test_register_pass_again_is_a_no_op_and_a_clash_is_a_value_error(isolated_registry: None) -> None:
    first = optimus_ir.register_pass(_noop_pass("my-pass", "First", module="first_plugin"))
    assert optimus_ir.register_pass(first) is first  # the same class: nothing happens
    second = _noop_pass("my-pass", "Second", module="second_plugin")
    with pytest.raises(ValueError) as caught:
        optimus_ir.register_pass(second)
    message = str(caught.value)
    assert "pass 'my-pass' is already registered (first_plugin.First, registered by first_plugin)" in message
    assert "second_plugin.Second cannot take its name (use @register_pass(replace=True)" in message
    assert registry.get_pass_class("my-pass") is first
    # a built-in pass: named with its class and module
    with pytest.raises(ValueError, match=r"pass 'dce' is already registered \(optimus_ir\.passes\.dce\.DeadCodeElimination, "
                       r"registered by optimus_ir\.passes\.dce\)"):
        optimus_ir.register_pass(_noop_pass("dce", "MyDce"))
    assert registry.get_pass_class("dce").__module__ == "optimus_ir.passes.dce"


def test_register_pass_replace(isolated_registry: None) -> None:
    first = optimus_ir.register_pass(_noop_pass("my-pass", "First"))
    second = optimus_ir.register_pass(replace=True)(_noop_pass("my-pass", "Second"))
    assert registry.get_pass_class("my-pass") is second is not first
    # a built-in pass may be replaced too (deliberately)
    mine = optimus_ir.register_pass(replace=True)(_noop_pass("dce", "MyDce"))
    assert type(parse_pipeline("cse,dce")[1]) is mine


def test_the_same_class_defined_again_by_a_reimport_replaces_it(isolated_registry: None) -> None:
    """Re-importing a plugin module (importlib.reload, a notebook cell run
    again) defines the class again: not a clash with itself."""
    old = optimus_ir.register_pass(_noop_pass("my-pass", "Same", module="reloaded_plugin"))
    new = optimus_ir.register_pass(_noop_pass("my-pass", "Same", module="reloaded_plugin"))
    assert new is not old and registry.get_pass_class("my-pass") is new


class NotAPass:
    name = "not-a-pass"


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: NotAPass, TypeError, "is not a subclass of xdsl.passes.ModulePass"),
        (lambda: lambda: None, TypeError, "is not a subclass of xdsl.passes.ModulePass"),
        (lambda: _noop_pass(None, "Nameless"), TypeError, "Nameless has no pass name (set the class attribute `name"),
        (lambda: _noop_pass("MyPass", "Camel"), ValueError, "pass name 'MyPass' is not kebab-case"),
        (lambda: _noop_pass("my_pass", "Snake"), ValueError, "pass name 'my_pass' is not kebab-case"),
        (lambda: _noop_pass("my-pass-", "Trailing"), ValueError, "pass name 'my-pass-' is not kebab-case"),
        (lambda: _noop_pass("", "Empty"), ValueError, "pass name '' is not kebab-case"),
        (lambda: _noop_pass("default", "Default"), ValueError, "'default' is the name of a pipeline"),
        (lambda: "my-pass", TypeError, "register_pass('my-pass'): register_pass is a class decorator"),
    ],
)
def test_register_pass_refuses(make, error, message, isolated_registry: None) -> None:
    before = dict(registry.PASSES)
    with pytest.raises(error) as caught:
        optimus_ir.register_pass(make())
    assert message in str(caught.value)
    assert registry.PASSES == before


# ---------------------------------------------------------------------------
# A user pass in every entry point
# ---------------------------------------------------------------------------


def test_a_user_pass_in_optimize_with_statistics_and_remarks() -> None:
    model, x = DoubleNeg(), torch.randn(3, 4)
    result = optimus_ir.optimize(model, [x], pipeline=FOLD, check_speed=False)
    torch.testing.assert_close(result(x), model(x))
    assert _calls(result, torch.neg) == 0 and _calls(result, torch.tanh) == 1
    report = result.optimus_report
    assert "fold-double-neg" in report.pipeline
    (record,) = report.statistics.by_pass("fold-double-neg")
    assert record.patterns["fold-double-neg"].rewrites == 1
    assert any("fold-double-neg: neg(neg(x)) folded to x" in r.message for r in report.remarks)


def test_a_user_pass_in_the_backend_and_the_inductor_hook() -> None:
    model, x = DoubleNeg(), torch.randn(3, 4)
    backend = optimus_ir.backend(pipeline=FOLD, inner="eager")
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(model, backend=backend)(x), model(x))
    (outcome,) = backend.outcomes
    assert outcome.optimized and outcome.report.statistics.by_pass("fold-double-neg")
    assert outcome.ops_after < outcome.ops_before

    hook = optimus_ir.inductor_pass(pipeline=FOLD)
    gm = torch.fx.symbolic_trace(model)
    for node in gm.graph.find_nodes(op="placeholder"):
        node.meta["example_value"] = x
    hook(gm.graph)
    gm.recompile()
    (outcome,) = hook.outcomes
    assert outcome.optimized and _calls(gm, torch.neg) == 0
    torch.testing.assert_close(gm(x), model(x))


def test_a_user_pass_in_optimus_opt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "in.mlir"
    path.write_text(
        textwrap.dedent(
            """\
            fx.graph @g {
              %x = fx.placeholder "x" : tensor<4xf32, "cpu">
              %a = fx.call_function "torch.neg"(%x) : tensor<4xf32, "cpu">
              %b = fx.call_function "torch.neg"(%a) : tensor<4xf32, "cpu">
              fx.output %b
            }
            """
        )
    )
    argv = [str(path), f"--load-pass-plugin={USER_PASSES}", "-p", "raise-fx,fold-double-neg,dce", "--pass-statistics"]
    assert optimus_opt_main(argv) == 0
    captured = capsys.readouterr()
    assert "torch.neg" not in captured.out and "fx.output %x" in captured.out
    assert "pattern fold-double-neg: tried" in captured.err


def test_validation_catches_a_wrong_user_pass() -> None:
    model, x = DoubleNeg(), torch.randn(3, 4)
    with pytest.raises(ValidationError, match="test-drop-neg"):
        optimus_ir.optimize(
            lambda t: torch.neg(model(t)), [x], pipeline="raise-fx,test-drop-neg,lower-to-fx", validate=True
        )


# ---------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------

_unique = itertools.count()


def make_distribution(
    root: Path, dist_name: str, entry_points: dict[str, str], modules: dict[str, str]
) -> Path:
    """A fake installed distribution under `root` (a sys.path entry): its
    `*.dist-info/` (METADATA, entry_points.txt in group optimus_ir.plugins)
    and its modules (name -> source)."""
    info = root / f"{dist_name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist_name}\nVersion: 0.1\n")
    lines = ["[optimus_ir.plugins]", *(f"{name} = {value}" for name, value in entry_points.items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    for module, source in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(source))
    return root


PASS_MODULE = """\
from dataclasses import dataclass
from xdsl.passes import ModulePass
import optimus_ir

CALLS = []


@optimus_ir.register_pass
@dataclass(frozen=True)
class {cls}(ModulePass):
    name = "{name}"

    def apply(self, ctx, op):
        pass


def register():
    CALLS.append("register")
"""


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_plugins: None):
    """A good plugin (a module and a `module:function` entry point) and a
    broken one (registers a pass, then raises) installed on sys.path, with
    module names unique to the test."""
    n = next(_unique)
    good, broken = f"good_plugin_{n}", f"broken_plugin_{n}"
    root = make_distribution(
        tmp_path / "site",
        "good-optimus-plugin",
        {"good": good, "good-setup": f"{good}:register"},
        {good: PASS_MODULE.format(cls="GoodPass", name=f"good-pass-{n}")},
    )
    make_distribution(
        root,
        "broken-optimus-plugin",
        {"broken": broken},
        {broken: PASS_MODULE.format(cls="HalfPass", name=f"half-pass-{n}") + "\nraise RuntimeError('plugin bug')\n"},
    )
    monkeypatch.syspath_prepend(str(root))
    yield n, good, broken
    for module in (good, broken):
        sys.modules.pop(module, None)


def test_entry_points_load_once_and_a_broken_one_warns_once(installed) -> None:
    n, good, broken = installed
    assert good not in sys.modules  # lazily: nothing at import of optimus_ir
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert load_plugins(strict=False) == ["good", "good-setup"]
        assert load_plugins(strict=False) == ["good", "good-setup"]  # idempotent
        model, x = DoubleNeg(), torch.randn(2, 3)
        optimus_ir.optimize(model, [x], pipeline=f"raise-fx,good-pass-{n},lower-to-fx", strict=False, check_speed=False)
    plugin_warnings = [w for w in caught if issubclass(w.category, OptimusPluginWarning)]
    assert len(plugin_warnings) == 1, [str(w.message) for w in plugin_warnings]
    message = str(plugin_warnings[0].message)
    assert (
        f"optimus-ir plugin 'broken' (= {broken}, from distribution 'broken-optimus-plugin') failed to load "
        "and is skipped: RuntimeError: plugin bug"
    ) in message
    assert sys.modules[good].CALLS == ["register"]  # the function entry point ran once
    assert f"good-pass-{n}" in registry.PASSES
    assert f"half-pass-{n}" not in registry.PASSES  # what the broken plugin registered is undone
    outcomes = {o.name: o for o in plugin_outcomes()}
    assert outcomes["broken"].distribution == "broken-optimus-plugin" and not outcomes["broken"].loaded


def test_a_broken_entry_point_raises_when_strict(installed, monkeypatch: pytest.MonkeyPatch) -> None:
    n, good, broken = installed
    with pytest.raises(PassPluginError, match=f"cannot load optimus-ir plugin 'broken' \\(= {broken}, from "
                       "distribution 'broken-optimus-plugin'\\): RuntimeError: plugin bug"):
        load_plugins(strict=True)
    monkeypatch.setenv("OPTIMUS_STRICT", "1")
    with pytest.raises(PassPluginError, match="plugin bug"):
        load_plugins()  # strict from the environment, again on every call
    with pytest.raises(PassPluginError, match="plugin bug"):
        optimus_ir.optimize(DoubleNeg(), [torch.randn(2, 3)])
    with pytest.raises(PassPluginError, match="plugin bug"):
        optimus_ir.OptimizeOptions(pipeline="dce")
    monkeypatch.setenv("OPTIMUS_STRICT", "0")
    with pytest.warns(OptimusPluginWarning, match="'broken'"):
        assert load_plugins() == ["good", "good-setup"]


def test_a_pipeline_option_sees_the_plugins_passes(installed) -> None:
    """`OptimizeOptions(pipeline=...)` (what the backend and the Inductor
    hook are given) loads the plugins before it parses the pipeline."""
    n, good, broken = installed
    with pytest.warns(OptimusPluginWarning):
        hook = optimus_ir.inductor_pass(pipeline=f"raise-fx,good-pass-{n},lower-to-fx", strict=False)
    assert f"good-pass-{n}" in hook.options.pipeline


def test_bad_entry_point_values_are_broken_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_plugins: None) -> None:
    n = next(_unique)
    module = f"values_plugin_{n}"
    root = make_distribution(
        tmp_path,
        "values-plugin",
        {"not-callable": f"{module}:VALUE", "missing-attr": f"{module}:nothing", "missing-module": f"no_such_module_{n}"},
        {module: "VALUE = 3\n"},
    )
    monkeypatch.syspath_prepend(str(root))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert load_plugins(strict=False) == []
    messages = sorted(str(w.message) for w in caught if issubclass(w.category, OptimusPluginWarning))
    assert len(messages) == 3
    assert "'missing-attr'" in messages[0] and "AttributeError" in messages[0]
    assert "'missing-module'" in messages[1] and f"ModuleNotFoundError: No module named 'no_such_module_{n}'" in messages[1]
    assert "'not-callable'" in messages[2] and f"TypeError: '{module}:VALUE' is not callable" in messages[2]
    sys.modules.pop(module, None)


def test_optimus_plugins_0_loads_nothing(installed, monkeypatch: pytest.MonkeyPatch) -> None:
    n, good, broken = installed
    for off in ("0", "false", "off"):
        monkeypatch.setenv("OPTIMUS_PLUGINS", off)
        assert load_plugins(strict=True) == []  # not even a broken plugin is looked at
    assert good not in sys.modules and plugin_outcomes() == ()
    monkeypatch.setenv("OPTIMUS_PLUGINS", "1")
    with pytest.warns(OptimusPluginWarning):
        assert load_plugins(strict=False) == ["good", "good-setup"]


def _opt(*args: str, env: dict[str, str], stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "optimus_ir.tools.optimus_opt", *args],
        input=stdin, capture_output=True, text=True, timeout=180, env=env,
    )


def test_optimus_opt_loads_entry_points_before_the_pipeline(tmp_path: Path) -> None:
    root = make_distribution(
        tmp_path,
        "opt-plugin",
        {"good": "opt_good_plugin", "broken": "opt_broken_plugin:setup"},
        {
            "opt_good_plugin": PASS_MODULE.format(cls="EntryPass", name="entry-point-pass"),
            "opt_broken_plugin": "def setup():\n    raise ImportError('needs a missing library')\n",
        },
    )
    source = 'fx.graph @g {\n  %x = fx.placeholder "x" : tensor<4xf32, "cpu">\n  fx.output %x\n}\n'
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    env["OPTIMUS_STRICT"] = "1"  # optimus-opt warns about a broken installed plugin all the same
    ran = _opt("-p", "entry-point-pass,dce", env=env, stdin=source)
    assert ran.returncode == 0, ran.stderr
    assert "fx.output %x" in ran.stdout
    assert ran.stderr.splitlines() == [
        "optimus-opt: warning: installed plugin 'broken' (= opt_broken_plugin:setup, from distribution "
        "'opt-plugin') failed to load and is skipped: ImportError: needs a missing library"
    ]
    off = _opt("-p", "entry-point-pass", env={**env, "OPTIMUS_PLUGINS": "0"}, stdin=source)
    assert off.returncode == 1 and "unknown pass 'entry-point-pass'" in off.stderr
    assert "warning" not in off.stderr


def test_a_broken_plugin_leaves_no_replacement_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_plugins: None) -> None:
    """A plugin that registers a replacement and then fails is skipped as a
    whole: its replacement (and the replacement's own pass) is unregistered."""
    from optimus_ir.replacements import registered_replacements

    n = next(_unique)
    module, name = f"half_replacement_plugin_{n}", f"half-silu-{n}"
    root = make_distribution(
        tmp_path / "site",
        "half-replacement-plugin",
        {"half": module},
        {module: f"""
            import torch, torch.nn.functional as F, optimus_ir
            optimus_ir.register_replacement("{name}", lambda x: torch.sigmoid(x) * x, F.silu, [torch.randn(4, 4)])
            raise RuntimeError("plugin bug after registering")
            """},
    )
    monkeypatch.syspath_prepend(str(root))
    try:
        with pytest.warns(OptimusPluginWarning, match="plugin bug after registering"):
            assert load_plugins(strict=False) == []
        assert name not in registered_replacements()
        assert name not in registry.PASSES
    finally:
        sys.modules.pop(module, None)

"""Edge cases of the FX importer and exporter (optimus_ir/translate/importer.py,
optimus_ir/translate/exporter.py, optimus_ir/foundation/objects.py and the fx dialect's syntax)."""

from __future__ import annotations

import functools
import math
import operator
from typing import Any

import pytest
import torch
import torch.fx
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, TensorType, i64

from optimus_ir.translate.parsing import parse_module
from optimus_ir.dialects import fx
from optimus_ir.translate.exporter import GraphExportError, export_graph
from optimus_ir.translate.importer import GraphImportError, ImportedGraph, import_graph
from optimus_ir.foundation.objects import ObjectTable, UnresolvedNameError

# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def _graph_module(build, root: torch.nn.Module | None = None) -> torch.fx.GraphModule:
    graph = torch.fx.Graph()
    build(graph)
    return torch.fx.GraphModule(root if root is not None else torch.nn.Module(), graph)


def _same(a: Any, b: Any) -> None:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True)
    elif isinstance(a, tuple | list):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, dict):
        assert type(b) is dict and list(a) == list(b)
        for key in a:
            _same(a[key], b[key])
    else:
        assert a == b or (a != a and b != b), (a, b)


def roundtrip(gm: torch.fx.GraphModule, inputs=None, *, via_text: bool = True):
    """Import (with `inputs` for shape propagation), check print/parse/print,
    export (the parsed module when `via_text`) and compare outputs."""
    imported = import_graph(gm, inputs)
    imported.module.verify()
    text = str(imported.module)
    parsed = parse_module(text)
    parsed.verify()
    assert str(parsed) == text
    program = imported
    if via_text:
        program = ImportedGraph(parsed, imported.owner, imported.objects, imported.codegen)
    exported = export_graph(program)
    if inputs is not None:
        _same(exported(*inputs), gm(*inputs))
    return imported, exported, text


# ---------------------------------------------------------------------------
# metadata
# ---------------------------------------------------------------------------


def _plain_graph(graph: torch.fx.Graph) -> None:
    x = graph.placeholder("x")
    y = graph.call_function(torch.relu, (x,))
    graph.output(graph.call_method("sum", (y, 1)))


def test_missing_metadata_without_example_inputs_names_the_node() -> None:
    gm = _graph_module(_plain_graph)
    with pytest.raises(GraphImportError, match=r"node 'x'.*no shape metadata"):
        import_graph(gm)


def test_missing_metadata_on_one_node_names_that_node() -> None:
    gm = _graph_module(_plain_graph)
    x = torch.randn(2, 3)
    import_graph(gm, (x,))  # fills node.meta['val']
    relu = next(n for n in gm.graph.nodes if n.name == "relu")
    del relu.meta["val"]
    with pytest.raises(GraphImportError, match="'relu'"):
        import_graph(gm)


def test_missing_metadata_with_example_inputs_is_propagated() -> None:
    gm = _graph_module(_plain_graph)
    x = torch.randn(2, 3)
    imported, _, text = roundtrip(gm, (x,))
    assert 'fx.call_function "torch.relu"(%x) : tensor<2x3xf32, "cpu">' in text
    assert 'fx.call_method "sum"(%relu, 1) : tensor<2xf32, "cpu">' in text


def test_tensor_meta_from_shape_prop_is_used() -> None:
    from torch.fx.passes.shape_prop import ShapeProp

    gm = _graph_module(_plain_graph)
    ShapeProp(gm).propagate(torch.randn(4, 5))
    for node in gm.graph.nodes:
        node.meta.pop("val", None)
    text = str(import_graph(gm).module)
    assert "tensor<4x5xf32>" in text  # ShapeProp records no device


def test_non_tensor_results_after_propagation_are_values() -> None:
    """FakeTensorProp records no value for a string/None/object result."""

    def build(graph):
        x = graph.placeholder("x")
        text = graph.call_function(operator.add, ("a", "b"))
        graph.output((graph.call_function(torch.neg, (x,)), text))

    gm = _graph_module(build)
    _, _, text = roundtrip(gm, (torch.randn(3),))
    assert '"_operator.add"("a", "b") : !fx.value' in text


def test_unused_node_without_metadata_is_a_value() -> None:
    def build(graph):
        x = graph.placeholder("x")
        graph.call_function(print, ("side effect",))
        graph.output(x)

    gm = _graph_module(build)
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            node.meta["val"] = torch.empty(2)
    assert '"print"("side effect") : !fx.value' in str(import_graph(gm).module)


# ---------------------------------------------------------------------------
# placeholders, kwargs, literals
# ---------------------------------------------------------------------------


def test_placeholders_with_defaults() -> None:
    class M(torch.nn.Module):
        def forward(self, x, scale: float = 2.0, shift=-1, mode="a", flag=True, none=None):
            y = x * scale + shift
            return y if mode == "a" and flag and none is None else -y

    gm = torch.fx.symbolic_trace(
        M(), concrete_args={"mode": "a", "flag": True, "none": None}
    )
    x = torch.randn(3)
    imported, exported, text = roundtrip(gm, (x,))
    assert '"scale" default 2.0' in text
    assert '"shift" default -1' in text
    _same(exported(x), gm(x))
    _same(exported(x, 3.0, 2), gm(x, 3.0, 2))
    defaults = [n.args for n in exported.graph.nodes if n.op == "placeholder"]
    assert defaults[1:3] == [(2.0,), (-1,)]


@pytest.mark.parametrize(
    "default", [None, (1, 2), [3.5, "s"], {"k": 1}, torch.float16, math.inf, -0.5]
)
def test_placeholder_default_literals(default) -> None:
    def build(graph):
        x = graph.placeholder("x")
        graph.placeholder("d", default_value=default)
        graph.output(x)

    gm = _graph_module(build)
    imported, exported, _ = roundtrip(gm, (torch.randn(2),))
    placeholder = [n for n in exported.graph.nodes if n.op == "placeholder"][1]
    assert placeholder.args == (default,)


def test_kwargs_only_calls() -> None:
    def build(graph):
        x = graph.placeholder("x")
        s = graph.call_function(torch.sum, kwargs={"input": x, "dim": 1, "keepdim": True})
        m = graph.call_method("mean", (s,), {"dim": 0})
        c = graph.call_function(torch.cat, kwargs={"tensors": [x, s], "dim": -1})
        graph.output((m, c))

    gm = _graph_module(build)
    imported, exported, text = roundtrip(gm, (torch.randn(2, 3),))
    assert '"torch.sum"(input = %x, dim = 1, keepdim = true)' in text
    assert '"torch.cat"(tensors = [%x, %sum.1], dim = -1)' in text
    node = next(n for n in exported.graph.nodes if n.target is torch.sum)
    assert node.args == () and set(node.kwargs) == {"input", "dim", "keepdim"}


def test_keyword_names_that_are_literal_words() -> None:
    def words(x, none, slice, true):
        return x + none + slice.stop + true

    def build(graph):
        x = graph.placeholder("x")
        graph.output(
            graph.call_function(
                words, (x,), {"none": 1.0, "slice": slice(2), "true": False}
            )
        )

    gm = _graph_module(build)
    _, _, text = roundtrip(gm, (torch.randn(2),))
    assert "none = 1.0, slice = slice(none, 2, none), true = false" in text


def test_keyword_names_that_are_not_identifiers_parse() -> None:
    text = """
builtin.module {
  fx.graph @forward {
    %x = fx.placeholder "x" : tensor<3xf32>
    %y = fx.call_function "f#0"(%x, "a-b" = %x, "c" = "d", "pos") : tensor<3xf32>
    fx.output %y
  }
}
"""
    from xdsl.utils.exceptions import ParseError

    with pytest.raises(ParseError, match="positional argument after keyword"):
        parse_module(text)
    module = parse_module(text.replace(', "pos")', ")"))
    op = next(o for o in fx_ops(module) if isinstance(o, fx.CallFunctionOp))
    assert list(op.kwargs.data) == ["a-b", "c"]
    assert '"a-b" = %x, c = "d"' in str(module)
    assert str(parse_module(str(module))) == str(module)


def test_unicode_strings_and_names() -> None:
    root = torch.nn.Module()
    root.register_buffer("gewicht_é", torch.ones(2))

    def build(graph):
        x = graph.placeholder("xé")
        w = graph.get_attr("gewicht_é")
        graph.output((graph.call_function(operator.add, (x, w)), "é中"))

    gm = _graph_module(build, root)
    x = torch.randn(2)
    _, exported, _ = roundtrip(gm, (x,))
    assert exported(x)[1] == "é中"


def fx_ops(module) -> list:
    return [op for op in module.walk() if op.name.startswith("fx.") and op.name != "fx.graph"]


def test_ellipsis_slices_none_literals() -> None:
    def build(graph):
        x = graph.placeholder("x")
        a = graph.call_function(operator.getitem, (x, (Ellipsis, None, slice(None, -1, 2))))
        b = graph.call_function(operator.getitem, (x, (slice(1, None), 0)))
        c = graph.call_function(operator.getitem, (x, (None, Ellipsis)))
        graph.output((a, b, c))

    gm = _graph_module(build)
    _, exported, text = roundtrip(gm, (torch.randn(3, 4),))
    assert '#fx.object<"builtins.Ellipsis">, none, slice(none, -1, 2)' in text
    assert "slice(1, none, none)" in text
    getitem = next(n for n in exported.graph.nodes if n.name == "getitem")
    assert getitem.args[1] == (Ellipsis, None, slice(None, -1, 2))


def test_dtype_device_memory_format_layout_literals() -> None:
    def build(graph):
        x = graph.placeholder("x")
        a = graph.call_method("to", (x,), {"dtype": torch.bfloat16})
        b = graph.call_function(
            torch.zeros,
            ((2, 3),),
            {"dtype": torch.int64, "device": torch.device("cpu"), "layout": torch.strided},
        )
        c = graph.call_method("contiguous", (x,), {"memory_format": torch.contiguous_format})
        d = graph.call_function(torch.ones, ((2,),), {"dtype": torch.uint16})
        e = graph.call_function(torch.ones, ((1,),), {"dtype": torch.bool})
        graph.output((a, b, c, d, e))

    gm = _graph_module(build)
    _, exported, text = roundtrip(gm, (torch.randn(2, 3),))
    assert "dtype = #fx.dtype<bf16>" in text
    assert "dtype = #fx.dtype<i64>" in text
    assert "dtype = #fx.dtype<i1>" in text
    assert 'device = #fx.device<"cpu">' in text
    assert 'layout = #fx.object<"torch.strided">' in text
    assert 'memory_format = #fx.object<"torch.contiguous_format">' in text
    assert 'dtype = #fx.object<"torch.uint16">' in text  # no IR element type
    kwargs = [n.kwargs for n in exported.graph.nodes if n.op != "placeholder"][:5]
    assert kwargs[0]["dtype"] is torch.bfloat16
    assert kwargs[1]["device"] == torch.device("cpu")
    assert kwargs[2]["memory_format"] is torch.contiguous_format
    assert kwargs[3]["dtype"] is torch.uint16


@pytest.mark.parametrize(
    "literal",
    [
        0,
        -7,
        2**70,
        1.5,
        -0.0,
        1e100,
        -2.5e-12,
        math.inf,
        -math.inf,
        True,
        False,
        None,
        "",
        'quote " backslash \\ newline \n unicode \u00e9',
        "none",
        (),
        (1,),
        [],
        [1, [2, (3.0, None)]],
        {},
        {"a": 1, 2: "b", None: (1,)},
        slice(None),
        slice(-1, None, -2),
    ],
    ids=repr,
)
def test_literal_roundtrip(literal) -> None:
    captured = []

    def record(x, value):
        captured.append(value)
        return x

    def build(graph):
        x = graph.placeholder("x")
        graph.output(graph.call_function(record, (x, literal)))

    gm = _graph_module(build)
    imported = import_graph(gm, (torch.randn(1),))
    parsed = parse_module(str(imported.module))
    assert str(parsed) == str(imported.module)
    exported = export_graph(ImportedGraph(parsed, gm, imported.objects, imported.codegen))
    exported(torch.randn(1))
    _same(captured[-1], literal)
    assert type(captured[-1]) is type(literal)
    if isinstance(literal, float):
        assert math.copysign(1.0, captured[-1]) == math.copysign(1.0, literal)


def test_nan_literal_roundtrip() -> None:
    def build(graph):
        x = graph.placeholder("x")
        graph.output(graph.call_function(torch.nan_to_num, (x, math.nan)))

    gm = _graph_module(build)
    _, exported, text = roundtrip(gm, (torch.tensor([math.nan, 1.0]),))
    assert '"torch.nan_to_num"(%x, nan)' in text


def test_node_refs_inside_dicts_are_operands() -> None:
    """A node inside a dict argument (or output) stays a graph edge."""

    def pick(d, key):
        return d[key] * 2

    def build(graph):
        x = graph.placeholder("x")
        y = graph.call_function(torch.neg, (x,))
        z = graph.call_function(pick, ({"a": x, "b": [y, 1]}, "a"))
        graph.output({"z": z, "nested": {"y": y}})

    gm = _graph_module(build)
    x = torch.randn(3)
    imported, exported, text = roundtrip(gm, (x,))
    assert '({"a": %x, "b": [%neg, 1]}, "a")' in text
    assert 'fx.output {"z": %pick, "nested": {"y": %neg}}' in text
    exported.graph.lint()
    assert isinstance(exported(x), dict)


def test_dict_output_of_symbolic_trace() -> None:
    class M(torch.nn.Module):
        def forward(self, x):
            return {"a": x + 1, "b": [x * 2, x]}

    gm = torch.fx.symbolic_trace(M())
    roundtrip(gm, (torch.randn(2),))


def test_torch_size_and_named_tuples_become_tuples() -> None:
    def build(graph):
        x = graph.placeholder("x")
        graph.output(graph.call_method("view", (x, torch.Size([2, 3]))))

    gm = _graph_module(build)
    _, _, text = roundtrip(gm, (torch.randn(6),))
    assert '"view"(%x, (2, 3))' in text


# ---------------------------------------------------------------------------
# objects: closures, lambdas, bound methods, partials
# ---------------------------------------------------------------------------


def test_closures_and_lambdas_get_table_names() -> None:
    factor = 3.0

    def closure(x):
        return x * factor

    lam = lambda x: x - 1  # noqa: E731
    other = lambda x: x + 1  # noqa: E731
    class Holder:
        def method(self, x):
            return x / 2

    bound = Holder().method

    def build(graph):
        x = graph.placeholder("x")
        a = graph.call_function(closure, (x,))
        b = graph.call_function(lam, (a,))
        c = graph.call_function(other, (b,))
        d = graph.call_function(lam, (c,))
        f = graph.call_function(bound, (d,))
        graph.output(f)

    gm = _graph_module(build)
    x = torch.randn(4)
    imported, exported, text = roundtrip(gm, (x,))
    names = [
        op.target.data for op in fx_ops(imported.module) if isinstance(op, fx.CallFunctionOp)
    ]
    assert all("#" in name for name in names), names
    assert all(name in imported.objects.by_name for name in names)
    assert names[1] == names[3]  # the same lambda, the same name
    assert len(set(names)) == 4
    assert any(name.endswith("#0") for name in names)
    assert imported.objects.resolve(names[0]) is closure


def test_table_names_are_numbered_per_base_name() -> None:
    table = ObjectTable()

    def make(k):
        return lambda x: x + k

    first, second = make(1), make(2)
    a, b = table.name_of(first), table.name_of(second)
    assert a != b
    assert a.endswith("#0") and b.endswith("#1")
    assert table.name_of(first) == a
    assert table.resolve(b) is second


def test_importable_targets_keep_their_path() -> None:
    table = ObjectTable()
    assert table.name_of(torch.relu) == "torch.relu"
    assert table.name_of(operator.getitem) == "_operator.getitem"
    assert table.name_of(torch.ops.aten.mm.default) == "torch.ops.aten.mm.default"
    assert table.by_name == {}
    assert table.resolve("torch.ops.aten.mm.default") is torch.ops.aten.mm.default
    assert table.resolve("getattr") is getattr


def test_table_names_cannot_be_resolved_without_the_table() -> None:
    with pytest.raises(UnresolvedNameError, match="object table"):
        ObjectTable().resolve("mod.<lambda>#0")
    with pytest.raises(UnresolvedNameError, match="import path"):
        ObjectTable().resolve("no_such_module_xyz.fn")


def test_object_table_keeps_objects_alive() -> None:
    """An id is only a key while its object lives: a freed object's id must
    not make a later object inherit its name."""
    table = ObjectTable()
    names = set()
    for k in range(50):
        names.add(table.name_of(lambda x, k=k: x + k))  # garbage right after
    assert len(names) == 50


# ---------------------------------------------------------------------------
# get_attr: parameters, buffers, constants, submodules
# ---------------------------------------------------------------------------


class _WithState(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(3, 3))
        self.register_buffer("running", torch.arange(3.0))
        self.register_buffer("idx", torch.tensor([2, 0, 1]))
        self.const = torch.tensor([1.0, -1.0, 0.5])
        self.inner = torch.nn.Module()
        self.inner.register_buffer("mask", torch.tensor([True, False, True]))

    def forward(self, x):
        y = x @ self.weight + self.running * self.const
        y = torch.where(self.inner.mask, y, -y)
        return y[:, self.idx]


def test_get_attr_of_parameters_buffers_and_constants() -> None:
    gm = torch.fx.symbolic_trace(_WithState())
    x = torch.randn(2, 3)
    imported, exported, text = roundtrip(gm, (x,))
    assert 'fx.get_attr "weight" : tensor<3x3xf32, "cpu">' in text
    assert 'fx.get_attr "idx" : tensor<3xi64, "cpu">' in text
    assert 'fx.get_attr "inner.mask" : tensor<3xi1, "cpu">' in text
    assert exported.get_parameter("weight") is gm.get_parameter("weight")  # shared


def _apply(module, x):
    return module(x)


def test_get_attr_of_a_submodule_and_a_scalar() -> None:
    root = torch.nn.Module()
    root.lin = torch.nn.Linear(2, 2)
    root.scale = 0.5

    def build(graph):
        x = graph.placeholder("x")
        mod = graph.get_attr("lin")
        scale = graph.get_attr("scale")
        graph.output(graph.call_function(operator.mul, (graph.call_function(_apply, (mod, x)), scale)))

    gm = _graph_module(build, root)
    gm.scale = 0.5
    imported, exported, text = roundtrip(gm, (torch.randn(1, 2),))
    assert 'fx.get_attr "lin" : !fx.value' in text
    assert 'fx.get_attr "scale" : !fx.value' in text


# ---------------------------------------------------------------------------
# export without an owner, and export errors
# ---------------------------------------------------------------------------

_TEXT_WITH_PARAMS = """
builtin.module {
  fx.graph @forward {
    %x = fx.placeholder "x" : tensor<2x4xf32, "cpu">
    %w = fx.get_attr "lin.weight" : tensor<3x4xf32, "cpu">
    %b = fx.get_attr "lin.bias" : tensor<3xf32, "cpu">
    %i = fx.get_attr "index" : tensor<2xi64, "cpu">
    %y = fx.call_function "torch.nn.functional.linear"(%x, %w, %b) : tensor<2x3xf32, "cpu">
    %z = fx.call_function "torch.index_select"(%y, 1, %i) : tensor<2x2xf32, "cpu">
    fx.output %z
  }
}
"""


def test_export_parsed_text_without_owner_random() -> None:
    module = parse_module(_TEXT_WITH_PARAMS)
    with pytest.raises(GraphExportError, match=r"'fx.get_attr' %w: names 'lin.weight'"):
        export_graph(module)
    gm = export_graph(module, missing_attributes="random", seed=3)
    assert gm.lin.weight.shape == (3, 4) and gm.lin.weight.dtype == torch.float32
    assert gm.index.dtype == torch.int64
    assert int(gm.index.min()) >= 0 and int(gm.index.max()) < 8
    again = export_graph(parse_module(_TEXT_WITH_PARAMS), missing_attributes="random", seed=3)
    torch.testing.assert_close(again.lin.weight, gm.lin.weight, rtol=0, atol=0)
    torch.testing.assert_close(again.index, gm.index, rtol=0, atol=0)
    gm.index = torch.tensor([2, 0])  # made-up indices may be out of range
    assert gm(torch.randn(2, 4)).shape == (2, 2)


def test_export_random_refuses_symbolic_shapes() -> None:
    module = parse_module(
        """
builtin.module {
  fx.graph @forward {
    %x = fx.placeholder "x" : tensor<?x4xf32, "cpu">
    %w = fx.get_attr "w" : tensor<?x4xf32, "cpu">
    %y = fx.call_function "operator.add"(%x, %w) : tensor<?x4xf32, "cpu">
    fx.output %y
  }
}
"""
    )
    with pytest.raises(GraphExportError, match="symbolic size"):
        export_graph(module, missing_attributes="random")


def test_export_with_object_mapping() -> None:
    module = parse_module(
        """
builtin.module {
  fx.graph @forward {
    %x = fx.placeholder "x" : tensor<3xf32, "cpu">
    %y = fx.call_function "mine#0"(%x, 2.0) : tensor<3xf32, "cpu">
    fx.output %y
  }
}
"""
    )
    with pytest.raises(GraphExportError, match=r"'fx.call_function' %y: .*'mine#0'.*object table"):
        export_graph(module)
    gm = export_graph(module, objects={"mine#0": lambda x, k: x * k})
    torch.testing.assert_close(gm(torch.ones(3)), torch.full((3,), 2.0))


def test_export_error_unresolvable_name() -> None:
    module = parse_module(
        """
builtin.module {
  fx.graph @forward {
    %x = fx.placeholder "x" : tensor<3xf32, "cpu">
    %y = fx.call_function "no_such_module_xyz.fn"(%x) : tensor<3xf32, "cpu">
    %z = fx.call_function "torch.add"(%y, %x, alpha = #fx.object<"torch.no_such_thing">) : tensor<3xf32, "cpu">
    fx.output %z
  }
}
"""
    )
    with pytest.raises(GraphExportError, match=r"%y: cannot resolve 'no_such_module_xyz.fn'"):
        export_graph(module)
    # the same for a name inside the arguments
    graph = next(op for op in module.walk() if isinstance(op, fx.GraphOp))
    bad = next(op for op in graph.block.ops if op.name == "fx.call_function")
    bad.properties["target"] = fx.StringAttr("torch.neg")
    with pytest.raises(GraphExportError, match=r"%z: cannot resolve 'torch.no_such_thing'"):
        export_graph(module)


def test_export_error_non_fx_op_left() -> None:
    module = parse_module(
        """
builtin.module {
  fx.graph @forward {
    %x = fx.placeholder "x" : tensor<3xf32, "cpu">
    fx.output %x
  }
}
"""
    )
    graph = next(op for op in module.walk() if isinstance(op, fx.GraphOp))
    constant = arith.ConstantOp(IntegerAttr(1, i64))
    graph.block.insert_op_before(constant, graph.block.last_op)
    with pytest.raises(GraphExportError, match=r"'arith.constant'.*not an fx op.*lower-to-fx"):
        export_graph(module)


def test_export_error_missing_submodule() -> None:
    module = parse_module(
        """
builtin.module {
  fx.graph @forward {
    %x = fx.placeholder "x" : tensor<3xf32, "cpu">
    %y = fx.call_module "tower.0"(%x) : tensor<3xf32, "cpu">
    fx.output %y
  }
}
"""
    )
    with pytest.raises(GraphExportError, match=r"'fx.call_module' %y: .*'tower.0'"):
        export_graph(module, missing_attributes="random")


def test_parse_error_use_before_definition() -> None:
    from xdsl.utils.exceptions import ParseError

    with pytest.raises(ParseError, match="before its definition"):
        parse_module(
            """
builtin.module {
  fx.graph @forward {
    %y = fx.call_function "torch.neg"(%x) : tensor<3xf32>
    %x = fx.placeholder "x" : tensor<3xf32>
    fx.output %y
  }
}
"""
        )


def test_names_survive_print_parse_print() -> None:
    """FX names that xDSL would renumber or collide (`body_3_1` next to
    `body_4`, numeric module paths) keep their exact spelling."""
    seq = torch.nn.Sequential(
        torch.nn.Linear(4, 4),
        torch.nn.ReLU(),
        torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh()),
        torch.nn.Identity(),
    )

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = seq

        def forward(self, x):
            return self.body(x)

    gm = torch.fx.symbolic_trace(M())
    _, exported, _ = roundtrip(gm, (torch.randn(2, 4),))
    assert [n.name for n in exported.graph.nodes] == [n.name for n in gm.graph.nodes]


def test_types_of_results() -> None:
    def build(graph):
        x = graph.placeholder("x")
        parts = graph.call_function(torch.split, (x, 2))
        size = graph.call_method("size", (x, 0))
        mx = graph.call_function(torch.max, (x, 0))
        graph.output((parts, size, mx))

    gm = _graph_module(build)
    imported, _, _ = roundtrip(gm, (torch.randn(4, 3),))
    types = {
        op.results[0].name_hint: op.results[0].type
        for op in fx_ops(imported.module)
        if op.results
    }
    assert str(types["split"]).startswith("tuple<tensor<2x3xf32")
    assert types["size"] == fx.VALUE
    assert str(types["max.1"]).startswith("tuple<tensor<3xf32")
    assert isinstance(types["x"], TensorType)

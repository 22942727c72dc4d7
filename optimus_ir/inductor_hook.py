"""Our pipeline inside Inductor: its pre-grad custom pass hook.

    import torch, optimus_ir
    from torch._inductor import config

    with config.patch(pre_grad_custom_pass=optimus_ir.inductor_pass()):
        compiled = torch.compile(model)      # Inductor, with our passes first

Inductor calls the pass with each graph Dynamo captured, before AOTAutograd
(so before the joint graph, the partition and its post-grad passes); the
pass rewrites the graph in place. It differs from `backend="optimus"` in
what it can see and do:

* it gets the graph only, not the example inputs: the types come from the
  fake tensors Dynamo left in `node.meta` (`example_value`), so options
  that must run the graph (`validate`) are not available;
* the parameters are graph inputs (Dynamo's default), so what is computed
  from them (stacked weights) is computed on every call from the current
  parameters, never kept (`inner` and `freeze` are not options either:
  Inductor compiles the result, and `config.freezing` is its own switch);
* Inductor runs its own pre-grad passes first when its pattern matcher and
  `pre_grad_fusion_options` are set (PyTorch's Optimus): ours then see their
  result; with the defaults ours come first;
* a failure falls back to the unoptimized graph with a warning naming the
  pass, as the backend does (`strict=True` raises).

Inductor's FX graph cache keys a compiled graph by the graph *before* the
pre-grad passes plus every custom pass's `uuid()`: ours hashes the source
of optimus-ir, the versions of torch and xDSL, the options and the cost
model's measured constants, so a change to any of them (another pipeline,
an edited pass, a recalibrated machine) never gets a stale cached result,
and an unchanged set-up gets cache hits.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any

import attrs
import torch
import torch.fx
from torch._inductor.custom_graph_pass import CustomGraphPass

from optimus_ir.api import count_fx_ops
from optimus_ir.backend import GraphOutcome, _options_of, current_graph_name, optimize_dynamo_graph, passed_through
from optimus_ir.options import OptimizeOptions, environment

_NOT_OPTIONS = tuple(
    name for name, entries in OptimizeOptions.ENTRY_POINTS.items() if "inductor" not in entries
)
"""Options that do not apply inside Inductor (see the module docs): inner,
validate, freeze, check_speed."""


class OptimusInductorPass(CustomGraphPass):
    """The optimus-ir pipeline as an Inductor pre-grad custom pass
    (`torch._inductor.config.pre_grad_custom_pass`)."""

    def __init__(self, options: OptimizeOptions | None = None) -> None:
        self.options = options or OptimizeOptions()
        self.options.check_entry("inductor")
        self.outcomes: list[GraphOutcome] = []
        """Every graph the pass was run on, in order, and what it did."""

    def __repr__(self) -> str:
        return f"optimus_ir.inductor_pass({self.options.describe()})"

    def __call__(self, graph: torch.fx.Graph) -> None:
        gm = graph.owning_module
        if not isinstance(gm, torch.fx.GraphModule):
            raise TypeError("optimus inductor pass: the graph has no owning GraphModule")
        placeholders = list(graph.find_nodes(op="placeholder"))
        example_inputs = [_example_value(node) for node in placeholders]
        missing = [node.name for node, value in zip(placeholders, example_inputs) if value is None]
        if missing:
            # not a graph Dynamo made (nothing to type it with): leave it to Inductor
            ops = sum(count_fx_ops(gm).values())
            reason = f"placeholders without example values: {', '.join(missing)}"
            self.outcomes.append(passed_through(current_graph_name(), ops, reason))
            return
        optimized, outcome = optimize_dynamo_graph(
            gm, example_inputs, self.options, cache_parameters=False, who="optimus inductor pass"
        )
        self.outcomes.append(outcome)
        if optimized is not gm:
            from optimus_ir.inductor_handoff import make_wide_input_stacks_opaque

            replace_graph(gm, optimized)
            outcome.opaque_stacks = make_wide_input_stacks_opaque(gm)

    def uuid(self) -> str:
        """What the result depends on besides the graph (see the module docs)."""
        from optimus_ir.analysis.cost_model import calibrated_cost_model

        devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
        cost_models = [repr(calibrated_cost_model(device)) for device in devices]
        parts = [
            _source_hash(),
            torch.__version__,
            _xdsl_version(),
            repr(attrs.astuple(self.options)),
            *cost_models,
            environment().cost_model,
        ]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def inductor_pass(options: OptimizeOptions | None = None, **keywords: Any) -> OptimusInductorPass:
    """The pre-grad pass with these options (`OptimizeOptions`, or its
    fields as keywords, but for inner, freeze, validate and check_speed):
    `config.pre_grad_custom_pass = optimus_ir.inductor_pass()`. Bad options
    raise here."""
    for name in _NOT_OPTIONS:
        if name in keywords:
            raise TypeError(
                f"optimus inductor pass: {name!r} is not an option inside Inductor "
                "(see optimus_ir.inductor_pass); use backend='optimus' for it"
            )
    return OptimusInductorPass(_options_of(options, keywords, "inductor"))


def _example_value(node: torch.fx.Node) -> Any:
    """What Dynamo recorded for a placeholder (a fake tensor, a SymInt), or None."""
    return node.meta.get("example_value", node.meta.get("val"))


def replace_graph(gm: torch.fx.GraphModule, optimized: torch.fx.GraphModule) -> None:
    """Make `gm`'s graph compute what `optimized`'s does, in place (Inductor
    keeps the graph object it passed in): the placeholders stay, every other
    node is replaced by a copy of `optimized`'s, and the attributes its
    `get_attr` nodes read are copied over."""
    graph = gm.graph
    old_inputs = list(graph.find_nodes(op="placeholder"))
    new_inputs = list(optimized.graph.find_nodes(op="placeholder"))
    if len(old_inputs) != len(new_inputs):
        raise ValueError(
            f"optimus inductor pass: the optimized graph has {len(new_inputs)} inputs, "
            f"the original {len(old_inputs)}"
        )
    for node in reversed(list(graph.nodes)):
        if node.op != "placeholder":
            graph.erase_node(node)
    mapping: dict[torch.fx.Node, torch.fx.Node] = dict(zip(new_inputs, old_inputs))
    for node in optimized.graph.nodes:
        if node.op == "placeholder":
            continue
        if node.op == "get_attr":
            _copy_attribute(optimized, gm, str(node.target))
        mapping[node] = graph.node_copy(node, mapping.__getitem__)
    gm.recompile()


def _copy_attribute(source: torch.nn.Module, target: torch.nn.Module, qualified_name: str) -> None:
    *path, name = qualified_name.split(".")
    owner_in_source, owner_in_target = source, target
    for part in path:
        owner_in_source = getattr(owner_in_source, part)
        if not hasattr(owner_in_target, part):
            setattr(owner_in_target, part, torch.nn.Module())
        owner_in_target = getattr(owner_in_target, part)
    value = getattr(owner_in_source, name)
    if getattr(owner_in_target, name, None) is value:
        return
    if isinstance(value, torch.nn.Parameter):
        owner_in_target.register_parameter(name, value)
    elif isinstance(value, torch.Tensor):
        owner_in_target.register_buffer(name, value)
    else:
        setattr(owner_in_target, name, value)


@functools.cache
def _source_hash() -> str:
    """A hash of every Python source file of the installed optimus_ir
    package (its passes, lowering and dialects included)."""
    root = Path(__file__).resolve().parent  # the optimus_ir package (not imported: no cycle)
    roots = {root}
    for package in ("dialects", "passes", "lowering"):
        module = __import__(f"optimus_ir.{package}", fromlist=["__file__"])
        roots.add(Path(module.__file__).resolve().parent)
    hasher = hashlib.sha256()
    for path in sorted(p for r in roots for p in r.rglob("*.py")):
        hasher.update(str(path.relative_to(path.parents[1])).encode())
        hasher.update(path.read_bytes())
    return hasher.hexdigest()


def _xdsl_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("xdsl")
    except PackageNotFoundError:
        return "unknown"


__all__ = ["OptimusInductorPass", "inductor_pass", "replace_graph"]

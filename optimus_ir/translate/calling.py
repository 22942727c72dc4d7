"""How a captured graph is called like the model it came from.

`optimus_ir.capture` captures a model through torch.compile's path: Dynamo
hands a backend one flat graph whose placeholders are whatever the model
read (a tensor inside a dict argument, the values of a jagged tensor, a
numpy array attribute turned into a tensor), each named by Dynamo's *source*
of it (`L['feats']['f0']`, `L['kjt']._values`, `___from_numpy(L['self'].w)`),
and Dynamo's own bytecode rebuilds the value the model returns. A
`ModelCall` keeps both halves so that the GraphModule made from such a graph
is called exactly as the model is:

* its `forward` has the model's own signature (names, defaults, `*args`,
  keyword-only parameters, `**kwargs`), so every call the model accepts is a
  call of the module, and the defaults the model declares are applied as the
  model applies them;
* each placeholder is read from the arguments by its source, written out as
  Python (`l_feats_f0_ = feats['f0']`); sources that are not plain
  subscripts and attributes of an argument are evaluated as Dynamo's guards
  evaluate them, with `L` (the arguments, and the model under its own name
  for `self`), `G` (the globals of the model's `forward`) and Dynamo's
  helper functions;
* the value returned is rebuilt from the graph's outputs, the arguments
  returned as they are (Dynamo passes them through without the graph), and
  the constants of the return value, in the model's structure (a dict of
  tensors, a tuple with an int, ...).

`ModelCallCodeGen` is the FX codegen of this convention; the importer keeps
it as the graph's calling convention and the exporter reuses it, so the
optimized module has the same signature. The model itself (for sources
under `self`) is read from the module's `__dict__[MODEL_ATTRIBUTE]`.
"""

from __future__ import annotations

import copy
import inspect
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.fx.graph import CodeGen, _PyTreeCodeGen, _PyTreeInfo
from torch.utils import _pytree as pytree

from optimus_ir.translate.exporter import _FastAttributes, _output_literal, _plain_name, _plain_output

MODEL_ATTRIBUTE = "_optimus_model"
"""The key in a module's `__dict__` (not a registered submodule: the
module's parameters and state dict stay its own) of the model it was
captured from: what sources under the model's `self` are read from, and
where `optimus_ir.api.param_cache.read_tensors_from_model` reads parameters."""

_ARGUMENT = re.compile(r"^L\[(?P<q>['\"])(?P<name>[A-Za-z_][A-Za-z_0-9]*)(?P=q)\]")
"""The head of a source rooted in one argument of the frame: `L['feats']`."""

_PLAIN_TAIL = re.compile(r"^(\[(-?\d+|'[^'\\]*'|\"[^\"\\]*\")\]|\.[A-Za-z_][A-Za-z_0-9]*)*$")
"""Subscripts by int or str and attribute reads: written out as they are."""


_HELPERS: dict[str, Any] = {}


def _helpers() -> dict[str, Any]:
    """`_dynamo_helpers`, read once."""
    if not _HELPERS:
        _HELPERS.update(_dynamo_helpers())
    return _HELPERS


def _dynamo_helpers() -> dict[str, Any]:
    """The helper functions Dynamo's source names call (`___from_numpy`,
    `___odict_getitem`, ...): the environment its guards are evaluated in."""
    from torch._dynamo import guards

    getter = getattr(guards, "_get_closure_vars", None)
    helpers = getter() if callable(getter) else getattr(guards, "CLOSURE_VARS", {})
    return dict(helpers)


@dataclass(frozen=True, eq=False)
class OutputLeaf:
    """One leaf of the value the model returns: graph output `index`, an
    argument's value read by `source` (returned as is), or `constant`."""

    kind: str
    """'graph', 'source' or 'constant'."""
    index: int = -1
    source: str = ""
    constant: Any = None


@dataclass(frozen=True, eq=False)
class ModelCall:
    """The calling convention of a graph captured from a model (the module
    docstring). Immutable once made: copies of a module share it."""

    signature: inspect.Signature
    """The model's `forward` signature without its instance parameter (the
    function's own for a plain function)."""
    instance: str | None
    """The name `forward` gives its instance (`self`): sources under it read
    the model. None for a plain function."""
    sources: Mapping[str, str]
    """Placeholder target -> Dynamo's source name of its value."""
    output_spec: Any
    """The pytree spec of the value returned."""
    output_leaves: tuple[OutputLeaf, ...]
    namespace: Mapping[str, Any] = field(default_factory=dict)
    """The globals of the model's `forward` (for `G[...]` sources)."""
    free_variables: Mapping[str, Any] = field(default_factory=dict)
    """The free variables of `forward` (`__class__` of a zero-argument
    `super()`), which are frame locals to Dynamo."""
    input_writes: tuple[tuple[str, Any, OutputLeaf], ...] = ()
    """What `forward` stores into its arguments' dicts and lists (`item_dict[k]
    = v.to(device)`): the container's source, the key and the value (as a
    leaf of the value returned), done by the module before it returns, as
    Dynamo's code does after its graph."""

    def __deepcopy__(self, memo: dict[int, Any]) -> ModelCall:
        return self  # immutable, and its defaults and globals are the model's

    def __getstate__(self) -> dict[str, Any]:
        # the globals of `forward` go by the name of their module
        state = {k: v for k, v in self.__dict__.items() if k != "_compiled"}
        state["namespace"] = ("module", self.namespace.get("__name__")) if self.namespace else None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        import importlib

        namespace = state.get("namespace")
        if isinstance(namespace, tuple):
            try:
                state["namespace"] = vars(importlib.import_module(namespace[1]))
            except (ImportError, TypeError):
                state["namespace"] = {}
        else:
            state["namespace"] = {}
        self.__dict__.update(state)

    @property
    def needs_itself_at_run_time(self) -> bool:
        """Whether the generated code reads this object: a default or a
        constant returned that is no literal, a source read in the general
        environment, or a value returned that is not a plain container."""
        return (
            any(
                p.default is not inspect.Parameter.empty and _literal(p.default) is None
                for p in self.signature.parameters.values()
            )
            or any(leaf.kind == "constant" and _literal(leaf.constant) is None for leaf in self.output_leaves)
            or any(
                (leaf.kind == "source" and self._needs_environment(leaf.source)) for leaf in self.output_leaves
            )
            or any(self.expression(source)[1] for source in self.sources.values())
            or not _plain_output(self.output_spec)
        )

    def _needs_environment(self, source: str) -> bool:
        text, needs = self.expression(source)
        return needs or text.startswith("_model")

    # -- the arguments -------------------------------------------------------

    @property
    def parameter_names(self) -> list[str]:
        return list(self.signature.parameters)

    def bind(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The frame locals of a call (defaults applied), as Dynamo's `L`."""
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return dict(bound.arguments)

    def call_arguments(self, local_values: Mapping[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """`(args, kwargs)` that call the model with these locals."""
        bound = inspect.BoundArguments(self.signature, dict(local_values))  # type: ignore[arg-type]
        return tuple(bound.args), dict(bound.kwargs)

    def call_text(self) -> str:
        """The parameters passed on as a call (`x, mask, *rest, scale=scale, **kw`)."""
        parts = []
        for name, parameter in self.signature.parameters.items():
            if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
                parts.append(f"*{name}")
            elif parameter.kind is inspect.Parameter.VAR_KEYWORD:
                parts.append(f"**{name}")
            elif parameter.kind is inspect.Parameter.KEYWORD_ONLY:
                parts.append(f"{name}={name}")
            else:
                parts.append(name)
        return ", ".join(parts)

    def read(self, target: str, frame: Mapping[str, Any]) -> Any:
        """The value of placeholder `target` from a call's frame (the
        arguments and the model under its instance name), by its source,
        evaluated as Dynamo's guards evaluate sources."""
        return eval(self._code(target), {**_helpers(), "L": frame, "G": self.namespace})  # noqa: S307 - Dynamo's source names

    def values(self, local_values: Mapping[str, Any], model: Any) -> list[Any]:
        """The placeholder values of a call, in the order of `targets`."""
        environment = self._environment(local_values, model)
        return [eval(self._code(target), environment) for target in self.sources]  # noqa: S307 - Dynamo's source names

    def frame(self, local_values: Mapping[str, Any], model: Any) -> dict[str, Any]:
        """Dynamo's frame locals of a call of `forward`: its arguments, the
        model under the instance name, its free variables."""
        frame = dict(local_values)
        if self.instance is not None:
            frame[self.instance] = model
        frame.update(self.free_variables)
        return frame

    def _environment(self, local_values: Mapping[str, Any], model: Any) -> dict[str, Any]:
        return {**_helpers(), "L": self.frame(local_values, model), "G": self.namespace}

    def _code(self, target: str) -> Any:
        cache = self.__dict__.setdefault("_compiled", {})
        code = cache.get(target)
        if code is None:
            code = cache[target] = compile(self.sources[target], f"<source of {target}>", "eval")
        return code

    def expression(self, source: str) -> tuple[str, bool]:
        """Python reading `source` inside the generated forward, and whether
        it needs the general environment (`L`, `G`, Dynamo's helpers)."""
        head = _ARGUMENT.match(source)
        if head is not None:
            name, tail = head["name"], source[head.end():]
            if _PLAIN_TAIL.match(tail):
                if name in self.signature.parameters:
                    return name + tail, False
                if name == self.instance:
                    return "_model" + tail, False
        return source, True

    def leaf(self, source: str, local_values: Mapping[str, Any], module: Any) -> Any:
        """A leaf of the value returned that is read from the call (a tensor
        of the model returned as it is), in the general environment."""
        model = module.__dict__.get(MODEL_ATTRIBUTE) if module is not None else None
        return eval(source, self._environment(local_values, model))  # noqa: S307 - Dynamo's source names

    # -- the value returned --------------------------------------------------

    def rebuild(self, outputs: Sequence[Any], local_values: Mapping[str, Any], model: Any) -> Any:
        """The value the model returns, from the graph's outputs and the call."""
        environment: dict[str, Any] | None = None
        leaves = []
        for leaf in self.output_leaves:
            if leaf.kind == "graph":
                leaves.append(outputs[leaf.index])
            elif leaf.kind == "constant":
                leaves.append(leaf.constant)
            else:
                if environment is None:
                    environment = self._environment(local_values, model)
                leaves.append(eval(leaf.source, environment))  # noqa: S307 - Dynamo's source names
        return pytree.tree_unflatten(leaves, self.output_spec)


class ModelCallCodeGen(_FastAttributes, _PyTreeCodeGen):
    """FX codegen of a `ModelCall`: `forward` takes the model's parameters,
    reads each placeholder by its source (after the guard: a call the guard
    rejects may lack what the sources read), and returns the model's
    structure. Parameters and buffers are read from the module dicts
    (`exporter._FastAttributes`). The globals it names are fixed by the
    call (`additional_globals`), whatever order FX asks for the parts in."""

    def __init__(self, call: ModelCall) -> None:
        # A `_PyTreeCodeGen` (with no pytree info of its own): compilers that
        # take a graph whose calling convention is not FX's plain one (Inductor's
        # `compile_fx`) call `process_inputs`/`process_outputs` around it.
        super().__init__(_PyTreeInfo(list(call.parameter_names), None, None))
        self.call = call
        self._last_locals: dict[str, Any] | None = None

    def __deepcopy__(self, memo: dict[int, Any]) -> ModelCallCodeGen:
        made = copy.copy(self)
        made._last_locals = None
        return made

    def _argument_names(self) -> list[str]:
        return [*self.call.parameter_names, "_model", "L", "G"]

    def _parameters_text(self) -> str:
        parts = []
        star = False
        for name, parameter in self.call.signature.parameters.items():
            text = name
            if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
                text, star = f"*{name}", True
            elif parameter.kind is inspect.Parameter.VAR_KEYWORD:
                text = f"**{name}"
            else:
                if parameter.kind is inspect.Parameter.KEYWORD_ONLY and not star:
                    parts.append("*")
                    star = True
                if parameter.default is not inspect.Parameter.empty:
                    text += "=" + (
                        _literal(parameter.default) or f"_optimus_call.signature.parameters[{name!r}].default"
                    )
            parts.append(text)
        return ", ".join(["self", *parts])

    def _gen_python_code(self, nodes: Any, root_module: str, namespace: Any, **kwargs: Any) -> Any:
        nodes = list(nodes)
        # A graph of other placeholders (one a compiler made from ours, which
        # keeps our codegen): FX's plain convention, placeholders as arguments.
        self._plain = any(
            n.op == "placeholder" and n.target not in self.call.sources for n in nodes
        )
        return super()._gen_python_code(nodes, root_module, namespace, **kwargs)

    def gen_fn_def(
        self, free_vars: list[str], maybe_return_annotation: str, *, expanded_def: bool = False
    ) -> str:
        if getattr(self, "_plain", False):
            return self._with_prologue(
                CodeGen.gen_fn_def(self, free_vars, maybe_return_annotation, expanded_def=expanded_def)
            )
        head = f"def {self._func_name}({self._parameters_text()}){maybe_return_annotation}:"
        lines = []
        general = uses_model = False
        for var in free_vars:
            target = _plain_name(var)
            if target == "self":
                continue
            source = self.call.sources.get(target)
            if source is None:
                raise ValueError(f"placeholder '{target}' has no source in the model's calling convention")
            text, needs = self.call.expression(source)
            if needs:
                text = f"_optimus_call.read({target!r}, L)"
            general |= needs
            uses_model |= needs or text.startswith("_model")
            lines.append(f"{target} = {text}")
        body = "".join(f"\n    {line}" for line in self._setup(general, uses_model) + lines)
        return head + self._guard + body + (self._attr_prologue or "")

    def _setup(self, general: bool, uses_model: bool) -> list[str]:
        setup = []
        if uses_model or general:
            setup.append(f"_model = self.__dict__.get({MODEL_ATTRIBUTE!r})")
        if general:
            arguments = ", ".join(f"{name!r}: {name}" for name in self.call.parameter_names)
            setup.append(f"L = _optimus_call.frame({{{arguments}}}, _model)")
        return setup

    def generate_output(
        self, output_args: Any, *, descs: Sequence[str] | None = None, repr_fn: Any = None
    ) -> str:
        if getattr(self, "_plain", False):
            return CodeGen.generate_output(self, output_args, descs=descs, repr_fn=repr_fn)
        repr_fn = repr_fn or repr
        outputs = list(output_args) if isinstance(output_args, list | tuple) else [output_args]
        texts = []
        for i, leaf in enumerate(self.call.output_leaves):
            if leaf.kind == "graph":
                texts.append(repr_fn(outputs[leaf.index]))
            elif leaf.kind == "constant":
                texts.append(_literal(leaf.constant) or f"_optimus_call.output_leaves[{i}].constant")
            else:
                text, needs = self.call.expression(leaf.source)
                if needs or text.startswith("_model"):
                    # rare (a tensor of the model returned as it is): read where it is now
                    text = f"_optimus_call.leaf({leaf.source!r}, {{{', '.join(f'{n!r}: {n}' for n in self.call.parameter_names)}}}, self)"
                texts.append(text)
        writes = "".join(
            f"{self.call.expression(container)[0]}{_store_text(key)} = {self._leaf_text(leaf, outputs, repr_fn)}\n"
            for container, key, leaf in self.call.input_writes
        )
        spec = self.call.output_spec
        if _plain_output(spec):
            return writes + "return " + _output_literal(spec, iter(texts), lambda text: text)
        return writes + f"return _optimus_unflatten([{', '.join(texts)}], _optimus_call.output_spec)"

    def _leaf_text(self, leaf: OutputLeaf, outputs: Sequence[Any], repr_fn: Any) -> str:
        if leaf.kind == "graph":
            return repr_fn(outputs[leaf.index])
        if leaf.kind == "constant":
            literal = _literal(leaf.constant)
            if literal is None:
                raise ValueError("a constant stored into an argument must be a Python literal")
            return literal
        text, needs = self.call.expression(leaf.source)
        if needs or text.startswith("_model"):
            raise ValueError(f"cannot write out the source {leaf.source!r} stored into an argument")
        return text

    def additional_globals(self) -> list[tuple[str, Any]]:
        # Only where the code names them: a module whose globals are all
        # importable can be pickled (FX writes import lines for them).
        names: list[tuple[str, Any]] = []
        if self.call.needs_itself_at_run_time:
            names.append(("_optimus_call", self.call))
        if not _plain_output(self.call.output_spec):
            names.append(("_optimus_unflatten", pytree.tree_unflatten))
        return [*super().additional_globals(), *names]

    # -- interpreters (torch.fx.Interpreter) ---------------------------------

    def process_inputs(self, *args: Any, **kwargs: Any) -> Any:
        local_values = self.call.bind(*args, **kwargs)
        self._last_locals = local_values
        return self.call.values(local_values, None)

    def process_outputs(self, outputs: Any) -> Any:
        flat = list(outputs) if isinstance(outputs, list | tuple) else [outputs]
        return self.call.rebuild(flat, self._last_locals or {}, None)


def _store_text(key: Any) -> str:
    """`[key]` for an item, `.name` for an attribute (`("attr", name)`)."""
    if isinstance(key, tuple) and key[:1] == ("attr",):
        return f".{key[1]}"
    return f"[{key!r}]"


def _literal(value: Any) -> str | None:
    """`value` written as Python where its repr is exact, else None."""
    if value is None or type(value) in (bool, int, str):
        return repr(value)
    if type(value) is float and value == value and abs(value) != float("inf"):
        return repr(value)
    return None


__all__ = ["MODEL_ATTRIBUTE", "ModelCall", "ModelCallCodeGen", "OutputLeaf"]

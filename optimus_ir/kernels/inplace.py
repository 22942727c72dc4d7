"""In-place forms an exported graph calls where autograd cannot see them.

The `reinplace` pass (`passes/reinplace.py`) turns an out-of-place call whose
written operand dies there back into its in-place form. Whether that is
safe also depends on autograd, which the graph cannot know when it is
exported: with gradients recorded, an earlier op may have saved the operand
for its backward (`x * w` saves `x`; some activations save their result), and writing
it would make the backward raise. So the graph calls a *grad-guarded* form:
the in-place call when `torch.is_grad_enabled()` is false (inference,
`torch.no_grad()`, `torch.inference_mode()`), the original out-of-place call
otherwise. Both compute the same values bit for bit (the same kernel).

Each form is a module attribute named after the out-of-place target it
stands for, dots spelled `__`, made on first access (`__getattr__`), so an
FX graph names it by qualified name and pickling finds it again:

* `torch__relu`                 -> `torch.relu_` / `torch.relu`
* `torch__add`                  -> `Tensor.add_` / `torch.add` (no `torch.add_`)
* `torch__ops__aten__add__Tensor` -> `aten.add_.Tensor` / `aten.add.Tensor`
* `_operator__add`              -> `operator.iadd` / `operator.add`
* `method__mul`                 -> `x.mul_(...)` / `x.mul(...)`
* `torch__nn__functional__relu` -> `F.relu(x, inplace=True)` / `F.relu(x)`

`inplace_form_name(kind, target)` gives the attribute for a call, or None
where it has no in-place form this module can make.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import torch

from optimus_ir.kernels.tracing import traced_as_leaf

_SEPARATOR = "__"
_METHOD = "method"
_FUNCTIONAL = "torch.nn.functional."

OPERATOR_IN_PLACE: dict[str, str] = {
    "add": "iadd",
    "sub": "isub",
    "mul": "imul",
    "truediv": "itruediv",
    "floordiv": "ifloordiv",
    "mod": "imod",
    "pow": "ipow",
    "and_": "iand",
    "or_": "ior",
    "xor": "ixor",
    "lshift": "ilshift",
    "rshift": "irshift",
}
"""`operator.<op>` -> its augmented assignment (`add` -> `iadd`)."""

_grad_enabled = torch.is_grad_enabled


def _resolve(qualified: str) -> Any:
    from optimus_ir.foundation.objects import resolve_qualified_name

    return resolve_qualified_name(qualified)


def _name_of(qualified: str) -> str:
    return qualified.replace(".", _SEPARATOR)


def _qualified(name: str) -> str:
    return name.replace(_SEPARATOR, ".")


def _method_call(method: str) -> Callable[..., Any]:
    """`self.<method>(...)` looked up on the object (tensor subclasses and
    FX proxies answer it too, which `torch.Tensor.<method>` would refuse)."""

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(self, method)(*args, **kwargs)

    return call


def _pair(name: str) -> tuple[Callable[..., Any], Callable[..., Any]] | None:
    """(out-of-place, in-place) callables of a form name, or None."""
    if _SEPARATOR not in name or "___" in name or name.startswith(_SEPARATOR) or name.endswith(_SEPARATOR):
        return None
    kind, _, rest = name.partition(_SEPARATOR)
    if kind == _METHOD:
        method = _qualified(rest)
        if "." in method or not callable(getattr(torch.Tensor, method + "_", None)):
            return None

        return _method_call(method), _method_call(method + "_")
    qualified = _qualified(name)
    module, _, last = qualified.rpartition(".")
    try:
        plain = _resolve(qualified)
    except Exception:  # noqa: BLE001  (an unresolvable name has no form)
        return None
    if module in ("operator", "_operator"):
        augmented = OPERATOR_IN_PLACE.get(last)
        return (plain, getattr(operator, augmented)) if augmented else None
    if qualified.startswith(_FUNCTIONAL) and "." not in qualified[len(_FUNCTIONAL):]:
        if not _takes_inplace(plain):
            return None

        def inplace_functional(*args: Any, **kwargs: Any) -> Any:
            return plain(*args, inplace=True, **kwargs)

        return plain, inplace_functional
    if qualified.startswith("torch.ops."):
        parts = qualified.split(".")
        if len(parts) != 5:
            return None
        parts[3] += "_"
        try:
            return plain, _resolve(".".join(parts))
        except Exception:  # noqa: BLE001
            return None
    try:
        return plain, _resolve(f"{module}.{last}_")
    except Exception:  # noqa: BLE001  (`torch.add` has no `torch.add_`: the method writes the first argument)
        if module != "torch" or not callable(getattr(torch.Tensor, last + "_", None)):
            return None
        return plain, _method_call(last + "_")


def _takes_inplace(function: Callable[..., Any]) -> bool:
    import inspect

    try:
        return "inplace" in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


OUT_OF_PLACE_ATTRIBUTE = "optimus_out_of_place"
"""The attribute of a grad-guarded form holding what the call stood for
before `reinplace`: the out-of-place callable, or for a Tensor method its
name (as an FX `call_method` node's target)."""

KIND_ATTRIBUTE = "optimus_op_kind"
"""The attribute of a grad-guarded form holding the op kind the report
counts it as (`op_counts.op_kind` of the out-of-place call: `relu`, `.add`)."""


def _kind_of(name: str, plain: Callable[..., Any]) -> str:
    if name.startswith(_METHOD + _SEPARATOR):
        return "." + name[len(_METHOD + _SEPARATOR):]
    if getattr(plain, "_overloadname", None) is not None:  # aten.add.Tensor -> add
        return str(plain).split(".")[1]
    return getattr(plain, "__name__", name)


def _guarded(name: str, plain: Callable[..., Any], inplace: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        if _grad_enabled():
            return plain(*args, **kwargs)
        return inplace(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__module__ = __name__
    call.__doc__ = f"In place unless gradients are recorded: the grad-guarded form of {_qualified(name)}."
    form = traced_as_leaf(call)  # a retrace (unpickling) keeps the test in the call
    method = name.startswith(_METHOD + _SEPARATOR)
    setattr(form, OUT_OF_PLACE_ATTRIBUTE, name[len(_METHOD + _SEPARATOR):] if method else plain)
    setattr(form, KIND_ATTRIBUTE, _kind_of(name, plain))
    return form


def __getattr__(name: str) -> Callable[..., Any]:
    pair = _pair(name) if not name.startswith("_") or name.startswith("_operator") else None
    if pair is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    form = _guarded(name, *pair)
    globals()[name] = form
    return form


def inplace_form_name(kind: str, target: str) -> str | None:
    """The qualified name of the grad-guarded in-place form of a call of
    `target` (`kind`: "call_function" or "call_method"), or None where it
    has none here (the pass decides whether the call has one at all)."""
    if not _spellable(target):
        return None
    name = _name_of(target) if kind == "call_function" else f"{_METHOD}{_SEPARATOR}{target}"
    if _pair(name) is None:
        return None
    return f"{__name__}.{name}"


def _spellable(target: str) -> bool:
    """A target the `__` spelling carries (no `__` of its own) that is not
    an in-place call already (a trailing `_`)."""
    return _SEPARATOR not in target and not target.endswith("_")


__all__ = ["KIND_ATTRIBUTE", "OPERATOR_IN_PLACE", "OUT_OF_PLACE_ATTRIBUTE", "inplace_form_name"]

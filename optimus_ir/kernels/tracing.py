"""Our grad-guarded forms, recorded as calls when FX traces them.

`reinplace`'s in-place forms (`optimus_ir.kernels.inplace`) and
`write-into-join`'s writers (`optimus_ir.kernels.joins`) test the grad mode
each call. When FX traces code that calls them -- unpickling a GraphModule
retraces its code -- tracing *through* one would fix the path of the grad
mode at that moment into the graph: a module pickled and loaded under
`no_grad` would then write in place under autograd too, and its backward
would raise. `traced_as_leaf` makes a form record itself as one call instead
(an argument is a `torch.fx.Proxy`), so the test stays in the call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch.fx


def _proxy_in(values: Sequence[Any]) -> torch.fx.Proxy | None:
    for value in values:
        if isinstance(value, torch.fx.Proxy):
            return value
        if isinstance(value, list | tuple):
            found = _proxy_in(value)
            if found is not None:
                return found
    return None


def traced_as_leaf(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function`, recorded as one call when FX traces it instead of traced
    through; its name, qualified name, module and docstring are kept (the
    traced graph names it by them, and pickles resolve it by them)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        proxy = _proxy_in((*args, *kwargs.values()))
        if proxy is not None:
            return proxy.tracer.create_proxy("call_function", call, args, kwargs)
        return function(*args, **kwargs)

    call.__name__ = function.__name__
    call.__qualname__ = function.__qualname__
    call.__module__ = function.__module__
    call.__doc__ = function.__doc__
    return call


__all__ = ["traced_as_leaf"]

"""Naming of Python objects that the IR refers to (call targets, enum literals).

The IR names a callable by its qualified import path (`torch.functional.split`,
`operator.getitem`, `torch.ops.aten.mm.default`). An object that cannot be
found again by its path (a closure, a lambda, a bound method) gets a name with a
`#k` suffix and lives in the program's object table, which travels beside the
IR from import to export.
"""

from __future__ import annotations

import builtins
import importlib
from functools import lru_cache
from typing import Any


class UnresolvedNameError(LookupError):
    """A name in the IR that is neither in the object table nor importable."""


@lru_cache(maxsize=4096)
def resolve_qualified_name(name: str) -> Any:
    """The object at an import path such as `torch.nn.functional.linear`."""
    parts = name.split(".")
    if len(parts) == 1:
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise UnresolvedNameError(f"cannot resolve '{name}': not a builtin")
    for split in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:split])
        try:
            obj: Any = importlib.import_module(module_name)
        except ImportError:
            continue
        except Exception:  # noqa: BLE001 - importing user code may fail in any way
            continue
        try:
            for attr in parts[split:]:
                obj = getattr(obj, attr)
        except AttributeError:
            continue
        return obj
    raise UnresolvedNameError(f"cannot resolve '{name}' by import path")


def _qualified_name(obj: Any) -> str | None:
    from torch.fx.node import _get_qualified_name

    try:
        return _get_qualified_name(obj)
    except Exception:  # noqa: BLE001 - FX raises RuntimeError/AttributeError alike
        module = getattr(obj, "__module__", None)
        qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
        if module and qualname:
            return f"{module}.{qualname}"
        return None


class ObjectTable:
    """Bidirectional map between IR names and the Python objects they denote."""

    def __init__(self) -> None:
        self.by_name: dict[str, Any] = {}
        # id -> (name, obj): the object is kept alive so that its id cannot be
        # reused by another object while this table exists.
        self._by_id: dict[int, tuple[str, Any]] = {}

    def name_of(self, obj: Any) -> str:
        """A stable IR name for `obj`; importable objects keep their path."""
        known = self._by_id.get(id(obj))
        if known is not None:
            return known[0]
        name = _qualified_name(obj)
        if name is not None and "<" not in name:
            try:
                if resolve_qualified_name(name) is obj:
                    self._by_id[id(obj)] = (name, obj)
                    return name
            except UnresolvedNameError:
                pass
        base = name or type(obj).__name__
        index = 0
        while f"{base}#{index}" in self.by_name:
            index += 1
        table_name = f"{base}#{index}"
        self.by_name[table_name] = obj
        self._by_id[id(obj)] = (table_name, obj)
        return table_name

    def resolve(self, name: str) -> Any:
        """The object a name denotes: the table first, then the import path."""
        if name in self.by_name:
            return self.by_name[name]
        if "#" in name:
            raise UnresolvedNameError(
                f"'{name}' names a local object that is not in this program's "
                "object table (it cannot be rebuilt from IR text alone)"
            )
        return resolve_qualified_name(name)

"""What capturing a model may change, and how it fails: shared by `api`
(`capture`) and `guards` (re-capture with a dynamic batch size), in a module
of its own so that neither imports the other (no import cycle)."""

from __future__ import annotations

from typing import Any

import torch


class CaptureError(RuntimeError):
    """Dynamo could not capture the model as one whole graph."""


class AttributeAssignmentError(CaptureError):
    """The model's forward assigns attributes (`self.scores = ...`) that the
    captured graph cannot assign. Dynamo's torch.compile replays such writes
    after the graph; `optimize` returns a module that runs the model itself
    (with an `OptimusFallbackWarning`), so that the writes still happen."""

    def __init__(self, message: str, attributes: tuple[str, ...]) -> None:
        super().__init__(message)
        self.attributes = attributes
        """The assigned attributes, as `ModuleClass.name`."""


ABSENT = object()
"""The value of an attribute a module did not have (in `ModuleState.changes`)."""


class ModuleState:
    """A shallow snapshot of every submodule's attributes (parameters,
    buffers, submodules, plain attributes), to undo what capture did.

    `torch._dynamo.export` replays the model's attribute assignments with
    the fake tensors of its tracing: `self.count += 1` on a registered
    buffer left the user's model holding a FakeTensor in place of the
    buffer."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.entries = [
            (m, dict(m.__dict__), dict(m._parameters), dict(m._buffers), dict(m._modules))  # noqa: SLF001
            for m in model.modules()
        ]

    def changes(self) -> list[tuple[str, Any, Any]]:
        """(attribute name, value before, value now) of every rebinding of a
        parameter, buffer, submodule or public attribute."""
        found = []
        for module, attrs, params, buffers, modules in self.entries:
            for before, now in (
                (params, module._parameters),  # noqa: SLF001
                (buffers, module._buffers),  # noqa: SLF001
                (modules, module._modules),  # noqa: SLF001
                (attrs, module.__dict__),
            ):
                for key in before.keys() | now.keys():
                    if now is module.__dict__ and key.startswith("_"):
                        continue  # torch's own bookkeeping (`_is_torch_compile`)
                    old, new = before.get(key, ABSENT), now.get(key, ABSENT)
                    if old is not new:
                        found.append((f"{type(module).__name__}.{key}", old, new))
        return found

    def restore(self) -> None:
        """Put every snapshotted attribute back, dropping those added since."""
        for module, attrs, params, buffers, modules in self.entries:
            for saved, live in (
                (params, module._parameters),  # noqa: SLF001
                (buffers, module._buffers),  # noqa: SLF001
                (modules, module._modules),  # noqa: SLF001
            ):
                live.clear()
                live.update(saved)
            for key in [k for k in module.__dict__ if k not in attrs]:
                del module.__dict__[key]
            module.__dict__.update(attrs)


__all__ = ["ABSENT", "AttributeAssignmentError", "CaptureError", "ModuleState"]

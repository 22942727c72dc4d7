"""The vocabulary the batch kernels share, without Triton: epilogue
activation names and their torch functions, and `multi_pointwise`'s program
text (`PROGRAM_GRAMMAR`, `parse_program`).

The custom ops (`ops.py`) and the lowering must import without Triton (it is
an optional dependency); the Triton modules (`activations.py`,
`pointwise.py`) take their names from here, so the reference and the kernels
cannot disagree on what a name or a program means.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import NamedTuple

import torch
import torch.nn.functional as F

ACTIVATIONS: dict[str, int] = {
    "none": 0,
    "relu": 1,
    "gelu": 2,
    "gelu_tanh": 3,
    "silu": 4,
    "sigmoid": 5,
    "tanh": 6,
}
"""Epilogue activation name -> the `tl.constexpr` code the kernels take."""

_TORCH_ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "none": lambda x: x,
    "relu": torch.relu,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
}


def activation_code(name: str) -> int:
    """The code of activation `name`; a ValueError names the known ones."""
    try:
        return ACTIVATIONS[name]
    except KeyError:
        raise ValueError(
            f"unknown activation '{name}' (known: {', '.join(ACTIVATIONS)})"
        ) from None


def torch_activation(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """The torch function computing activation `name` (the reference)."""
    activation_code(name)
    return _TORCH_ACTIVATIONS[name]


PROGRAM_GRAMMAR = """\
program := step (';' step)*
step    := unary | binary '(' 'other' ')' | binary '(' float ')'
unary   := relu | gelu | gelu_tanh | silu | sigmoid | tanh | neg | exp | abs
binary  := add | sub | mul | div | maximum | minimum"""
"""multi_pointwise's program text."""

UNARY: dict[str, int] = {
    "relu": 1, "gelu": 2, "gelu_tanh": 3, "silu": 4, "sigmoid": 5, "tanh": 6,
    "neg": 7, "exp": 8, "abs": 9,
}
"""Unary step name -> kernel code (1..6 are `activations.ACTIVATIONS` codes)."""
BINARY: dict[str, int] = {
    "add": 10, "sub": 11, "mul": 12, "div": 13, "maximum": 14, "minimum": 15,
}
"""Binary step name -> kernel code."""

_STEP_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?$")
_FLOAT_RE = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")


class Step(NamedTuple):
    """One step of a pointwise program: `name`, and for binary steps whether
    the operand is the member's next other tensor or `scalar`."""

    name: str
    operand: str  # "none" | "tensor" | "scalar"
    scalar: float | None = None

    @property
    def code(self) -> int:
        """The kernel's code of this step."""
        return UNARY[self.name] if self.operand == "none" else BINARY[self.name]


@lru_cache(maxsize=256)
def parse_program(program: str) -> tuple[Step, ...]:
    """The steps of `program` (`PROGRAM_GRAMMAR`); a ValueError names the
    first bad step."""
    if not program.strip():
        raise ValueError("pointwise program is empty")
    steps: list[Step] = []
    for index, text in enumerate(program.split(";")):
        text = text.strip()
        match = _STEP_RE.match(text)
        if match is None:
            raise ValueError(f"pointwise program step {index} '{text}' is not name or name(arg)")
        name, arg = match.group(1), match.group(2)
        if arg is None:
            if name not in UNARY:
                hint = " (a binary step needs an operand)" if name in BINARY else ""
                raise ValueError(
                    f"pointwise program step {index} '{text}': unknown unary op{hint} "
                    f"(unary: {', '.join(UNARY)})"
                )
            steps.append(Step(name, "none"))
            continue
        if name not in BINARY:
            raise ValueError(
                f"pointwise program step {index} '{text}': unknown binary op "
                f"(binary: {', '.join(BINARY)})"
            )
        arg = arg.strip()
        if arg == "other":
            steps.append(Step(name, "tensor"))
        elif _FLOAT_RE.match(arg):  # digits only: no inf/nan
            steps.append(Step(name, "scalar", float(arg)))
        else:
            raise ValueError(
                f"pointwise program step {index} '{text}': operand must be 'other' "
                f"or a float literal"
            )
    return tuple(steps)


def tensor_step_count(program: str) -> int:
    """How many steps of `program` read a tensor from `others`."""
    return sum(1 for step in parse_program(program) if step.operand == "tensor")

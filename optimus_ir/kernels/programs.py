"""The vocabulary the batch kernels share, without Triton: one table of the
program steps (`STEPS`: name, kernel code, arity, torch reference), from
which the epilogue activations (`ACTIVATIONS`), the program grammar
(`PROGRAM_GRAMMAR`, `parse_program`) and the references derive.

The custom ops (`ops.py`) and the lowering must import without Triton (it is
an optional dependency); the Triton modules (`activations.py` computes the
unary steps, `pointwise.py` the binary ones) take their codes from here, so
the reference and the kernels cannot disagree on what a name or a program
means. The dialect's ops name the step computing them in their facts
(`OpFacts.kernel`); adding a step is one row here and one branch in the
Triton module of its arity.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class ProgramStep:
    """One step of `multi_pointwise`'s programs."""

    name: str
    code: int
    """The `tl.constexpr` code the Triton kernels branch on (0 is no step)."""
    arity: int
    """1: `x -> f(x)`; 2: `x -> f(x, operand)`, the operand a tensor or a float."""
    reference: Callable[..., torch.Tensor]
    """The torch function computing the step on a member (`f(x)` or
    `f(x, other)`): the reference implementation and the tests' oracle."""
    scalar_reference: Callable[[torch.Tensor, float], torch.Tensor] | None = None
    """For a binary step with a float operand, where it differs from `reference`."""
    epilogue: bool = False
    """Usable as the activation epilogue of the grouped GEMM and the layer
    norm kernels (`ACTIVATIONS`)."""
    commutative: bool = False
    """`f(x, s) == f(s, x)` bit for bit (a reversed scalar step is the step)."""

    def apply_scalar(self, x: torch.Tensor, scalar: float) -> torch.Tensor:
        """The binary step with the float operand `scalar`."""
        return (self.scalar_reference or self.reference)(x, scalar)


def _gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x, approximate="tanh")


STEPS: tuple[ProgramStep, ...] = (
    # Unary (activations.py). Codes 1-6 are also the epilogue activations'.
    ProgramStep("relu", 1, 1, torch.relu, epilogue=True),
    ProgramStep("gelu", 2, 1, F.gelu, epilogue=True),
    ProgramStep("gelu_tanh", 3, 1, _gelu_tanh, epilogue=True),
    ProgramStep("silu", 4, 1, F.silu, epilogue=True),
    ProgramStep("sigmoid", 5, 1, torch.sigmoid, epilogue=True),
    ProgramStep("tanh", 6, 1, torch.tanh, epilogue=True),
    ProgramStep("neg", 7, 1, torch.neg),
    ProgramStep("exp", 8, 1, torch.exp),
    ProgramStep("abs", 9, 1, torch.abs),
    # Binary (pointwise.py).
    ProgramStep("add", 10, 2, torch.add, commutative=True),
    ProgramStep("sub", 11, 2, torch.sub),
    ProgramStep("mul", 12, 2, torch.mul, commutative=True),
    ProgramStep("div", 13, 2, torch.div),
    ProgramStep("maximum", 14, 2, torch.maximum, scalar_reference=torch.clamp_min),
    ProgramStep("minimum", 15, 2, torch.minimum, scalar_reference=torch.clamp_max),
    # Unary (activations.py), torch's default parameters only.
    ProgramStep("log", 16, 1, torch.log),
    ProgramStep("erf", 17, 1, torch.erf),
    ProgramStep("softplus", 18, 1, F.softplus),
    ProgramStep("hardswish", 19, 1, F.hardswish),
    ProgramStep("hardsigmoid", 20, 1, F.hardsigmoid),
    ProgramStep("mish", 21, 1, F.mish),
    ProgramStep("elu", 22, 1, F.elu),
    ProgramStep("sqrt", 23, 1, torch.sqrt),
    ProgramStep("rsqrt", 24, 1, torch.rsqrt),
    ProgramStep("reciprocal", 25, 1, torch.reciprocal),
    ProgramStep("sin", 26, 1, torch.sin),
    ProgramStep("cos", 27, 1, torch.cos),
    ProgramStep("log1p", 28, 1, torch.log1p),
    ProgramStep("expm1", 29, 1, torch.expm1),
)
"""Every program step, once."""

STEP_BY_NAME: dict[str, ProgramStep] = {step.name: step for step in STEPS}
STEP_CODES: dict[str, int] = {step.name: step.code for step in STEPS}
"""Step name -> kernel code (the Triton modules' `tl.constexpr`s)."""

ACTIVATIONS: dict[str, int] = {"none": 0, **{s.name: s.code for s in STEPS if s.epilogue}}
"""Epilogue activation name -> the `tl.constexpr` code the kernels take."""

UNARY: dict[str, int] = {s.name: s.code for s in STEPS if s.arity == 1}
"""Unary step name -> kernel code."""
BINARY: dict[str, int] = {s.name: s.code for s in STEPS if s.arity == 2}
"""Binary step name -> kernel code."""

assert len(set(STEP_CODES.values())) == len(STEPS) and 0 not in STEP_CODES.values()


def _identity(x: torch.Tensor) -> torch.Tensor:
    return x


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
    return _identity if name == "none" else STEP_BY_NAME[name].reference


def unary_reference(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """The torch function computing unary step `name`."""
    return STEP_BY_NAME[name].reference


def binary_reference(name: str, operand: Any) -> Callable[..., torch.Tensor]:
    """The torch function computing binary step `name` with a tensor
    operand, or (`operand` a float) with that scalar."""
    step = STEP_BY_NAME[name]
    return step.reference if isinstance(operand, torch.Tensor) else step.apply_scalar


PROGRAM_GRAMMAR = f"""\
program := step (';' step)*
step    := unary | binary '(' 'other' ')' | binary '(' float ')'
unary   := {' | '.join(UNARY)}
binary  := {' | '.join(BINARY)}"""
"""multi_pointwise's program text."""

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

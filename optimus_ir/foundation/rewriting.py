"""The bounded greedy rewrite driver.

A pass here is an ordered list of small named `RewritePattern`s (xDSL's class:
`match_and_rewrite(op, rewriter)`, changing the IR only through the
`PatternRewriter`: `rewriter.replace(op, new_ops, new_results)`,
`rewriter.erase(op)`, `rewriter.insert(op, InsertPoint...)`,
`rewriter.replace_all_uses_with(a, b)`, `rewriter.notify_op_modified(op)`).

`GreedyRewriteDriver` applies them to a fixpoint, like xDSL's
`PatternRewriteWalker` but

* worklist-based: a sweep visits every op once; after a rewrite only the new
  ops, the modified ops, the users of replaced values and the defining ops of
  the operands of erased ops are revisited, so a sweep is linear in the graph
  plus the work the rewrites cause;
* bounded: at most `max_sweeps` sweeps (a sweep is needed only if the
  previous one changed something; the last one confirms the fixpoint) and at
  most `max_rewrites` rewrites per run (default: `rewrites_per_op` per op plus
  a constant). Hitting either is a `RewriteLimitExceeded` error (a
  `DiagnosticException`) naming the patterns still firing -- never a hang;
* accounted: per-pattern attempts, rewrites and time go to the active pass's
  `PassRecord`; every rewrite is charged to the pipeline's `RewriteBudget`
  (`max_rewrites` across a pipeline, for bisection) and logged with the pass,
  pattern, op name, op index and location. When the budget is spent the driver
  stops quietly. Drivers that must run to completion (a lowering that has to
  convert every op) pass `RewriteConfig(budgeted=False)`.

A pattern with a true `deferred` class attribute is tried on an op only when
no other pattern has anything left to do (the worklist is empty): for
patterns that tidy up after the others and are costly to repeat, such as
rebuilding a split with thousands of results each time one more piece dies.
Every op visited is tried with them before the sweep ends, so the fixpoint
is the same.

New ops inherit the location of the op being rewritten, so diagnostics about
them still point at a source line.

Example::

    class TanhOfNeg(RewritePattern):
        name = "cat-of-one"          # optional; defaults to the class name

        @op_type_rewrite_pattern
        def match_and_rewrite(self, op: CallFunctionOp, rewriter: PatternRewriter):
            ...
            rewriter.replace(op, [new_op])

    @dataclass(frozen=True)
    class MyPass(PatternPass):
        '''What the pass does.'''
        name = "my-pass"

        def patterns(self):
            return [TanhOfNeg()]
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnknownLoc
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriterListener,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.worklist import Worklist

from optimus_ir.foundation.diagnostics import OptimusError
from optimus_ir.foundation.statistics import PatternStatistics, current_pass_context


class RewriteLimitExceeded(OptimusError):
    """The greedy driver hit its sweep or rewrite cap: the patterns do not
    converge. `patterns` names the ones still firing, most active first."""

    def __init__(
        self, message: str, op: Operation | None, patterns: Sequence[str], sweeps: int, rewrites: int
    ) -> None:
        super().__init__(message, op)
        self.patterns = tuple(patterns)
        self.sweeps = sweeps
        self.rewrites = rewrites


class PatternError(OptimusError):
    """A pattern raised an unexpected exception (a bug in the pattern); the
    original exception is the `__cause__`."""

    def __init__(self, message: str, op: Operation | None, pattern: str) -> None:
        super().__init__(message, op)
        self.pattern = pattern


@dataclass(frozen=True)
class RewriteConfig:
    """Limits and traversal order of one driver run."""

    max_sweeps: int = 10
    max_rewrites: int | None = None
    """Cap on rewrites in one run; None: `rewrites_per_op * ops + 1000`."""
    rewrites_per_op: int = 8
    walk_reverse: bool = False
    """Visit ops bottom-up (users before definitions), e.g. for dead code."""
    budgeted: bool = True
    """Charge rewrites to the pipeline's budget (and stop when it is spent)."""


def pattern_name(pattern: RewritePattern) -> str:
    """A pattern's `name` attribute when it is a string, else its class name."""
    name = getattr(pattern, "name", None)
    return name if isinstance(name, str) else type(pattern).__name__


class RootedPattern(RewritePattern):
    """A pattern of the ops of its `roots` classes, named once: the greedy
    driver tries it on those ops only (dispatching on `roots`), and
    `match_and_rewrite` hands `rewrite` only those (for any other driver).
    A subclass sets `roots` and writes `rewrite(op, rewriter)` for an op
    typed as one of them."""

    roots: ClassVar[tuple[type[Operation], ...]]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, self.roots):
            self.rewrite(op, rewriter)

    def rewrite(self, op: Any, rewriter: PatternRewriter, /) -> None:
        """Rewrite `op`, an instance of one of `roots`, or leave it."""
        raise NotImplementedError


def _flatten(patterns: Iterable[RewritePattern]) -> list[RewritePattern]:
    flat: list[RewritePattern] = []
    for pattern in patterns:
        if isinstance(pattern, GreedyRewritePatternApplier):
            flat.extend(_flatten(pattern.rewrite_patterns))
        else:
            flat.append(pattern)
    return flat


class GreedyRewriteDriver:
    """Applies an ordered list of patterns to a fixpoint, within limits.

    At each op the patterns are tried in order; the first that changes the
    IR wins and the driver moves on (the op, if it survives, is revisited
    when the rewrite notified it as modified)."""

    def __init__(
        self,
        patterns: Sequence[RewritePattern] | RewritePattern,
        config: RewriteConfig | None = None,
        *,
        name: str | None = None,
        listeners: Sequence[PatternRewriterListener] = (),
    ) -> None:
        if isinstance(patterns, RewritePattern):
            patterns = [patterns]
        self.patterns = _flatten(patterns)
        self.names = [pattern_name(p) for p in self.patterns]
        self.config = config or RewriteConfig()
        self.name = name
        self.listeners = tuple(listeners)
        """Extra rewriter listeners (analyses kept up to date as ops are
        inserted, modified, replaced and erased), called after the driver's."""
        self._worklist: Worklist[Operation] = Worklist()
        self._current: Operation | None = None

    # -- listener callbacks -------------------------------------------------

    def _on_insert(self, op: Operation) -> None:
        current = self._current
        if current is not None and isinstance(op.location, UnknownLoc):
            op.location = current.location
        self._worklist.push(op)
        if op.regions:
            for nested in op.walk():
                if nested is not op:
                    self._worklist.push(nested)

    def _on_remove(self, op: Operation) -> None:
        worklist = self._worklist
        if op.regions:
            for nested in op.walk():
                worklist.remove(nested)
        else:
            worklist.remove(op)
        for operand in op.operands:
            owner = operand.owner
            if isinstance(owner, Operation):
                worklist.push(owner)

    def _on_modify(self, op: Operation) -> None:
        self._worklist.push(op)

    def _on_replace(self, op: Operation, new_results: Sequence[SSAValue | None]) -> None:
        for result in op.results:
            for use in result.uses:
                self._worklist.push(use.operation)

    # -- driving ------------------------------------------------------------

    def rewrite(self, root: Operation | Region | Block) -> bool:
        """Rewrite everything nested in `root` (for an op: inside its regions,
        not the op itself). Returns whether the IR changed."""
        config = self.config
        context = current_pass_context(self.name or "<rewrite>")
        record = context.record
        budget = context.budget if config.budgeted else None
        stats: list[PatternStatistics] = [record.pattern(n) for n in self.names]
        if isinstance(root, Operation):
            regions = list(root.regions)
        elif isinstance(root, Region):
            regions = [root]
        else:
            regions = [root]

        def all_ops() -> list[Operation]:
            ops: list[Operation] = []
            for region in regions:
                ops.extend(region.walk())
            return ops

        initial = all_ops()
        op_index: dict[Operation, int] | None = None
        if budget is not None and budget.keep_log:
            # indices in the walk order of the root (the root op itself is 0)
            walked = root.walk() if isinstance(root, Operation) else initial
            op_index = {op: i for i, op in enumerate(walked)}
        cap = config.max_rewrites
        if cap is None:
            cap = config.rewrites_per_op * len(initial) + 1000

        rewriter = PatternRewriter(InsertPoint.at_end(Block()))
        rewriter.extend_from_listener(
            PatternRewriterListener(
                operation_insertion_handler=[self._on_insert],
                operation_removal_handler=[self._on_remove],
                operation_modification_handler=[self._on_modify],
                operation_replacement_handler=[self._on_replace],
            )
        )
        for listener in self.listeners:
            rewriter.extend_from_listener(listener)
        # A pattern may name the op classes it is rooted at (`roots`): it is
        # not even tried on other ops (a lowering pattern for 8 batch ops
        # need not be set up for each of 100k other ops).
        tried = [
            (pattern, name, stat, getattr(pattern, "roots", None))
            for pattern, name, stat in zip(self.patterns, self.names, stats)
        ]
        patterns = [entry for entry in tried if not getattr(entry[0], "deferred", False)]
        deferred = [entry for entry in tried if getattr(entry[0], "deferred", False)]
        by_class: dict[type, list[Any]] = {}
        deferred_by_class: dict[type, list[Any]] = {}
        worklist = self._worklist = Worklist()
        rewrites = 0
        changed = False
        recent: deque[str] = deque(maxlen=256)
        fired: Counter[str] = Counter()
        perf = time.perf_counter
        ops = initial
        for sweep in range(1, config.max_sweeps + 1):
            if sweep > 1:
                ops = all_ops()
            if config.walk_reverse:
                for op in ops:
                    worklist.push(op)
            else:
                for op in reversed(ops):
                    worklist.push(op)
            fired = Counter()
            sweep_changed = False
            record.sweeps += 1
            # ops waiting for the deferred patterns, tried when nothing else is
            deferred_ops: Worklist[Operation] = Worklist()
            while worklist or deferred_ops:
                if worklist:
                    op = worklist.pop()
                    active = patterns
                    if deferred:
                        deferred_ops.push(op)
                else:
                    op = deferred_ops.pop()
                    active = deferred
                if op.parent is None:
                    continue  # detached meanwhile
                # The patterns rooted at this op's class, looked up once per
                # class (not an isinstance per pattern per op).
                table = by_class if active is patterns else deferred_by_class
                applicable = table.get(type(op))
                if applicable is None:
                    applicable = table[type(op)] = _rooted_at(type(op), active)
                if not applicable:
                    continue
                self._current = op
                point = InsertPoint.before(op)
                rewriter.current_operation = op
                for pattern, name, stat, _roots in applicable:
                    if budget is not None and budget.exhausted:
                        self._current = None
                        self._worklist = Worklist()  # drop the rest
                        return changed or sweep_changed
                    rewriter.has_done_action = False
                    # one insertion point per op; reset only if a pattern that
                    # did nothing moved it
                    if rewriter.insertion_point is not point:
                        rewriter.insertion_point = point
                    if rewriter.name_hint is not None:
                        rewriter.name_hint = None
                    stat.attempts += 1
                    start = perf()
                    try:
                        pattern.match_and_rewrite(op, rewriter)
                    except DiagnosticException:
                        raise
                    except Exception as err:
                        raise PatternError(
                            f"pattern '{name}' failed on '{op.name}': "
                            f"{type(err).__name__}: {err}",
                            op,
                            name,
                        ) from err
                    finally:
                        stat.seconds += perf() - start
                    if not rewriter.has_done_action:
                        continue
                    stat.rewrites += 1
                    rewrites += 1
                    sweep_changed = True
                    fired[name] += 1
                    recent.append(name)
                    if budget is not None:
                        budget.record(
                            record.name,
                            name,
                            op,
                            op_index.get(op) if op_index is not None else None,
                        )
                    if rewrites > cap:
                        self._current = None
                        culprits = [n for n, _ in Counter(recent).most_common()]
                        raise RewriteLimitExceeded(
                            f"{self._who(record.name)}: greedy rewriting did not converge: "
                            f"more than {cap} rewrites; patterns still firing: "
                            f"{_describe(Counter(recent))}",
                            op,
                            culprits,
                            sweep,
                            rewrites,
                        )
                    break
            self._current = None
            if not sweep_changed:
                return changed
            changed = True
        culprits = [n for n, _ in fired.most_common()]
        raise RewriteLimitExceeded(
            f"{self._who(record.name)}: greedy rewriting did not converge in "
            f"{config.max_sweeps} sweeps ({rewrites} rewrites); patterns still firing: "
            f"{_describe(fired)}",
            None,
            culprits,
            config.max_sweeps,
            rewrites,
        )

    def _who(self, pass_name: str) -> str:
        return f"pass '{self.name or pass_name}'"


def _rooted_at(cls: type, entries: Sequence[Any]) -> list[Any]:
    """The (pattern, name, statistics, roots) entries whose pattern is tried
    on ops of class `cls`: those without `roots` and those rooted at a base
    of `cls` (what `isinstance(op, roots)` says of every op of that class)."""
    return [entry for entry in entries if entry[3] is None or issubclass(cls, entry[3])]


def _describe(counts: Counter[str]) -> str:
    return ", ".join(f"'{name}' ({n}x)" for name, n in counts.most_common())


def apply_patterns(
    root: Operation | Region | Block,
    patterns: Sequence[RewritePattern] | RewritePattern,
    config: RewriteConfig | None = None,
    *,
    name: str | None = None,
    listeners: Sequence[PatternRewriterListener] = (),
) -> bool:
    """Run `patterns` greedily on `root` with the bounded driver; returns
    whether the IR changed. `listeners` are told of every change."""
    return GreedyRewriteDriver(patterns, config, name=name, listeners=listeners).rewrite(root)


@dataclass(frozen=True)
class PatternPass(ModulePass):
    """Base of a pass that is an ordered list of patterns run by the bounded
    greedy driver. Subclasses set `name`, define `patterns()` and, if they
    need other limits or order, `rewrite_config()`."""

    def patterns(self) -> Sequence[RewritePattern]:
        raise NotImplementedError

    def rewrite_config(self) -> RewriteConfig:
        return RewriteConfig()

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        GreedyRewriteDriver(self.patterns(), self.rewrite_config(), name=self.name).rewrite(op)


def patch_operands(op: Operation, subst: dict[SSAValue, SSAValue]) -> None:
    """Point `op`'s operands at their replacements in `subst`, in one
    assignment (for conversion passes that replace many values in one walk).

    Setting operands one index at a time (what `replace_all_uses_with`
    does per use) rebuilds the operand tuple each time: O(K) per operand of
    a K-operand cat or stack, quadratic over its inputs.
    """
    operands = op.operands
    for value in operands:
        if value in subst:
            op.operands = [subst.get(v, v) for v in operands]
            return


__all__ = [
    "GreedyRewriteDriver",
    "patch_operands",
    "PatternError",
    "PatternPass",
    "RewriteConfig",
    "RewriteLimitExceeded",
    "RootedPattern",
    "apply_patterns",
    "pattern_name",
]

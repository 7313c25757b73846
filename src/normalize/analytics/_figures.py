"""Token and cost figures, and the rules that add them up without counting twice.

Rules (docs/analytics.md, "Counting usage"):

* A figure is the token counts and cost of one ``usage`` body.  Tokens and cost
  are two groups, settled separately: an agent may itemize tokens per call and
  report cost only cumulatively (Claude transcripts).
* Per turn, the main agent's figure is, in this order of preference: the
  ``turn``-scope figures; else the sum of its ``call``-scope figures; else the
  growth of its ``session``-scope (cumulative) counters over the turn.
* Sub-agent usage is added to the turn that spawned the sub-agent, unless the
  turn's figure came from cumulative counters (those already include it).
* A session's total is its last cumulative figure plus the turns after it, or
  the sum of its turns when that is larger (or no cumulative figure exists).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from normalize import Usage

__all__ = ["EMPTY", "Figure", "combine", "figure_of", "larger", "total"]

_TOKEN_FIELDS = ("input", "output", "cache_read", "cache_write", "reasoning", "total")


def _add(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _sources(a: Figure, b: Figure) -> str | None:
    """The cost source of a sum: ``agent``, ``estimated``, or ``agent+estimated`` when both were added."""
    names = {n for f in (a, b) if f.cost is not None for n in (f.cost_source or "agent").split("+")}
    return "+".join(sorted(names)) if names else None


def _beyond(now: int | None, before: int | None) -> int | None:
    """How much a cumulative counter holds beyond what was already counted (never negative)."""
    if now is None:
        return None
    if before is None:
        return now
    return max(now - before, 0)


@dataclass(frozen=True, slots=True)
class Figure:
    input: int | None = None
    output: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None
    reasoning: int | None = None
    total: int | None = None
    cost: float | None = None
    currency: str | None = None
    cost_source: str | None = None

    @property
    def has_tokens(self) -> bool:
        return any(getattr(self, f) is not None for f in _TOKEN_FIELDS)

    @property
    def has_cost(self) -> bool:
        return self.cost is not None

    def tokens_size(self) -> int:
        return (self.input or 0) + (self.output or 0) + (self.total or 0)

    def plus(self, other: Figure) -> Figure:
        return Figure(
            input=_add(self.input, other.input),
            output=_add(self.output, other.output),
            cache_read=_add(self.cache_read, other.cache_read),
            cache_write=_add(self.cache_write, other.cache_write),
            reasoning=_add(self.reasoning, other.reasoning),
            total=_add(self.total, other.total),
            cost=None if self.cost is None and other.cost is None else (self.cost or 0.0) + (other.cost or 0.0),
            currency=self.currency or other.currency,
            cost_source=_sources(self, other),
        )

    def beyond(self, before: Figure) -> Figure:
        """A cumulative figure less what was already counted, field by field, never below zero."""
        cost: float | None = None
        if self.cost is not None:
            cost = self.cost if before.cost is None else max(self.cost - before.cost, 0.0)
        return Figure(
            input=_beyond(self.input, before.input),
            output=_beyond(self.output, before.output),
            cache_read=_beyond(self.cache_read, before.cache_read),
            cache_write=_beyond(self.cache_write, before.cache_write),
            reasoning=_beyond(self.reasoning, before.reasoning),
            total=_beyond(self.total, before.total),
            cost=cost,
            currency=self.currency,
            cost_source=self.cost_source,
        )

    def tokens_only(self) -> Figure:
        return Figure(
            input=self.input,
            output=self.output,
            cache_read=self.cache_read,
            cache_write=self.cache_write,
            reasoning=self.reasoning,
            total=self.total,
        )

    def cost_only(self) -> Figure:
        return Figure(cost=self.cost, currency=self.currency, cost_source=self.cost_source)

    def columns(self) -> tuple[object, ...]:
        return (
            self.input,
            self.output,
            self.cache_read,
            self.cache_write,
            self.reasoning,
            self.total,
            None if self.cost is None else round(self.cost, 10),
            self.currency,
            self.cost_source,
        )


EMPTY = Figure()


def figure_of(body: Usage) -> Figure | None:
    """The figure of a usage body, or None when it holds no tokens and no cost (context or rate limits only)."""
    t = body.tokens
    c = body.cost
    fig = Figure(
        input=t.input if t else None,
        output=t.output if t else None,
        cache_read=t.cache_read if t else None,
        cache_write=t.cache_write if t else None,
        reasoning=t.reasoning if t else None,
        total=t.total if t else None,
        cost=c.amount if c else None,
        currency=c.currency if c else None,
        cost_source=(c.source or "agent") if c else None,
    )
    return fig if fig.has_tokens or fig.has_cost else None


def total(figures: Iterable[Figure]) -> Figure:
    out = EMPTY
    for f in figures:
        out = out.plus(f)
    return out


def larger(a: Figure, b: Figure) -> Figure:
    """Per group (tokens, cost), the larger of two figures for the same thing."""
    tokens = a if a.tokens_size() >= b.tokens_size() else b
    cost = a if (a.cost or 0.0) >= (b.cost or 0.0) else b
    if not a.has_cost:
        cost = b
    elif not b.has_cost:
        cost = a
    return tokens.tokens_only().plus(cost.cost_only())


def combine(tokens: Figure | None, cost: Figure | None) -> Figure:
    out = EMPTY
    if tokens is not None:
        out = out.plus(tokens.tokens_only())
    if cost is not None:
        out = out.plus(cost.cost_only())
    return out

"""``normalize stats``: tokens, cost and activity per agent and model, day, week, month or project.

Computed from the tables' rows, so the figures are the tables' own: what
``stats`` prints is what a SQL query over the exported tables gives
(docs/analytics.md).  Tokens and cost come from the ``usage`` rows, which add up
to each session's total once (sub-agents included, never twice); a row falls in
the day of its time and the group of its own model.  Sessions, turns, tool calls,
permissions and errors are counted per top-level session, in the group of its
start day, its main model, its project (working folder) and its agent.
Days are UTC dates.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import PurePath
from typing import Any

from ._schema import column_names
from ._tables import SessionRows

__all__ = ["BY", "Filter", "Line", "Summary", "parse_day", "summarize"]

#: The groupings of ``stats --by``; ``agent-model`` (agent and model) is the default.
BY = ("agent-model", "day", "week", "month", "model", "project", "agent")

_TOKENS = (
    "input_tokens",
    "uncached_input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "output_tokens",
    "reasoning_tokens",
    "total_tokens",
)


def parse_day(text: str) -> date:
    """A day given as ``YYYY-MM-DD`` or ``YYYYMMDD``."""
    return date.fromisoformat(text if "-" in text else f"{text[:4]}-{text[4:6]}-{text[6:]}")


def _day(ts: Any) -> date | None:
    if ts is None:
        return None
    try:
        parsed = datetime.fromisoformat(str(ts))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    return (parsed - (parsed.utcoffset() or timedelta(0))).date()


def _project_matches(cwd: str | None, wanted: str) -> bool:
    """``--project``: the session's working folder is ``wanted``, lies under it, or has that name."""
    if cwd is None:
        return False
    path, want = PurePath(cwd), PurePath(wanted)
    return path == want or want in path.parents or path.name == wanted


@dataclass(frozen=True)
class Filter:
    """Which rows count: days in ``[since, until]`` (each optional), sessions of ``project``."""

    since: date | None = None
    until: date | None = None
    project: str | None = None

    def day_ok(self, day: date | None) -> bool:
        if self.since is None and self.until is None:
            return True
        if day is None:
            return False
        return (self.since is None or day >= self.since) and (self.until is None or day <= self.until)


def _group(by: str, agent: str, model: str | None, cwd: str | None, day: date | None) -> tuple[str | None, ...]:
    if by == "agent-model":
        return (agent, model)
    if by == "agent":
        return (agent,)
    if by == "model":
        return (model,)
    if by == "project":
        return (cwd,)
    if day is None:
        return (None,)
    if by == "day":
        return (day.isoformat(),)
    if by == "week":  # the Monday the ISO week starts on
        return ((day - timedelta(days=day.weekday())).isoformat(),)
    return (day.strftime("%Y-%m"),)


@dataclass
class Line:
    """Totals for one group."""

    key: tuple[str | None, ...]
    sessions: int = 0
    subagents: int = 0
    turns: int = 0
    tool_calls: int = 0
    tool_categories: dict[str, int] = field(default_factory=dict)
    permission_requests: int = 0
    approvals: dict[str, int] = field(default_factory=dict)
    errors: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_TOKENS, 0))
    cost: float | None = None
    cost_sources: set[str] = field(default_factory=set)
    unpriced_rows: int = 0  # usage rows of sessions without any cost: the cost shown misses them

    def add_cost(self, amount: float | None, source: str | None, unpriced: bool) -> None:
        if amount is None:
            self.unpriced_rows += unpriced
            return
        self.cost = (self.cost or 0.0) + amount
        self.cost_sources.update((source or "agent").split("+"))

    def merge(self, other: Line) -> None:
        for name in ("sessions", "subagents", "turns", "tool_calls", "permission_requests", "errors", "unpriced_rows"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for mine, theirs in ((self.tool_categories, other.tool_categories), (self.approvals, other.approvals)):
            for k, v in theirs.items():
                mine[k] = mine.get(k, 0) + v
        for k, v in other.tokens.items():
            self.tokens[k] += v
        if other.cost is not None:
            self.cost = (self.cost or 0.0) + other.cost
        self.cost_sources |= other.cost_sources

    @property
    def cost_source(self) -> str | None:
        return "+".join(sorted(self.cost_sources)) if self.cost_sources else None

    def as_json(self, names: tuple[str, ...]) -> dict[str, Any]:
        return {
            **dict(zip(names, self.key, strict=True)),
            "sessions": self.sessions,
            "subagents": self.subagents,
            "turns": self.turns,
            "tool_calls": self.tool_calls,
            "tool_calls_by_category": dict(sorted(self.tool_categories.items())),
            "permission_requests": self.permission_requests,
            "approvals": dict(sorted(self.approvals.items())),
            "errors": self.errors,
            "tokens": dict(self.tokens),
            "cost": None
            if self.cost is None
            else {
                "amount": round(self.cost, 6),
                "currency": "USD",
                "source": self.cost_source,
                "complete": self.unpriced_rows == 0,
            },
            "unpriced_usage_rows": self.unpriced_rows,
        }


def key_names(by: str) -> tuple[str, ...]:
    return ("agent", "model") if by == "agent-model" else (by,)


@dataclass
class Summary:
    by: str = "agent-model"
    filter: Filter = field(default_factory=Filter)
    lines: dict[tuple[str | None, ...], Line] = field(default_factory=dict)

    def _line(self, key: tuple[str | None, ...]) -> Line:
        line = self.lines.get(key)
        if line is None:
            line = self.lines[key] = Line(key)
        return line

    def add(self, rows: SessionRows) -> None:
        s = rows.session
        if self.filter.project is not None and not _project_matches(s["cwd"], self.filter.project):
            return
        agent = str(s["agent"])
        start = _day(s["started_at"])
        if self.filter.day_ok(start):
            line = self._line(_group(self.by, agent, s["model"], s["cwd"], start))
            line.sessions += 1
            line.subagents += len(rows.tables.get("subagents", ()))
            line.turns += int(s["turns"] or 0)
            line.errors += int(s["errors"] or 0)
            cat = column_names("tool_calls").index("category")
            for r in rows.tables["tool_calls"]:
                line.tool_calls += 1
                line.tool_categories[r[cat]] = line.tool_categories.get(r[cat], 0) + 1
            cols = column_names("permissions")
            mode_i, decision_i = cols.index("mode"), cols.index("decision")
            for r in rows.tables["permissions"]:
                if r[mode_i] == "asked":
                    line.permission_requests += 1
                key = "auto-" + (r[decision_i] or "unknown") if r[mode_i] == "auto" else (r[decision_i] or "unanswered")
                line.approvals[key] = line.approvals.get(key, 0) + 1
        names = column_names("usage")
        for r in rows.tables["usage"]:
            u = dict(zip(names, r, strict=True))
            day = _day(u["ts"]) or start
            if not self.filter.day_ok(day):
                continue
            line = self._line(_group(self.by, agent, u["model"], s["cwd"], day))
            has_tokens = False
            for name in _TOKENS:
                if u[name] is not None:
                    line.tokens[name] += int(u[name])
                    has_tokens = True
            # a row without cost in a session that has one: its cost is counted in another row of the session
            line.add_cost(u["cost"], u["cost_source"], has_tokens and s["cost"] is None)

    def total(self) -> Line:
        out = Line(("all",) + (None,) * (len(key_names(self.by)) - 1))
        for line in self.lines.values():
            out.merge(line)
        return out

    def sorted_lines(self) -> list[Line]:
        return [self.lines[k] for k in sorted(self.lines, key=lambda k: tuple(v or "" for v in k))]

    def as_json(self) -> dict[str, Any]:
        names = key_names(self.by)
        return {
            "by": self.by,
            "since": self.filter.since.isoformat() if self.filter.since else None,
            "until": self.filter.until.isoformat() if self.filter.until else None,
            "project": self.filter.project,
            "groups": [line.as_json(names) for line in self.sorted_lines()],
            "total": self.total().as_json(names),
        }


def summarize(sessions: Iterable[SessionRows], *, by: str = "agent-model", filter: Filter | None = None) -> Summary:
    """Totals of ``sessions`` per group (``by``, one of :data:`BY`), keeping what ``filter`` lets through."""
    if by not in BY:
        raise ValueError(f"by must be one of {', '.join(BY)}")
    summary = Summary(by, filter or Filter())
    for rows in sessions:
        summary.add(rows)
    return summary

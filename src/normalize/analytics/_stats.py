"""``normalize stats``: totals per agent and model, from the tables' rows.

A summary is computed from each kept session's rows (sub-agents rolled into
their parent's line), so the figures are the tables' own: what
``stats`` prints is what a SQL query over the exported tables gives.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ._schema import column_names
from ._tables import SessionRows

__all__ = ["Line", "Summary", "summarize"]

_TOKENS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "total_tokens",
)


@dataclass
class Line:
    """Totals for one (agent, model)."""

    agent: str
    model: str | None
    sessions: int = 0
    subagents: int = 0
    turns: int = 0
    tool_calls: int = 0
    tool_categories: dict[str, int] = field(default_factory=dict)
    permission_requests: int = 0
    approvals: dict[str, int] = field(default_factory=dict)
    errors: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_TOKENS, 0))
    cost: float = 0.0
    sessions_without_cost: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "model": self.model,
            "sessions": self.sessions,
            "subagents": self.subagents,
            "turns": self.turns,
            "toolCalls": self.tool_calls,
            "toolCallsByCategory": dict(sorted(self.tool_categories.items())),
            "permissionRequests": self.permission_requests,
            "approvals": dict(sorted(self.approvals.items())),
            "errors": self.errors,
            "tokens": {k.removesuffix("_tokens"): v for k, v in self.tokens.items()},
            "cost": round(self.cost, 6),
            "sessionsWithoutCost": self.sessions_without_cost,
        }


@dataclass
class Summary:
    lines: dict[tuple[str, str | None], Line] = field(default_factory=dict)

    def add(self, rows: SessionRows) -> None:
        s = rows.session
        agent = str(s["agent"])
        model = s["model"]
        line = self.lines.get((agent, model))
        if line is None:
            line = self.lines[(agent, model)] = Line(agent, model)
        line.sessions += 1
        line.subagents += len(rows.tables["sessions"]) - 1
        line.turns += int(s["turns"] or 0)
        line.errors += int(s["errors"] or 0)
        for name in _TOKENS:
            line.tokens[name] += int(s[name] or 0)
        if s["cost"] is None:
            line.sessions_without_cost += 1
        else:
            line.cost += float(s["cost"])
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

    def total(self) -> Line:
        out = Line("all", None)
        for line in self.lines.values():
            out.sessions += line.sessions
            out.subagents += line.subagents
            out.turns += line.turns
            out.tool_calls += line.tool_calls
            out.permission_requests += line.permission_requests
            out.errors += line.errors
            out.cost += line.cost
            out.sessions_without_cost += line.sessions_without_cost
            for k, v in line.tool_categories.items():
                out.tool_categories[k] = out.tool_categories.get(k, 0) + v
            for k, v in line.approvals.items():
                out.approvals[k] = out.approvals.get(k, 0) + v
            for k, v in line.tokens.items():
                out.tokens[k] += v
        return out

    def sorted_lines(self) -> list[Line]:
        return [self.lines[k] for k in sorted(self.lines, key=lambda k: (k[0], k[1] or ""))]

    def as_json(self) -> dict[str, Any]:
        return {"groups": [line.as_json() for line in self.sorted_lines()], "total": self.total().as_json()}


def summarize(sessions: Iterable[SessionRows]) -> Summary:
    summary = Summary()
    for rows in sessions:
        summary.add(rows)
    return summary

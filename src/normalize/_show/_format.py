"""Values as words: times, durations, tokens, costs, tool inputs and outputs (for the page and the terminal)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from ._build import SessionView

__all__ = ["clip", "clock", "command_of", "cost_text", "json_text", "secs", "session_title", "text_of", "tokens_text"]


def json_text(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def text_of(value: Any) -> str:
    """A tool output as text: strings as they are, content blocks by their text, the rest as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(b, dict) and isinstance(b.get("text"), str) for b in value):
        return "\n".join(b["text"] for b in value)
    if isinstance(value, dict):
        for key in ("output", "stdout", "content", "text", "result"):
            inner = value.get(key)
            if isinstance(inner, str) and len(value) <= 3:
                return inner
    return json_text(value)


def clip(text: str, limit: int = 20_000) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… {len(text) - limit} more characters not shown"


def command_of(value: Any) -> str | None:
    if isinstance(value, dict):
        cmd = value.get("command") or value.get("cmd")
        if isinstance(cmd, str):
            return cmd
        if isinstance(cmd, list) and all(isinstance(c, str) for c in cmd):
            return " ".join(cmd)
    return None


def clock(ts: float | None) -> str:
    if ts is None:
        return "unknown"
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def secs(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    minutes, sec = divmod(int(seconds), 60)
    if minutes < 120:
        return f"{minutes} min {sec} s"
    return f"{minutes // 60} h {minutes % 60} min"


def tokens_text(tokens: dict[str, int]) -> str:
    if not tokens:
        return ""
    names = {"input": "in", "output": "out", "cache_read": "cache read", "cache_write": "cache write",
             "reasoning": "reasoning"}  # fmt: skip
    # input and output always (when known); the others only when not zero
    parts = [
        f"{tokens[k]:,} {label}"
        for k, label in names.items()
        if k in tokens and (tokens[k] or k in ("input", "output"))
    ]
    if not parts and "total" in tokens:
        parts = [f"{tokens['total']:,} total"]
    return " · ".join(parts)


def cost_text(amount: float | None, currency: str | None) -> str:
    if amount is None:
        return ""
    sign = "$" if (currency or "USD").upper() == "USD" else f"{currency} "
    return f"{sign}{amount:.4f}"


def session_title(session: SessionView) -> str:
    if session.title:
        return session.title
    prompt = session.prompt()
    if prompt:
        line = prompt.strip().splitlines()[0]
        return line[:80] + ("…" if len(line) > 80 else "")
    return session.session_id

"""Token counts mean the same for every agent (docs/events.md): input includes cached input."""

from __future__ import annotations

import json

import normalize
from helpers import fixed_clock

RESULT = {
    "type": "result", "subtype": "success", "is_error": False, "duration_ms": 10, "num_turns": 1,
    "result": "ok", "session_id": "s1", "total_cost_usd": 0.01, "stop_reason": "end_turn",
    "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 100,
              "cache_creation_input_tokens": 20},
}  # fmt: skip


def test_claude_input_counts_cache_reads_and_writes() -> None:
    session = normalize.Session(normalize.adapter_class("claude-stream-json")(), clock=fixed_clock)
    out = session.feed(json.dumps(RESULT).encode()) + session.close()
    usages = [
        e.event.body for e in out if isinstance(e, normalize.SessionEvent) and isinstance(e.event.body, normalize.Usage)
    ]
    turn = next(u for u in usages if u.scope == "turn")
    assert turn.tokens is not None
    assert (turn.tokens.input, turn.tokens.cache_read, turn.tokens.cache_write) == (130, 100, 20)
    assert turn.tokens.total == 135  # input + output

"""The same Claude Code run read live (stream-json) and from its stored files gives the same bodies.

For every case recorded both ways, the bodies of each thread (the main thread, and each
sub-agent) are compared in order, by kind and key fields, after leaving out what one
format really lacks (``ONLY_ONE_SIDE``, ``CASE_EXCEPTIONS``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from helpers import ADAPTERS, convert_records, records_of
from normalize import EventEnvelope, SessionEvent, SessionInput, find_inputs

STREAM = ADAPTERS / "claude-stream-json" / "captures" / "claude-code-2.1.332"
TRANSCRIPT = ADAPTERS / "claude-transcript" / "captures" / "claude-code-2.1.332"

#: body kinds only one of the two formats carries, and why
ONLY_ONE_SIDE = {
    "assistant-delta": "partial messages: only stream-json with --include-partial-messages",
    "reasoning-delta": "partial messages: only stream-json with --include-partial-messages",
    "usage": "stream-json's assistant lines carry the usage of the message start (output 1) and "
    "totals on `result`; the stored lines carry each message's final usage and `cost-state`",
    "session-info": "stream-json's system/init (per turn) vs the transcript's first cwd",
    "mode-update": "system/init's permissionMode vs the prompt line's permissionMode",
    "commands-update": "only system/init lists commands",
    "permission-request": "only the live control protocol asks",
    "request-resolved": "only the live control protocol answers",
    "task": "task lines (system/task_*) exist only in stream-json",
    "warning": "system/api_retry vs system/api_error, and the library's own warnings",
}

#: what a single case lacks on one side, and why: (case, thread or None, kind) -> reason
CASE_EXCEPTIONS: dict[tuple[str, str], str] = {
    ("12-subagent-task", "subagent-text"): "a foreground sub-agent's text is hidden on stdout without "
    "--forward-subagent-text; its file has it",
    ("24-subagent-with-tool", "subagent-text"): "as above",
    ("25-background-agent", "subagent-prompt"): "the background agent's prompt line is not printed on stdout",
    ("25-background-agent", "turn-order"): "stdout prints both `result` lines at the very end (timing), "
    "so the turn boundaries move; the transcript ends turn 1 before the task notification",
    ("20-output-format-json", "everything"): "--output-format json prints only the result line",
    ("28-resume", "first-run"): "the session file holds both runs; stdout of 28-resume only the resumed one",
}


def _key(e: EventEnvelope) -> tuple[Any, ...]:
    b = e.body
    fields = {
        "assistant-message": ("message_id", "text"),
        "reasoning": ("reasoning_id", "text"),
        "tool-call": ("call_id", "tool", "phase", "category"),
        "command-output": ("call_id", "stream", "delta"),
        "file-diff": ("call_id", "path", "diff", "change_kind"),
        "subagent": ("subagent_id", "phase"),
        "turn-complete": ("reason",),
        "error": ("message",),
        "user-message": ("message_id", "text"),
        "mcp-tool": ("call_id", "phase"),
        "web-search": ("call_id", "phase"),
        "plan": ("entries",),
        "permission-auto": ("tool_call", "option_id"),
    }.get(e.kind, ())
    return (e.kind, *(getattr(b, f) for f in fields))


#: compared in their own order, not among the other bodies: both formats say the decision on
#: the tool result line, but stream-json reports a sub-agent's end earlier, from its task line,
#: so the decision sits after `subagent completed` live and before it in the transcript
UNORDERED = {"permission-auto"}


def _compared(e: EventEnvelope) -> bool:
    if e.kind in ONLY_ONE_SIDE or e.kind in UNORDERED:
        return False
    if e.kind == "tool-call" and e.body.phase == "updated":  # type: ignore[union-attr]
        return False  # stream-json's partial tool input
    if e.kind == "user-message" and e.subagent_id is None:
        return False  # the prompt is not echoed on stdout (except --replay-user-messages)
    return not (e.kind == "subagent" and e.body.phase == "progress")  # type: ignore[union-attr]


def _threads(evs: list[EventEnvelope]) -> dict[str | None, list[tuple[Any, ...]]]:
    out: dict[str | None, list[tuple[Any, ...]]] = {}
    for e in evs:
        if _compared(e):
            out.setdefault(e.subagent_id, []).append(_key(e))
    # the unordered kinds, per thread, after the rest
    for e in evs:
        if e.kind in UNORDERED:
            out.setdefault(e.subagent_id, []).append(("unordered", *_key(e)))
    return out


def _events(paths: list[Path], protocol: str) -> list[EventEnvelope]:
    return [e.event for e in convert_records(records_of(paths), protocol) if isinstance(e, SessionEvent)]


def _cases() -> list[str]:
    if not STREAM.is_dir():
        return []
    names = sorted(p.name for p in TRANSCRIPT.iterdir())
    return [c for c in names if (STREAM / f"{c}.jsonl").exists() or (STREAM / f"{c}.tap.jsonl").exists()]


CASES = _cases()


def _pair(case: str) -> tuple[dict[str | None, list[tuple[Any, ...]]], dict[str | None, list[tuple[Any, ...]]]]:
    stream = STREAM / f"{case}.jsonl"
    if not stream.exists():
        stream = STREAM / f"{case}.tap.jsonl"
    (main,) = sorted((TRANSCRIPT / case).glob("*.jsonl"))
    (inp,) = [i for i in find_inputs([main], protocol="claude-transcript") if isinstance(i, SessionInput)]
    live = _threads(_events([stream], "claude-stream-json"))
    stored = _threads(_events(inp.paths, "claude-transcript"))
    return live, stored


def test_every_shared_scenario_is_compared() -> None:
    assert len(CASES) == 26


@pytest.mark.parametrize("case", CASES)
def test_live_and_stored_give_the_same_bodies(case: str) -> None:
    live, stored = _pair(case)
    if (case, "everything") in CASE_EXCEPTIONS:
        assert live.get(None, []) == [k for k in stored.get(None, []) if k[0] in ("turn-start", "turn-complete")]
        return
    if (case, "first-run") in CASE_EXCEPTIONS:
        first_end = stored[None].index(("turn-complete", "ok")) + 1
        stored[None] = stored[None][first_end:]
    if (case, "turn-order") in CASE_EXCEPTIONS:
        live[None] = [k for k in live[None] if k[0] not in ("turn-start", "turn-complete")]
        stored[None] = [k for k in stored[None] if k[0] not in ("turn-start", "turn-complete")]
    for thread in set(live) | set(stored):
        mine, theirs = stored.get(thread, []), live.get(thread, [])
        if thread is not None and (case, "subagent-text") in CASE_EXCEPTIONS:
            mine = [k for k in mine if k[0] != "assistant-message"]
        if thread is not None and (case, "subagent-prompt") in CASE_EXCEPTIONS:
            mine = [k for k in mine if k[0] != "user-message"]
        assert theirs == mine, f"thread {thread}"


@pytest.mark.parametrize("case", CASES)
def test_live_and_stored_give_the_same_session_id(case: str) -> None:
    stream = STREAM / f"{case}.jsonl"
    if not stream.exists():
        stream = STREAM / f"{case}.tap.jsonl"
    (main,) = sorted((TRANSCRIPT / case).glob("*.jsonl"))
    (inp,) = [i for i in find_inputs([main], protocol="claude-transcript") if isinstance(i, SessionInput)]
    live = {e.session_id for e in _events([stream], "claude-stream-json")}
    stored = {e.session_id for e in _events(inp.paths, "claude-transcript")}
    assert live & stored, (live, stored)  # the session the transcript stores is the one streamed
    assert {e.agent for e in _events([stream], "claude-stream-json")} == {"claude-code"}

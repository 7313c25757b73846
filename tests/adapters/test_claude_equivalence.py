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
from normalize import AssistantMessage, EventEnvelope, SessionEvent, SessionInput, Subagent, find_inputs

#: the Claude Code versions recorded both ways by the same runs, and how many cases each shares
VERSIONS = {
    "2.1.20": 15,
    "2.1.42": 15,
    "2.1.67": 15,
    "2.1.100": 15,
    "2.1.142": 15,
    "2.1.190": 15,
    "2.1.235": 15,
    "2.1.260": 15,
    "2.1.290": 15,
    "2.1.332": 26,
}


def _stream_dir(version: str) -> Path:
    return ADAPTERS / "claude-stream-json" / "captures" / f"claude-code-{version}"


def _transcript_dir(version: str) -> Path:
    return ADAPTERS / "claude-transcript" / "captures" / f"claude-code-{version}"


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

#: what one version's case lacks on one side, and why: (version, case, what) -> reason
VERSION_EXCEPTIONS: dict[tuple[str, str, str], str] = {
    ("2.1.20", "15-permission-stdio-deny", "refusal-as-output"): "as 2.1.142's below",
    ("2.1.20", "41-stream-cut-midway", "nothing-stored"): "2.1.20 gives up when every stream is cut "
    "(error_during_execution, read as an interrupt) and its session file holds only the queue's "
    "dequeue line: no prompt, no message, no turn to compare",
    ("2.1.42", "15-permission-stdio-deny", "refusal-as-output"): "as 2.1.142's below",
    ("2.1.67", "15-permission-stdio-deny", "refusal-as-output"): "as 2.1.142's below",
    ("2.1.100", "15-permission-stdio-deny", "refusal-as-output"): "as 2.1.142's below",
    ("2.1.142", "15-permission-stdio-deny", "refusal-as-output"): "2.1.142's session file does not say the "
    "call was refused (no toolDenialKind, no permissionDecision): the refusal is written as a failed "
    "command's output, as before 2.1; stdout has the control protocol's answer",
    ("2.1.190", "15-permission-stdio-deny", "refusal-as-output"): "as 2.1.142's above",
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


def _cases(version: str) -> list[str]:
    stream, transcript = _stream_dir(version), _transcript_dir(version)
    if not stream.is_dir():
        return []
    names = sorted(p.name for p in transcript.iterdir())
    return [c for c in names if (stream / f"{c}.jsonl").exists() or (stream / f"{c}.tap.jsonl").exists()]


CASES = [(v, c) for v in VERSIONS for c in _cases(v)]


CASE_IDS = [f"{v}/{c}" for v, c in CASES]


def _files(version: str, case: str) -> tuple[Path, SessionInput]:
    """The case's stdout capture, and its session files as one input."""
    stream = _stream_dir(version) / f"{case}.jsonl"
    if not stream.exists():
        stream = _stream_dir(version) / f"{case}.tap.jsonl"
    # the folder, as a user names it: the session's file with its sub-agents' (beside it up to
    # 2.0.x, in subagents/ since 2.1)
    folder = _transcript_dir(version) / case
    (inp,) = [i for i in find_inputs([folder], protocol="claude-transcript") if isinstance(i, SessionInput)]
    return stream, inp


def _pair(
    version: str, case: str
) -> tuple[dict[str | None, list[tuple[Any, ...]]], dict[str | None, list[tuple[Any, ...]]]]:
    stream, inp = _files(version, case)
    live = _threads(_events([stream], "claude-stream-json"))
    stored = _threads(_events(inp.paths, "claude-transcript"))
    return live, stored


def test_every_shared_scenario_is_compared() -> None:
    assert {v: len(_cases(v)) for v in VERSIONS} == VERSIONS


@pytest.mark.parametrize(("version", "case"), CASES, ids=CASE_IDS)
def test_live_and_stored_give_the_same_bodies(version: str, case: str) -> None:
    live, stored = _pair(version, case)
    if (version, case, "refusal-as-output") in VERSION_EXCEPTIONS:
        stored[None] = [k for k in stored[None] if k[0] != "command-output"]
    if (version, case, "nothing-stored") in VERSION_EXCEPTIONS:
        assert stored == {}
        assert live[None][-1] == ("turn-complete", "interrupt")
        return
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


@pytest.mark.parametrize(("version", "case"), CASES, ids=CASE_IDS)
def test_live_and_stored_give_the_same_session_id(version: str, case: str) -> None:
    stream, inp = _files(version, case)
    live = {e.session_id for e in _events([stream], "claude-stream-json")}
    stored = {e.session_id for e in _events(inp.paths, "claude-transcript")}
    if (version, case, "nothing-stored") in VERSION_EXCEPTIONS:
        assert stored == set()
        return
    assert live & stored, (live, stored)  # the session the transcript stores is the one streamed
    assert {e.agent for e in _events([stream], "claude-stream-json")} == {"claude-code"}


def _subagent_ends(events: list[EventEnvelope]) -> list[tuple[str | None, str, str | None]]:
    return [
        (e.body.subagent_id, e.body.phase, e.body.result)
        for e in events
        if isinstance(e.body, Subagent) and e.body.phase not in ("started", "progress")
    ]


#: every version whose sub-agent case was recorded both ways (before 2.1.142 only that case is compared)
SUBAGENT_VERSIONS = sorted(
    {
        p.parent.name.removeprefix("claude-code-")
        for p in ADAPTERS.glob("claude-stream-json/captures/*/12-subagent-task.*")
    }
    & {
        p.parent.name.removeprefix("claude-code-")
        for p in ADAPTERS.glob("claude-transcript/captures/*/12-subagent-task")
    }
)


def test_the_sub_agent_case_is_compared_for_every_version_recorded_both_ways() -> None:
    assert {"1.0.60", "1.0.98", "2.0.0", "2.0.30", "2.0.76", *VERSIONS} <= set(SUBAGENT_VERSIONS)


@pytest.mark.parametrize("version", SUBAGENT_VERSIONS)
def test_a_foreground_sub_agent_ends_once_with_its_answer_live_and_stored(version: str) -> None:
    """What the sub-agent answered is its result, read from stdout or from its files (2.1.142's
    task_notification summarizes the task by its description: that is not the answer; before
    2.0.76 stdout's tool result carries no ``tool_use_result``: the call's result is the answer)."""
    stream, inp = _files(version, "12-subagent-task")
    stored_events = _events(inp.paths, "claude-transcript")
    live = _subagent_ends(_events([stream], "claude-stream-json"))
    stored = _subagent_ends(stored_events)
    assert live == stored
    ((sub, phase, result),) = live
    answers = [e.body.text for e in stored_events if isinstance(e.body, AssistantMessage) and e.subagent_id == sub]
    assert (phase, result) == ("completed", answers[-1])


@pytest.mark.parametrize(("version", "case"), CASES, ids=CASE_IDS)
def test_every_sub_agent_ends_with_the_same_result_live_and_stored(version: str, case: str) -> None:
    """How each sub-agent ended and what it answered, read live or stored: the same words (2.1.332
    puts a note of the tools the sub-agent used before its report in the stored result: no answer)."""
    stream, inp = _files(version, case)
    assert _subagent_ends(_events([stream], "claude-stream-json")) == _subagent_ends(
        _events(inp.paths, "claude-transcript")
    )

"""codex-rollout: every capture meets the adapter's promises; precise mappings by hand."""

from __future__ import annotations

import json
import shlex
import shutil
from collections import Counter, defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import ADAPTERS, capture_files, convert_capture, convert_records, protocol_of, records_of, session_captures
from normalize import (
    CaptureParser,
    Message,
    Session,
    SessionCreated,
    SessionEvent,
    SessionUpdate,
    detect_protocol,
    encode,
    find_inputs,
    session_id_for,
)
from normalize._model import _Core
from normalize.adapters import _codex_items as ci
from normalize.adapters import codex_rollout
from normalize.adapters._codex_rollout_views import _typed_line_decoder
from normalize.adapters.codex_rollout import CodexRolloutAdapter

#: the versions whose facts these tests state (older shapes: their own tests below,
#: tests/test_history.py and the goldens)
VERSIONS = ("codex-0.125.0", "codex-0.131.0", "codex-0.142.2", "codex-0.155.0", "codex-0.169.0", "codex-0.171.0")
CAPTURES = [
    c
    for c in session_captures()
    if c.relative_to(ADAPTERS).parts[0] == "codex-rollout" and c.relative_to(ADAPTERS).parts[2] in VERSIONS
]
TOOL_KINDS = ("tool-call", "mcp-tool")


def _id(p: Path) -> str:
    return p.name


def native_lines(capture: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capture.read_text().splitlines() if line.strip()]


def bodies(events: list[_Core]) -> list[dict[str, Any]]:
    """Each session.event as its JSON (envelope + body), in order."""
    return [json.loads(encode(e))["event"] for e in events if isinstance(e, SessionEvent)]


def updates(events: list[_Core]) -> list[SessionUpdate]:
    return [e for e in events if isinstance(e, SessionUpdate)]


def test_there_are_captures() -> None:
    assert len(CAPTURES) >= 9


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_errors_only_where_codex_reported_one(capture: Path) -> None:
    reported = [
        line["payload"]["error"]["message"]
        for line in native_lines(capture)
        if line.get("type") == "event_msg"
        and line["payload"].get("type") == "task_complete"
        and line["payload"].get("error")
    ]
    errors = [b for b in bodies(convert_capture(capture)) if b["kind"] == "error"]
    assert [e["message"] for e in errors] == reported
    assert all(e["native"]["method"] == "event_msg:task_complete" for e in errors)


#: session.update is kept only for lines whose content is already a body, or carries none.
ALLOWED_UPDATES = {
    "session_meta",  # its facts are the session.created record and context.updated
    "world_state",  # a context snapshot Codex keeps for itself
    "token_usage_record",  # the same numbers as token_count
    "event_msg:thread_settings_applied",  # the same settings as turn_context
    "event_msg:token_count",  # rate limits only, or a repeated snapshot
    "response_item:message",  # checked below: the event_msg copy is the body
    "response_item:reasoning",  # checked below
    "response_item:function_call_output",  # the call's end came from its item
    "response_item:custom_tool_call_output",
    "response_item:web_search_call",  # the WebSearch item said it first
    "response_item:tool_search_call",  # deferred-tool lookup, shown by no Codex surface
    "response_item:tool_search_output",
    "turn_context",  # unchanged settings
    "inter_agent_communication_metadata",  # whether a message between agents starts a turn (0.171)
    "event_msg:item_completed:CollabAgentToolCall",  # a collab call (wait_agent): its function_call_output ended it
    "response_item:agent_message",  # a message between agents (a sub-agent's task, its report): see the README
    "inter_agent_communication",  # the same in 0.142
}


def _between_agents(text: str) -> bool:
    """A message between agents written as an assistant message, its text the JSON of
    ``{author, recipient, content}`` (0.131; 0.142 ``inter_agent_communication``, 0.171
    ``response_item`` ``agent_message``): see the README."""
    try:
        message = json.loads(text)
    except ValueError:
        return False
    return isinstance(message, dict) and {"author", "recipient", "content"} <= message.keys()


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_no_conversation_content_is_left_untranslated(capture: Path) -> None:
    events = convert_capture(capture)
    out = bodies(events)
    said = {b["text"] for b in out if b["kind"] in ("user-message", "assistant-message")}
    said |= {b.get("summary") for b in out if b["kind"] == "reasoning"}
    for upd in updates(events):
        method = upd.update.method
        assert method in ALLOWED_UPDATES, method
        payload = json.loads(bytes(upd.update.payload))["payload"]
        if method == "response_item:message" and payload["role"] in ("user", "assistant"):
            text = "".join(p.get("text", "") for p in payload["content"])
            assert (
                text in said or text.startswith(("<environment_context>", "<turn_aborted>")) or _between_agents(text)
            ), text[:80]
        if method == "response_item:reasoning":
            summary = "\n\n".join(p["text"] for p in payload["summary"])
            assert summary in said


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_every_call_ends_in_exactly_one_terminal_phase(capture: Path) -> None:
    phases: dict[tuple[str, str], list[str]] = defaultdict(list)
    for b in bodies(convert_capture(capture)):
        if b["kind"] in TOOL_KINDS:
            phases[(b["kind"], b["callId"])].append(b["phase"])
    for key, seen in phases.items():
        assert sum(p in ("completed", "failed") for p in seen) == 1, (key, seen)
        assert seen[-1] in ("completed", "failed"), (key, seen)
    native_calls = {
        line["payload"]["call_id"]
        for line in native_lines(capture)
        if line.get("type") == "response_item"
        and line["payload"]["type"] in ("function_call", "custom_tool_call")
        and line["payload"].get("name") != "update_plan"
    }
    assert native_calls == {cid for _, cid in phases}


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_one_turn_complete_per_native_turn_end(capture: Path) -> None:
    ends = [
        line["payload"]
        for line in native_lines(capture)
        if line.get("type") == "event_msg" and line["payload"]["type"] in ("task_complete", "turn_aborted")
    ]
    completes = [b for b in bodies(convert_capture(capture)) if b["kind"] == "turn-complete"]
    assert len(completes) == len(ends)
    for end, tc in zip(ends, completes, strict=True):
        assert tc["nativeTurnId"] == end["turn_id"]
        ok = end["type"] == "task_complete" and not end.get("error")
        assert tc["reason"] == ("ok" if ok else "interrupt")
        assert tc["native"]["protocol"] == "codex-rollout"
    starts = [b for b in bodies(convert_capture(capture)) if b["kind"] == "turn-start"]
    assert all(s["native"]["protocol"] == "codex-rollout" for s in starts)


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_turn_usage_is_the_turn_s_share_of_the_cumulative_counters(capture: Path) -> None:
    """Per turn: the turn usage equals Codex's own per-turn figure (token_usage_record, when
    the version writes it: not 0.142), and the turns add up to the last cumulative
    token_count, so nothing counts twice."""
    lines = native_lines(capture)
    per_turn_native: dict[str, int] = {}
    last_total = 0
    for line in lines:
        if line.get("type") == "token_usage_record":
            per_turn_native[line["payload"]["turn_id"]] = line["payload"]["turn_token_usage"]["total_tokens"]
        if line.get("type") == "event_msg" and line["payload"]["type"] == "token_count" and line["payload"]["info"]:
            usage = line["payload"]["info"]["total_token_usage"]
            if usage["input_tokens"] or usage["output_tokens"]:  # not a context-overflow marker
                last_total = usage["total_tokens"]
    out = bodies(convert_capture(capture))
    turn_usage: dict[str, int] = {}
    for b in out:
        if b["kind"] == "usage" and b.get("scope") == "turn":
            assert b["turnId"] not in turn_usage, "one turn usage per turn"
            turn_usage[b["turnId"]] = b["tokens"]["total"]
    native_turn_of = {b["turnId"]: b["nativeTurnId"] for b in out if b["kind"] == "turn-complete"}
    if any(line.get("type") == "token_usage_record" for line in lines):
        assert {native_turn_of[t]: v for t, v in turn_usage.items()} == per_turn_native
    assert sum(turn_usage.values()) == last_total
    calls = [b["tokens"]["total"] for b in out if b["kind"] == "usage" and b.get("scope") == "call"]
    assert sum(calls) == last_total


def test_a_context_overflow_is_context_not_usage() -> None:
    (capture,) = [c for c in CAPTURES if "context_window_exceeded" in c.name]
    out = bodies(convert_capture(capture))
    usage = [b for b in out if b["kind"] == "usage"]
    assert usage == [u for u in usage if "tokens" not in u]
    assert usage[0]["context"] == {"used": 258400, "size": 258400}
    assert len(usage) == 1, "the repeated overflow snapshots are not reported again"
    (err,) = [b for b in out if b["kind"] == "error"]
    assert err["errorType"] == "contextWindowExceeded"


def test_every_event_is_replayed_with_the_line_s_timestamp() -> None:
    for capture in CAPTURES:
        lines = native_lines(capture)
        stamps = {line["timestamp"] for line in lines}
        for b in bodies(convert_capture(capture)):
            assert b["origin"] == "replay"
            if b["native"]["protocol"] == "codex-rollout":
                assert b["ts"] in stamps


def test_the_same_content_is_never_emitted_twice() -> None:
    for capture in CAPTURES:
        out = bodies(convert_capture(capture))
        keys = Counter(
            (b["kind"], b.get("messageId") or b.get("reasoningId"))
            for b in out
            if b["kind"] in ("user-message", "assistant-message", "reasoning")
        )
        assert all(n == 1 for n in keys.values()), keys


def test_a_declined_command_fails_from_its_output() -> None:
    (capture,) = [c for c in CAPTURES if c.name == "app-server-b_command_approval.jsonl"]
    calls = [b for b in bodies(convert_capture(capture)) if b["kind"] == "tool-call" and b["callId"] == "call_b2"]
    assert [c["phase"] for c in calls] == ["started", "failed"]
    assert calls[-1]["description"] == "declined"


# ------------------------------------------------------------------ by hand


def convert_lines(*lines: dict[str, Any]) -> list[dict[str, Any]]:
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    parser = CaptureParser()
    records = [*parser.feed(data), *parser.close()]
    return bodies(convert_records(records, "codex-rollout"))


def env(t: str, kind: str, **payload: Any) -> dict[str, Any]:
    return {"timestamp": t, "type": kind, "payload": payload}


def test_an_envelope_less_file_s_environment_context_gives_the_session_its_folder() -> None:
    # 0.29 writes no cwd on its first line; its <environment_context> message names the
    # folder, against which a patch's relative paths are made absolute (as 0.40's
    # session_meta cwd and the live stream of the same run give them).
    capture = ADAPTERS / "codex-rollout/captures/codex-0.29.0/exec-apply_patch.jsonl"
    out = convert_capture(capture)
    info = [b for b in bodies(out) if b["kind"] == "session-info"]
    assert [b["cwd"] for b in info] == ["/home/user/project"]
    calls = [b for b in bodies(out) if b["kind"] == "tool-call"]
    assert [(c["phase"], c["title"], c["locations"]) for c in calls] == [
        (phase, "/home/user/project/notes.txt", [{"path": "/home/user/project/notes.txt"}])
        for phase in ("started", "completed")
    ]
    live = ADAPTERS / "codex-exec-json/captures/codex-0.29.0/apply_patch.jsonl"
    live_calls = [b for b in bodies(convert_capture(live)) if b["kind"] == "tool-call"]
    assert [c["locations"] for c in live_calls] == [c["locations"] for c in calls]


def test_an_environment_context_without_a_folder_changes_nothing() -> None:
    lines: list[dict[str, Any]] = [
        {"id": "old-1", "timestamp": "2025-05-01T10:00:00Z", "instructions": None},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>x"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
    ]
    out = convert_lines(*lines)
    assert [b["kind"] for b in out][:2] == ["turn-start", "user-message"]
    assert "session-info" not in [b["kind"] for b in out]


def test_older_files_user_and_agent_messages_come_from_event_msg() -> None:
    """0.104 shape: no item_completed; user_message / agent_message / agent_reasoning events,
    tools known only from function_call and its output, turn_context before each request."""
    t = "2026-02-23T11:40:29.279Z"
    ctx = env(
        t,
        "turn_context",
        turn_id="t1",
        cwd="/w",
        approval_policy="on-request",
        sandbox_policy={"type": "workspace-write"},
        model="gpt-5.3-codex",
        collaboration_mode={"mode": "default"},
    )
    usage = {
        "input_tokens": 100,
        "cached_input_tokens": 0,
        "output_tokens": 10,
        "reasoning_output_tokens": 0,
        "total_tokens": 110,
    }
    count = env(
        t,
        "event_msg",
        type="token_count",
        info={"total_token_usage": usage, "last_token_usage": usage, "model_context_window": 1000},
    )
    out = convert_lines(
        env(t, "session_meta", id="th1", timestamp=t, cwd="/w", cli_version="0.104.0-alpha.1", model_provider="openai"),
        env(t, "event_msg", type="task_started", turn_id="t1"),
        env(t, "response_item", type="message", role="user", content=[{"type": "input_text", "text": "hi"}]),
        env(t, "event_msg", type="user_message", message="hi", images=[]),
        ctx,
        env(t, "event_msg", type="agent_reasoning", text="**Thinking**"),
        env(t, "response_item", type="reasoning", summary=[{"type": "summary_text", "text": "**Thinking**"}]),
        env(t, "response_item", type="function_call", name="exec_command", arguments='{"cmd": "ls"}', call_id="c1"),
        count,
        env(
            t,
            "response_item",
            type="function_call_output",
            call_id="c1",
            output="Process exited with code 2\nOutput:\nnope",
        ),
        ctx,
        count,
        env(t, "event_msg", type="agent_message", message="done"),
        env(t, "response_item", type="message", role="assistant", content=[{"type": "output_text", "text": "done"}]),
        env(t, "event_msg", type="task_complete", turn_id="t1", last_agent_message="done"),
    )
    kinds = [(b["kind"], b.get("phase") or b.get("scope") or b.get("text") or b.get("summary")) for b in out]
    assert kinds == [
        ("turn-start", None),
        ("user-message", "hi"),
        ("mode-update", None),
        ("permissions-update", None),
        ("reasoning", "**Thinking**"),
        ("tool-call", "started"),
        ("usage", "call"),
        ("usage", "session"),
        ("command-output", None),
        ("tool-call", "failed"),
        ("assistant-message", "done"),
        ("usage", "turn"),
        ("turn-complete", None),
    ]
    assert out[9]["exitCode"] == 2
    assert out[-2]["tokens"]["total"] == 110


def _shell_call_ending_with(output: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """An older file's shell call whose output is ``output``: every body, and the call's end."""
    out = convert_lines(
        {"id": "old-1", "timestamp": "2025-05-01T10:00:00Z", "instructions": "Be brief.", "git": None},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        {
            "type": "local_shell_call",
            "call_id": "c9",
            "status": "completed",
            "action": {"type": "exec", "command": ["x"]},
        },
        {"type": "function_call_output", "call_id": "c9", "output": output},
    )
    [done] = [b for b in out if b["kind"] == "tool-call" and b["phase"] != "started"]
    return out, done


@pytest.mark.parametrize(
    ("output", "exit_code", "phase", "description"),
    [
        ("Exit code: 3\nWall time: 0.1 seconds\nOutput:\nboom\n", 3, "failed", None),
        ("Chunk ID: 1\nWall time: 0 seconds\nProcess exited with code 0\nOutput:\nok\n", 0, "completed", None),
        # the command's own output prints such a line: the header's code stands
        (
            "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nProcess exited with code 1\nExit code: 2\n",
            0,
            "completed",
            None,
        ),
        ("Wall time: 0.1 seconds\nOutput:\nExit code: 2\n", None, "completed", None),
        ('{"output": "Exit code: 5\\n", "metadata": {"exit_code": 4, "duration_seconds": 0.1}}', 4, "failed", None),
        ('{"output": "a\\n", "metadata": {}}', None, "completed", None),
        ("{not json\nExit code: 6\n", 6, "failed", None),
        ("Exit code: 1" + " " * 600 + "\nOutput:\n", 1, "failed", None),
        # declined: the whole output says so
        ("patch rejected by user", None, "failed", "declined"),
        ("exec command rejected by user\n", None, "failed", "declined"),
        (
            'exec_command failed: CreateProcess { message: "Rejected(\\"rejected by user\\")" }',
            None,
            "failed",
            "declined",
        ),
        # a command that ran and printed the words
        ("Exit code: 0\nWall time: 0.1 seconds\nOutput:\nsrc/a.rs: patch rejected by user\n", 0, "completed", None),
        ("found: exec command rejected by user in 3 files\n", None, "completed", None),
    ],
)
def test_a_command_output_gives_the_exit_code_its_header_states_and_a_refusal_its_words(
    output: str, exit_code: int | None, phase: str, description: str | None
) -> None:
    _, done = _shell_call_ending_with(output)
    assert (done.get("exitCode"), done["phase"], done.get("description")) == (exit_code, phase, description)


@pytest.mark.parametrize(
    ("output", "printed"),
    [
        ("Exit code: 3\nWall time: 0.1 seconds\nOutput:\nboom\n", "boom\n"),
        (
            "Chunk ID: 1\nWall time: 0 seconds\nProcess exited with code 0\nOriginal token count: 1\nOutput:\nok\n",
            "ok\n",
        ),
        ('{"output": "a\\nb\\n", "metadata": {"exit_code": 0, "duration_seconds": 0.1}}', "a\nb\n"),
        ('{"output": "", "metadata": {"exit_code": 1}}', ""),
        # no exit code in a header: not Codex's header, the text as it is
        ("Wall time: 0.1 seconds\nOutput:\nExit code: 2\n", "Wall time: 0.1 seconds\nOutput:\nExit code: 2\n"),
        ('{"result": 1}', '{"result": 1}'),
        ("hello\n", "hello\n"),
    ],
)
def test_a_command_output_is_what_the_command_printed(output: str, printed: str) -> None:
    """As Codex exec and the app-server give it (``aggregated_output``): without the header
    Codex writes for the model, nor the JSON older files wrap it in."""
    out, done = _shell_call_ending_with(output)
    assert done["output"] == printed
    deltas = [b["delta"] for b in out if b["kind"] == "command-output"]
    assert deltas == ([printed] if printed else [])


def test_envelope_less_files_take_the_response_items() -> None:
    lines: list[dict[str, Any]] = [
        {"id": "old-1", "timestamp": "2025-05-01T10:00:00Z", "instructions": "Be brief.", "git": None},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>x"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "**Look**"}]},
        {
            "type": "local_shell_call",
            "call_id": "c9",
            "status": "completed",
            "action": {"type": "exec", "command": ["ls", "-a"]},
        },
        {"type": "function_call_output", "call_id": "c9", "output": '{"output": "a\\n", "metadata": {"exit_code": 0}}'},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "fixed"}]},
    ]
    data = b"".join(json.dumps(x).encode() + b"\n" for x in lines)
    sample = [(line, "agent") for line in data.splitlines()]
    assert detect_protocol(sample) == "codex-rollout"  # type: ignore[arg-type]
    out = convert_lines(*lines)
    assert [(b["kind"], b.get("text") or b.get("phase") or b.get("summary")) for b in out] == [
        ("turn-start", None),  # no task events: the prompt starts the turn (Turn inference)
        ("user-message", "fix it"),
        ("reasoning", "**Look**"),
        ("tool-call", "started"),
        ("command-output", None),
        ("tool-call", "completed"),
        ("assistant-message", "fixed"),
        ("turn-complete", None),  # the end of the file, nothing pending
    ]
    assert out[3]["title"] == "ls -a"


# -- Turn inference: files without task events (up to 0.77) -----------------------------------


def _turns(out: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(b["kind"], b.get("reason") or b.get("text") or b.get("phase")) for b in out if b["kind"] != "usage"]


def _prompt(t: str, text: str) -> list[dict[str, Any]]:
    return [
        env(t, "response_item", type="message", role="user", content=[{"type": "input_text", "text": text}]),
        env(t, "event_msg", type="user_message", message=text),
        env(t, "turn_context", cwd="/w", approval_policy="never", sandbox_policy={"mode": "read-only"}, model="m"),
    ]


def _call(t: str, call_id: str, output: str | None) -> list[dict[str, Any]]:
    call = env(t, "response_item", type="function_call", name="shell", arguments='{"command":["ls"]}', call_id=call_id)
    if output is None:
        return [call]
    return [call, env(t, "response_item", type="function_call_output", call_id=call_id, output=output)]


META = env("2025-09-24T10:00:00Z", "session_meta", id="s1", cwd="/w", cli_version="0.40.0")


def test_each_prompt_of_a_file_without_task_events_is_a_turn_ended_ok_when_nothing_is_pending() -> None:
    t = "2025-09-24T10:00:01Z"
    out = convert_lines(
        META,
        *_prompt(t, "one"),
        *_call(t, "c1", "a\n"),
        env(t, "event_msg", type="agent_message", message="done one"),
        *_prompt("2025-09-24T10:05:00Z", "two"),
        env("2025-09-24T10:05:02Z", "event_msg", type="agent_message", message="done two"),
    )
    assert _turns(out) == [
        ("turn-start", None),
        ("user-message", "one"),
        ("mode-update", None),
        ("permissions-update", None),
        ("tool-call", "started"),
        ("command-output", None),
        ("tool-call", "completed"),
        ("assistant-message", "done one"),
        ("turn-complete", "ok"),
        ("turn-start", None),
        ("user-message", "two"),
        ("assistant-message", "done two"),
        ("turn-complete", "ok"),
    ]
    ends = [b for b in out if b["kind"] == "turn-complete"]
    assert [b["native"]["protocol"] for b in ends] == ["core", "core"]
    assert ends[-1]["ts"] == "2025-09-24T10:05:02Z"  # the nearest native time, not the clock


def test_a_turn_left_waiting_for_the_model_is_interrupted_by_the_next_prompt_and_cut_at_the_end() -> None:
    t = "2025-09-24T10:00:01Z"
    out = convert_lines(
        META,
        *_prompt(t, "one"),
        *_call(t, "c1", None),  # no output: the call never finished
        *_prompt(t, "two"),
        *_call(t, "c2", "x"),  # its output came, the model never answered it
    )
    kinds = _turns(out)
    assert kinds[kinds.index(("tool-call", "started")) + 1 : kinds.index(("user-message", "two"))] == [
        ("warning", None),  # the core's one policy for a call open at its turn's end
        ("tool-call", "failed"),
        ("turn-complete", "interrupt"),
        ("turn-start", None),
    ]
    (warning,) = [b for b in out if b["kind"] == "warning"]
    assert warning["message"] == "tool call c1 (exec_command) was still open when turn:1 ended"
    assert kinds[-2:] == [("error", None), ("turn-complete", "interrupt")]
    assert [b["errorType"] for b in out if b["kind"] == "error"] == ["cut-off"]


def test_turn_aborted_ends_the_turn_after_the_items_of_the_stopped_request() -> None:
    """0.40 writes the stopped request's call and its rejected output after ``turn_aborted``."""
    t = "2025-09-24T10:00:01Z"
    out = convert_lines(
        META,
        *_prompt(t, "one"),
        env("2025-09-24T10:00:05Z", "event_msg", type="turn_aborted", reason="interrupted"),
        *_call("2025-09-24T10:00:06Z", "c1", "patch rejected by user"),
        *_prompt("2025-09-24T10:01:00Z", "two"),
        env("2025-09-24T10:01:02Z", "event_msg", type="agent_message", message="ok"),
    )
    first = out[: next(i for i, b in enumerate(out) if b.get("text") == "two")]
    assert [(b["kind"], b.get("phase") or b.get("reason")) for b in first if b["kind"] != "usage"][-4:] == [
        ("tool-call", "started"),
        ("tool-call", "failed"),
        ("turn-complete", "interrupt"),
        ("turn-start", None),
    ]
    end = next(b for b in first if b["kind"] == "turn-complete")
    assert (end["stopReason"], end["ts"]) == ("interrupted", "2025-09-24T10:00:05Z")
    assert all(b.get("turnId") is not None for b in out if b["kind"] in ("tool-call", "user-message"))


def test_a_turn_context_with_no_turn_open_starts_the_turn_its_prompt_joins() -> None:
    t = "2025-09-24T10:00:01Z"
    ctx = env(t, "turn_context", cwd="/w", approval_policy="never", sandbox_policy={"mode": "read-only"}, model="m")
    out = convert_lines(
        META,
        ctx,
        env(t, "event_msg", type="user_message", message="hi"),
        env(t, "event_msg", type="agent_message", message="yo"),
    )
    assert [b["kind"] for b in out if b["kind"] in ("turn-start", "user-message", "turn-complete")] == [
        "turn-start",
        "user-message",
        "turn-complete",
    ]


def test_compacted_then_context_compacted_is_one_compaction() -> None:
    t = "2026-11-29T19:00:00.000Z"
    out = convert_lines(
        env(t, "compacted", message="summary of the chat", replacement_history=[]),
        env(t, "event_msg", type="context_compacted"),
    )
    assert [(b["kind"], b.get("summary")) for b in out] == [("compaction", "summary of the chat")]


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_a_call_keeps_one_title_in_every_phase(capture: Path) -> None:
    titles: dict[str, set[str | None]] = defaultdict(set)
    for b in bodies(convert_capture(capture)):
        if b["kind"] == "tool-call":
            titles[b["callId"]].add(b.get("title"))
    assert {k: v for k, v in titles.items() if len(v) != 1} == {}


def _command_item(call_id: str, argv: list[str]) -> dict[str, Any]:
    return {
        "type": "CommandExecution",
        "id": call_id,
        "command": argv,
        "cwd": "file:///w",
        "status": "completed",
        "aggregated_output": "a.py\n",
        "exit_code": 0,
    }


def test_a_command_s_title_is_the_model_s_cmd_at_start_and_end() -> None:
    t = "2026-11-29T19:00:00.000Z"
    out = convert_lines(
        META,  # the end reads the call's start from the session's table of calls: a session is announced
        env(t, "event_msg", type="task_started", turn_id="t1"),
        env(t, "response_item", type="function_call", name="exec_command", arguments='{"cmd": "ls"}', call_id="c1"),
        env(t, "event_msg", type="item_completed", turn_id="t1", item=_command_item("c1", ["/bin/bash", "-lc", "ls"])),
    )
    calls = [(b["phase"], b["title"], b["input"]["command"]) for b in out if b["kind"] == "tool-call"]
    assert calls == [("started", "ls", "ls"), ("completed", "ls", ["/bin/bash", "-lc", "ls"])]


def test_a_command_seen_only_at_its_end_is_titled_like_the_app_server_s() -> None:
    t = "2026-11-29T19:00:00.000Z"
    out = convert_lines(
        env(t, "event_msg", type="task_started", turn_id="t1"),
        env(
            t,
            "event_msg",
            type="item_completed",
            turn_id="t1",
            item=_command_item("c2", ["/bin/bash", "-lc", "cat a.py"]),
        ),
    )
    (call,) = [b for b in out if b["kind"] == "tool-call"]
    assert call["title"] == "/bin/bash -lc 'cat a.py'"  # the app-server's `command` string for this argv


def test_an_aborted_turn_closes_its_open_calls_as_failed() -> None:
    t = "2026-11-29T19:00:00.000Z"
    out = convert_lines(
        META,
        env(t, "event_msg", type="task_started", turn_id="t1"),
        env(
            t,
            "response_item",
            type="function_call",
            name="search_docs",
            namespace="mcp__docs",
            arguments='{"query": "x"}',
            call_id="m1",
        ),
        env(t, "event_msg", type="turn_aborted", turn_id="t1", reason="interrupted"),
    )
    assert [(b["kind"], b.get("phase") or b.get("reason")) for b in out] == [
        ("turn-start", None),
        ("tool-call", "started"),
        ("mcp-tool", "started"),
        ("warning", None),  # the core fails the call itself, saying why
        ("tool-call", "failed"),
        ("mcp-tool", "failed"),  # and its MCP view with it
        ("turn-complete", "interrupt"),
    ]
    assert (out[2]["server"], out[2]["arguments"]) == ("docs", {"query": "x"})
    assert out[3]["message"] == "tool call m1 (search_docs) was still open when turn:1 ended"
    assert (out[4]["tool"], out[4]["category"]) == ("search_docs", "mcp")
    assert (out[5]["server"], out[5]["tool"]) == ("docs", "search_docs")


META_142 = env("2026-12-04T19:00:00.000Z", "session_meta", id="s1", cwd="/w", cli_version="0.142.2")


def test_a_patch_whose_end_alone_carries_its_changes_gives_their_diffs() -> None:
    """0.142 writes no patch_apply_begin: patch_apply_end's changes are the diffs, in the
    order of the patch (an update's unified diff, an added file's content as a hunk)."""
    t = "2026-12-04T19:00:00.000Z"
    patch = "*** Begin Patch\n*** Update File: a.txt\n-a\n+b\n*** Add File: notes.txt\n+some notes\n*** End Patch\n"
    changes = {
        "/w/notes.txt": {"type": "add", "content": "some notes\n"},
        "/w/a.txt": {"type": "update", "unified_diff": "@@ -1 +1 @@\n-a\n+b\n", "move_path": None},
    }
    out = convert_lines(
        META_142,
        env(t, "event_msg", type="task_started", turn_id="t1"),
        env(t, "response_item", type="custom_tool_call", name="apply_patch", input=patch, call_id="p1"),
        env(t, "event_msg", type="patch_apply_end", call_id="p1", turn_id="t1", success=True, changes=changes),
        env(t, "event_msg", type="task_complete", turn_id="t1"),
    )
    diffs = [(b["path"], b["changeKind"], b["diff"]) for b in out if b["kind"] == "file-diff"]
    assert diffs == [
        ("/w/a.txt", "update", "@@ -1 +1 @@\n-a\n+b\n"),
        ("/w/notes.txt", "add", "@@ -0,0 +1,1 @@\n+some notes\n"),
    ]
    assert [(b["phase"], b["callId"]) for b in out if b["kind"] == "tool-call"] == [
        ("started", "p1"),
        ("completed", "p1"),
    ]


META_096 = env("2026-12-04T22:00:00.000Z", "session_meta", id="s1", cwd="/w", cli_version="0.96.0")
_ADD = "*** Begin Patch\n*** Add File: notes.txt\n+some notes\n*** End Patch"


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        # 0.96 offers exec_command only: the model writes the patch as a heredoc
        ("exec_command", {"cmd": f"apply_patch <<'PATCH'\n{_ADD}\nPATCH"}),
        # older Codex: shell with apply_patch and the patch as its argument
        ("shell", {"command": ["apply_patch", _ADD]}),
        # or the heredoc as bash's script, in a folder named by cd
        ("shell", {"command": ["bash", "-lc", f"cd sub && apply_patch <<'EOF'\n{_ADD}\nEOF\n"], "workdir": "/w"}),
    ],
    ids=["exec_command heredoc", "shell argv", "bash -lc cd heredoc"],
)
def test_an_apply_patch_command_is_a_patch(tool: str, arguments: dict[str, Any]) -> None:
    """Codex runs an apply_patch command itself, as a patch (live: a file change); the file
    keeps only the command the model wrote.  Read as the patch it was, not a shell command."""
    t = "2026-12-04T22:00:00.000Z"
    output = '{"output":"Success. Updated the following files:\\nA notes.txt\\n","metadata":{"exit_code":0}}'
    out = convert_lines(
        META_096,
        env(t, "event_msg", type="user_message", message="add notes"),
        env(t, "response_item", type="function_call", name=tool, arguments=json.dumps(arguments), call_id="p1"),
        env(t, "response_item", type="function_call_output", call_id="p1", output=output),
    )
    calls = [b for b in out if b["kind"] == "tool-call"]
    path = "/w/sub/notes.txt" if "cd sub" in json.dumps(arguments) else "/w/notes.txt"
    assert [(b["tool"], b["category"], b["phase"]) for b in calls] == [
        ("apply_patch", "edit", "started"),
        ("apply_patch", "edit", "completed"),
    ]
    assert calls[-1]["input"] == {"changes": [{"path": path, "kind": "add"}]}
    assert not [b for b in out if b["kind"] == "command-output"]


def test_a_command_that_only_names_apply_patch_stays_a_command() -> None:
    t = "2026-12-04T22:00:00.000Z"
    out = convert_lines(
        META_096,
        env(t, "event_msg", type="user_message", message="look"),
        env(
            t,
            "response_item",
            type="function_call",
            name="exec_command",
            arguments='{"cmd": "which apply_patch"}',
            call_id="c1",
        ),
        env(
            t,
            "response_item",
            type="function_call",
            name="shell",
            arguments='{"command": ["apply_patch"]}',
            call_id="c2",
        ),
    )
    started = [b for b in out if b["kind"] == "tool-call" and b["phase"] == "started"]
    assert [(b["tool"], b["category"]) for b in started] == [("exec_command", "execute")] * 2


def test_a_sub_agent_thread_named_by_its_source_only_is_linked_to_its_parent() -> None:
    """0.96 names a sub-agent thread's parent only in ``source.subagent.thread_spawn``
    (0.171 also in ``parent_thread_id``); a plain ``source`` names none."""
    t = "2026-12-04T22:00:00.000Z"
    spawn = {"subagent": {"thread_spawn": {"parent_thread_id": "p1", "depth": 1}}}
    for source, parent in ((spawn, "p1"), ("vscode", None), ({"subagent": "review"}, None)):
        line = json.dumps(env(t, "session_meta", id="s2", cwd="/w", cli_version="0.96.0", source=source))
        parser = CaptureParser()
        out = convert_records([*parser.feed(line.encode() + b"\n"), *parser.close()], "codex-rollout")
        (created,) = [e for e in out if isinstance(e, SessionCreated)]
        expected = session_id_for("codex", parent) if parent else None
        assert created.record.parent_id == expected, source


def test_the_older_collab_outputs_start_and_end_the_sub_agent() -> None:
    """0.96 (the collab tools) stores a spawn and a sub-agent's end only in the outputs the
    model saw: spawn_agent's ``{"agent_id"}``, wait's ``{"status": {id: {state: ...}}}``."""
    t = "2026-12-04T22:00:00.000Z"

    def call(name: str, args: dict[str, Any], cid: str, output: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            env(t, "response_item", type="function_call", name=name, arguments=json.dumps(args), call_id=cid),
            env(t, "response_item", type="function_call_output", call_id=cid, output=json.dumps(output)),
        ]

    out = convert_lines(
        META_096,
        env(t, "event_msg", type="user_message", message="delegate"),
        *call("spawn_agent", {"message": "SUBTASK"}, "c1", {"agent_id": "th2"}),
        *call("wait", {"ids": ["th2"]}, "c2", {"status": {"th2": {"completed": "done"}}, "timed_out": False}),
        *call("other_tool", {}, "c3", {"agent_id": "th3"}),
    )
    subs = [b for b in out if b["kind"] in ("subagent", "task")]
    assert [(b["kind"], b["phase"]) for b in subs] == [
        ("subagent", "started"),
        ("task", "started"),
        ("subagent", "completed"),
        ("task", "completed"),
    ]
    assert (subs[0]["subagentId"], subs[0]["callId"], subs[0]["prompt"]) == ("th2", "c1", "SUBTASK")
    assert (subs[2]["subagentId"], subs[2]["callId"]) == ("th2", "c1")
    assert all(b["turnId"] == "turn:1" for b in subs)


def test_a_sub_agent_activity_event_starts_the_sub_agent_the_call_spawned() -> None:
    """0.142 stores a spawn as an event_msg ``sub_agent_activity`` (0.171: an item_completed
    SubAgentActivity item), whose ``event_id`` is the spawning call's id."""
    t = "2026-12-04T19:00:00.000Z"
    args = '{"task_name": "lister", "message": "SUBTASK", "fork_turns": "none"}'
    activity = {
        "type": "sub_agent_activity",
        "event_id": "c1",
        "occurred_at_ms": 1,
        "agent_thread_id": "th2",
        "agent_path": "/root/lister",
        "kind": "started",
    }
    out = convert_lines(
        META_142,
        env(t, "event_msg", type="task_started", turn_id="t1"),
        env(t, "response_item", type="function_call", name="spawn_agent", arguments=args, call_id="c1"),
        {"timestamp": t, "type": "event_msg", "payload": activity},
    )
    subs = [b for b in out if b["kind"] in ("subagent", "task")]
    # the file ends with the spawning call open: the core fails it, and the sub-agent with it
    assert [(b["kind"], b["phase"]) for b in subs] == [
        ("subagent", "started"),
        ("task", "started"),
        ("subagent", "failed"),
        ("task", "failed"),
    ]
    assert (subs[0]["subagentId"], subs[0]["callId"], subs[0]["name"]) == ("th2", "c1", "/root/lister")
    assert (subs[1]["taskId"], subs[1]["parentCallId"], subs[1]["taskKind"]) == ("th2", "c1", "collab")


def test_a_later_run_a_parent_rollout_says_ended_resumed_the_sub_agent() -> None:
    """0.150's parent rollout stores each run's completion of a sub-agent a follow-up ran
    again (the real ``i_collab_followup``): the second says it ran again, then ended; the
    spawn's task ended once."""
    capture = ADAPTERS / "codex-rollout/captures/codex-0.150.0/app-server-i_collab_followup.jsonl"
    events = bodies(convert_records(records_of([capture]), "codex-rollout"))
    said = [(b["kind"], b["phase"]) for b in events if b["kind"] in ("subagent", "task")]
    assert said == [
        ("subagent", "started"),
        ("task", "started"),
        ("subagent", "completed"),
        ("task", "completed"),
        ("subagent", "progress"),
        ("subagent", "resumed"),
        ("subagent", "completed"),
    ]


def test_detection_tells_rollouts_from_other_codex_streams() -> None:
    rollout = ADAPTERS / "codex-rollout/captures/codex-0.169.0/exec-mixed_items.jsonl"
    sample = [(line, "agent") for line in rollout.read_bytes().splitlines()[:20]]
    assert CodexRolloutAdapter.detect(sample) > 0.9  # type: ignore[arg-type]
    assert detect_protocol(sample) == "codex-rollout"  # type: ignore[arg-type]
    exec_json = ADAPTERS / "codex-exec-json/captures/codex-0.169.0/mixed_items.jsonl"
    assert CodexRolloutAdapter.detect([(exec_json.read_bytes().splitlines()[0], "agent")]) == 0.0
    rpc = b'{"method":"thread/started","params":{"thread":{"id":"x"}},"emittedAtMs":1}'
    assert CodexRolloutAdapter.detect([(rpc, "agent")]) == 0.0


def test_a_sessions_folder_yields_every_session(tmp_path: Path) -> None:
    """~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl: every file is one session."""
    for i, capture in enumerate(CAPTURES):
        day = tmp_path / "sessions" / "2026" / "11" / f"{28 + i % 2:02d}"
        day.mkdir(parents=True, exist_ok=True)
        shutil.copy(capture, day / f"rollout-2026-11-29T19-0{i}-00-{capture.stem}.jsonl")
    found = list(find_inputs([tmp_path / "sessions"]))
    assert all(not isinstance(f, Exception) for f in found)
    assert sorted(f.main.name for f in found) == sorted(p.name for p in (tmp_path / "sessions").rglob("*.jsonl"))  # type: ignore[union-attr]
    assert {f.protocol for f in found} == {"codex-rollout"}  # type: ignore[union-attr]
    assert len(found) == len(CAPTURES)


# --------------------------------------------------------------------------- one decode per line
#
# A line of the types the adapter translates is decoded once (a tagged union of line views,
# payload included); any other line is read envelope first, its payload kept raw, then
# decoded by its type.  The two readings must agree: the same items, the same errors.


class _NoUnion:
    """In place of the union's decoder: reads no line, so that every line is read envelope first."""

    def decode(self, data: bytes) -> Any:
        raise msgspec.ValidationError("read envelope first")


@cache
def _rollout_lines() -> list[bytes]:
    return [
        r.data
        for c in capture_files()
        if protocol_of(c) == "codex-rollout"
        for r in records_of([c])
        if isinstance(r, Message)
    ]


def _feed_all(lines: list[bytes]) -> list[bytes]:
    """The events one session gives for these lines, as a user reads them (encoded)."""
    session = Session(CodexRolloutAdapter(), clock=lambda: 0.0)
    out: list[_Core] = []
    for line in lines:
        out += session.feed(line)
    out += session.close()
    return [encode(e) for e in out]


def _both_readings(lines: list[bytes], monkeypatch: pytest.MonkeyPatch) -> tuple[list[bytes], list[bytes]]:
    once = _feed_all(lines)
    with monkeypatch.context() as m:
        m.setattr(codex_rollout, "_typed_line_decoder", _NoUnion())
        envelope_first = _feed_all(lines)
    return once, envelope_first


def test_the_union_reads_most_lines_and_gives_what_the_envelope_first_reading_gives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lines = _rollout_lines()
    read = 0
    for line in lines:
        try:
            _typed_line_decoder.decode(line)
            read += 1
        except (msgspec.DecodeError, RecursionError):
            pass
    assert read >= 0.9 * len(lines)  # the union is the common path, not the fallback
    once, envelope_first = _both_readings(lines, monkeypatch)
    assert once == envelope_first


_MUTATIONS = (
    (b'"payload":{', b'"payload":null,"x":{'),  # a null payload
    (b'"payload":{', b'"payload":[1],"x":{'),  # a payload of the wrong kind
    (b'"timestamp":"', b'"timestamp":1,"y":"'),  # an envelope field of the wrong type
    (b'"type":"', b'"type":"zz_'),  # an unknown line type
    (b'"id":"', b'"id":7,"z":"'),  # a payload field of the wrong type
    (b'"type":"', b'"record_type":5,"type":"'),  # an envelope field the older files have
)


@given(data=st.data())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_changed_line_gives_the_same_items_or_error_either_way(
    data: st.DataObject, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = _rollout_lines()
    start = data.draw(st.integers(0, len(pool) - 1))
    lines = pool[start : start + data.draw(st.integers(1, 30))]
    changed = []
    for line in lines:
        old, new = data.draw(st.sampled_from(_MUTATIONS))
        if data.draw(st.booleans()):
            line = line.replace(old, new, 1)
        elif data.draw(st.integers(0, 9)) == 0:
            line = line[: data.draw(st.integers(0, len(line)))]  # cut short
        changed.append(line)
    once, envelope_first = _both_readings(changed, monkeypatch)
    assert once == envelope_first


def test_a_command_whose_arguments_are_not_all_strings_is_a_call_titled_with_their_json() -> None:
    # a model's arguments are not checked by Codex: an argv may hold a number or a null
    args = json.dumps({"command": ["ls", 1, 0, None, "a b"]})
    out = convert_lines(
        env("2026-01-01T00:00:00Z", "session_meta", id="x1", cwd="/w"),
        env("2026-01-01T00:00:01Z", "event_msg", type="task_started", turn_id="t"),
        env("2026-01-01T00:00:02Z", "response_item", type="function_call", name="shell", call_id="c1", arguments=args),
        env("2026-01-01T00:00:03Z", "response_item", type="function_call_output", call_id="c1", output="Exit code: 0"),
        env("2026-01-01T00:00:04Z", "event_msg", type="task_complete", turn_id="t"),
    )
    calls = [b for b in out if b["kind"] == "tool-call"]
    assert [(b["phase"], b["title"]) for b in calls] == [
        ("started", "ls 1 0 null 'a b'"),
        ("completed", "ls 1 0 null 'a b'"),
    ]
    assert calls[0]["input"]["command"] == ["ls", 1, 0, None, "a b"]
    assert not [b for b in out if b["kind"] == "error"]


@given(st.lists(st.text(), max_size=6))
def test_an_argv_is_titled_as_shlex_joins_it(argv: list[str]) -> None:
    assert ci._command_title(argv) == shlex.join(argv)

"""The claude-transcript adapter: Claude Code's stored session files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helpers import ADAPTERS, convert_capture, fixed_clock
from normalize import (
    AssistantMessage,
    Body,
    CommandOutput,
    ContextUpdated,
    Emit,
    Error,
    EventEnvelope,
    Passthrough,
    PermissionAuto,
    Reasoning,
    Session,
    SessionCreated,
    SessionEvent,
    SessionInfo,
    SessionInput,
    SessionUpdate,
    Source,
    Subagent,
    ToolCall,
    ToolCallRef,
    ToolChangeApplied,
    TurnComplete,
    TurnStart,
    Usage,
    UserMessage,
    WebSearch,
    events,
    find_inputs,
    read_records,
)
from normalize import Warning as WarningBody
from normalize.adapters import claude_transcript
from normalize.adapters.claude_transcript import ClaudeTranscriptAdapter

KIT = ADAPTERS / "claude-transcript" / "captures"
#: the 2.1.332 runs, whose facts these tests state (older versions: tests/test_history.py,
#: the goldens, and the tests of the turn inference below)
VERSION_DIRS = [KIT / "claude-code-2.1.332", KIT / "claude-code-2.1.332-extra"]
CAPTURES = sorted(
    i.main for i in find_inputs(VERSION_DIRS, protocol="claude-transcript") if isinstance(i, SessionInput)
)
#: line types that carry conversation content: never left as session.update
CONTENT_TYPES = {"user", "assistant"}


def _events(capture: Path) -> list[EventEnvelope]:
    return [e.event for e in convert_capture(capture) if isinstance(e, SessionEvent)]


def _updates(capture: Path) -> list[SessionUpdate]:
    return [e for e in convert_capture(capture) if isinstance(e, SessionUpdate)]


def _case(capture: Path) -> str:
    return capture.parent.name


def test_kit_has_every_case() -> None:
    assert len(CAPTURES) == 27  # 26 shared runs with claude-stream-json, one extra


@pytest.mark.parametrize("capture", CAPTURES, ids=_case)
def test_no_error_unless_the_cli_reported_one(capture: Path) -> None:
    errors = [e.body for e in _events(capture) if isinstance(e.body, Error)]
    if _case(capture).startswith(("17-api-error", "18-api-error")):
        assert len(errors) == 1 and errors[0].recoverable is False
        assert errors[0].message.startswith("API Error:")
    else:
        assert errors == []


@pytest.mark.parametrize("capture", CAPTURES, ids=_case)
def test_the_session_record_has_the_version_and_cwd_of_the_file(capture: Path) -> None:
    lines = [json.loads(x) for x in capture.read_bytes().splitlines() if x.strip()]
    (created,) = [e for e in convert_capture(capture) if isinstance(e, SessionCreated)]
    rec = created.record
    assert rec.agent_version == next(x["version"] for x in lines if "version" in x)
    assert rec.cwd == next(x["cwd"] for x in lines if "cwd" in x)
    assert rec.native_session_id == lines[0]["sessionId"]
    assert rec.created_at == lines[0]["timestamp"]
    # the cwd is in the record: no session-info repeats it
    assert not any(isinstance(e.body, SessionInfo) and e.body.cwd is not None for e in _events(capture))


@pytest.mark.parametrize("capture", CAPTURES, ids=_case)
def test_conversation_lines_are_translated(capture: Path) -> None:
    for upd in _updates(capture):
        payload = json.loads(bytes(upd.update.payload))
        if payload["type"] in CONTENT_TYPES:
            # only the CLI's own slash-command bookkeeping may stay untranslated
            assert upd.update.method == "user/meta", payload


@pytest.mark.parametrize(
    "version",
    [
        *("1.0.60", "1.0.98", "2.0.0", "2.0.30", "2.0.76"),
        *("2.1.20", "2.1.42", "2.1.67", "2.1.100", "2.1.142", "2.1.190", "2.1.235", "2.1.260", "2.1.290", "2.1.332"),
    ],
)
def test_a_failed_command_reads_as_the_stream_json_of_its_run_says_it(version: str) -> None:
    """The session file and the stdout of one run: the same output, exit code and phase."""
    (main,) = [p for p in (KIT / f"claude-code-{version}" / "29-bash-error").glob("*.jsonl") if p.name[:6] != "agent-"]
    stdout = ADAPTERS / "claude-stream-json" / "captures" / f"claude-code-{version}" / "29-bash-error.jsonl"

    def facts(capture: Path) -> list[tuple[str, object, object]]:
        out: list[tuple[str, object, object]] = []
        for e in convert_capture(capture):
            if isinstance(e, SessionEvent) and e.event.subagent_id is None:
                b = e.event.body
                if isinstance(b, CommandOutput):
                    out.append(("output", b.stream, b.delta))
                elif isinstance(b, ToolCall) and b.phase != "started":
                    out.append(("end", b.phase, b.exit_code))
        return out

    assert facts(main) == facts(stdout)
    assert [f[0] for f in facts(main)] == ["output", "end"]


@pytest.mark.parametrize(
    ("version", "case"),
    [
        ("2.0.76", "18-api-error-529-retries"),
        *(
            (v, c)
            for v in ("2.1.20", "2.1.42", "2.1.100", "2.1.142", "2.1.190", "2.1.235", "2.1.260", "2.1.290")
            for c in ("17-api-error-400", "18-api-error-529-retries")
        ),
    ],
)
def test_an_api_error_without_api_error_type_has_the_type_the_stream_json_of_its_run_says(
    version: str, case: str
) -> None:
    """Without ``apiErrorType`` (up to 2.1.290; 2.1.332 writes it) the error line's ``error`` is
    the CLI's category of the failure (``server_error`` for a 529, ``unknown`` for a 400), the
    same on stdout."""
    (main,) = [p for p in (KIT / f"claude-code-{version}" / case).glob("*.jsonl") if p.name[:6] != "agent-"]
    stdout = ADAPTERS / "claude-stream-json" / "captures" / f"claude-code-{version}" / f"{case}.jsonl"

    def types(capture: Path) -> list[str | None]:
        return [
            b.error_type
            for b in (e.event.body for e in convert_capture(capture) if isinstance(e, SessionEvent))
            if isinstance(b, Error)
        ]

    assert types(main) == types(stdout)
    assert types(main) in (["server_error"], ["unknown"])


@pytest.mark.parametrize("capture", CAPTURES, ids=_case)
def test_every_tool_call_ends_once(capture: Path) -> None:
    phases: dict[str, list[str]] = {}
    for e in _events(capture):
        if isinstance(e.body, ToolCall):
            phases.setdefault(e.body.call_id, []).append(e.body.phase)
    for call_id, seen in phases.items():
        assert seen[0] == "started", call_id
        assert sum(p in ("completed", "failed") for p in seen) == 1, (call_id, seen)


@pytest.mark.parametrize("capture", CAPTURES, ids=_case)
def test_turns_are_closed_without_cut_off(capture: Path) -> None:
    evs = _events(capture)
    starts = [e for e in evs if isinstance(e.body, TurnStart)]
    ends = [e for e in evs if isinstance(e.body, TurnComplete)]
    assert len(starts) == len(ends) >= 1
    assert not any(isinstance(e.body, Error) and e.body.error_type == "cut-off" for e in evs)


@pytest.mark.parametrize("capture", CAPTURES, ids=_case)
def test_events_are_replay_with_native_timestamps(capture: Path) -> None:
    for e in _events(capture):
        assert e.origin == "replay"
        if e.native.protocol == "claude-transcript":
            payload = json.loads(bytes(e.native.payload))
            if "timestamp" in payload:
                assert e.ts == payload["timestamp"]


@pytest.mark.parametrize("capture", CAPTURES, ids=_case)
def test_usage_once_per_api_message(capture: Path) -> None:
    seen: list[tuple[str | None, str]] = []
    for e in _events(capture):
        if isinstance(e.body, Usage) and e.body.scope == "call":
            payload = json.loads(bytes(e.native.payload))
            seen.append((e.subagent_id, payload["message"]["id"]))
    assert len(seen) == len(set(seen))


SUBAGENT_CASES = [c for c in CAPTURES if "subagent" in _case(c) or "background-agent" in _case(c)]


@pytest.mark.parametrize("capture", SUBAGENT_CASES, ids=_case)
def test_subagent_events_carry_the_spawning_call(capture: Path) -> None:
    evs = _events(capture)
    spawned = {e.body.call_id for e in evs if isinstance(e.body, ToolCall) and e.body.tool == "Agent"}
    (call_id,) = spawned
    from_sidechain = [e for e in evs if json.loads(bytes(e.native.payload or b"{}")).get("isSidechain")]
    assert from_sidechain, "the sub-agent file was read"
    assert all(e.subagent_id == call_id for e in from_sidechain)
    phases = [e.body.phase for e in evs if isinstance(e.body, Subagent)]
    assert phases == ["started", "completed"]


def test_interrupt_ends_the_turn() -> None:
    (capture,) = [c for c in CAPTURES if _case(c) == "27-interrupt"]
    reasons = [e.body.reason for e in _events(capture) if isinstance(e.body, TurnComplete)]
    assert reasons == ["interrupt", "ok"]


def test_find_inputs_gives_one_session_per_file_with_subagent_companions() -> None:
    folders = VERSION_DIRS
    inputs = [i for i in find_inputs(folders) if isinstance(i, SessionInput)]
    assert len(inputs) == 27
    assert {i.protocol for i in inputs} == {"claude-transcript"}
    with_agents = {i.main.parent.name: [p.name for p in i.companions] for i in inputs if i.companions}
    assert sorted(with_agents) == [
        "12-subagent-task",
        "22-subagent-forward-text",
        "24-subagent-with-tool",
        "25-background-agent",
    ]
    assert all(len(c) == 1 and c[0].startswith("agent-") for c in with_agents.values())


def test_convert_folder_writes_one_file_per_session(tmp_path: Path) -> None:
    from normalize._cli import main

    out = tmp_path / "out"
    out.mkdir()  # an existing folder: "-o out/" is taken as a file name when the folder is missing
    folders = [str(d) for d in VERSION_DIRS]
    assert main(["convert", *folders, "-o", str(out)]) == 0
    assert len(list(out.rglob("*.jsonl"))) == len(CAPTURES) == 27


# ----------------------------------------------------------------- by hand


def _line(**kw: Any) -> bytes:
    base = {"sessionId": "s1", "timestamp": "2026-01-01T00:00:00.000Z"}
    return json.dumps(base | kw).encode()


def _bodies(items: list[Any]) -> list[Any]:
    out = []
    for it in items:
        if isinstance(it, Emit):
            out.append(it.body)
        elif isinstance(it, Body):
            out.append(it)
    return out


def _fed(session: Session, line: bytes) -> list[Body]:
    """What one line gives through a Session (the adapter reads the Session's table of calls)."""
    return [e.event.body for e in session.feed(line) if isinstance(e, SessionEvent)]


def _assistant(uuid: str, parent: str, block: dict[str, Any], stop: str | None, idx: int = 0) -> bytes:
    msg: dict[str, Any] = {"id": "msg_1", "model": "m", "role": "assistant", "content": [block], "stop_reason": stop}
    msg["usage"] = {"input_tokens": 10, "output_tokens": 5}
    return _line(type="assistant", uuid=uuid, parentUuid=parent, message=msg, apiBlockIndex=idx)


def test_prompt_thinking_text_and_turn_end_by_hand() -> None:
    a = ClaudeTranscriptAdapter()
    prompt = _line(type="user", uuid="u1", parentUuid=None, message={"role": "user", "content": "hi"})
    assert _bodies(a.feed(prompt)) == [TurnStart(), UserMessage(message_id="u1", text="hi")]
    think = _assistant("a1", "u1", {"type": "thinking", "thinking": "hmm", "signature": "x"}, "end_turn")
    body = _bodies(a.feed(think))
    assert body[0].scope == "call" and body[0].tokens.total == 15
    assert body[1:] == [Reasoning(reasoning_id="msg_1:0", text="hmm", redacted=False)]
    # the second block of the same message: no usage again, the turn not over yet
    text = _assistant("a2", "a1", {"type": "text", "text": "hello"}, "end_turn", idx=1)
    assert _bodies(a.feed(text)) == [AssistantMessage(message_id="msg_1", text="hello")]
    # the next line (bookkeeping) settles the turn, with the message's stop reason
    assert _bodies(a.feed(_line(type="last-prompt", lastPrompt="hi"))) == [
        TurnComplete(reason="ok", stop_reason="end_turn")
    ]
    assert a.close() == []


def _attachment(attachment: bytes) -> bytes:
    return b'{"type":"attachment","sessionId":"s1","attachment":' + attachment + b"}"


@pytest.mark.parametrize(
    "attachment",
    [
        b'{"type":"deferred_tools_delta","addedNames":["a",1]}',  # a name that is no string
        b'{"type":"deferred_tools_delta","removedNames":{}}',
        b'{"type":null}',
        b'"text"',
        b"[1]",
        b"null",
        b"1e400",  # a number no float holds: JSON all the same
        b'{"type":"deferred_tools_delta","addedNames":[1e400]}',
    ],
)
def test_an_attachment_of_another_shape_is_kept_as_an_attachment(attachment: bytes) -> None:
    items = ClaudeTranscriptAdapter().feed(_attachment(attachment))
    assert [i for i in items if isinstance(i, (Source, Passthrough))] == [
        Source(method="attachment/"),
        Passthrough(method="attachment"),
    ]
    assert not any(isinstance(i, ContextUpdated) for i in items)


def test_deferred_tools_delta_changes_the_tools() -> None:
    a = ClaudeTranscriptAdapter()
    line = _attachment(b'{"type":"deferred_tools_delta","addedNames":["a"],"removedNames":null,"big":1e400}')
    updates = [i for i in a.feed(line) if isinstance(i, ContextUpdated)]
    assert updates == [ContextUpdated(session_id="", applied=[ToolChangeApplied(added=["a"])])]


def test_tool_round_trip_by_hand() -> None:
    a = Session(ClaudeTranscriptAdapter(), clock=fixed_clock)
    a.feed(_line(type="user", uuid="u1", parentUuid=None, message={"role": "user", "content": "ls"}))
    use = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
    started = _fed(a, _assistant("a1", "u1", use, "tool_use"))[1]
    assert isinstance(started, ToolCall)
    assert (started.call_id, started.phase, started.category) == ("toolu_1", "started", "execute")
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x", "is_error": False}
    line = _line(
        type="user",
        uuid="u2",
        parentUuid="a1",
        message={"role": "user", "content": [result]},
        toolUseResult={"stdout": "x", "stderr": "", "interrupted": False},
    )
    bodies = _fed(a, line)
    assert [type(b).__name__ for b in bodies] == ["CommandOutput", "ToolCall"]
    ended = bodies[1]
    assert isinstance(ended, ToolCall) and ended.phase == "completed" and ended.exit_code == 0


def test_a_server_tool_and_its_result_in_one_line() -> None:
    # both blocks in one assistant line: the result's call is not yet in the core's table
    a = Session(ClaudeTranscriptAdapter(), clock=fixed_clock)
    a.feed(_line(type="user", uuid="u1", parentUuid=None, message={"role": "user", "content": "search"}))
    blocks = [
        {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "q"}},
        {"type": "web_search_tool_result", "tool_use_id": "srv_1", "content": [{"title": "hit"}]},
    ]
    msg = {"id": "msg_1", "model": "m", "role": "assistant", "content": blocks, "stop_reason": "end_turn"}
    bodies = _fed(a, _line(type="assistant", uuid="a1", parentUuid="u1", message=msg))
    assert [(b.phase, b.query) for b in bodies if isinstance(b, WebSearch)] == [("started", "q"), ("completed", None)]
    ended = [(b.tool, b.category) for b in bodies if isinstance(b, ToolCall) and b.phase == "completed"]
    assert ended == [("web_search", "web-search")]


def test_open_call_is_reported_and_failed_at_close() -> None:
    session = Session(ClaudeTranscriptAdapter(), clock=fixed_clock)
    session.feed(_line(type="user", uuid="u1", parentUuid=None, message={"role": "user", "content": "ls"}))
    session.feed(_assistant("a1", "u1", {"type": "tool_use", "id": "toolu_9", "name": "Bash", "input": {}}, "tool_use"))
    bodies = [e.event.body for e in session.close() if isinstance(e, SessionEvent)]
    warning, failed = bodies[0], bodies[1]
    assert isinstance(warning, WarningBody) and "toolu_9" in warning.message
    assert isinstance(failed, ToolCall) and (failed.call_id, failed.phase, failed.tool) == ("toolu_9", "failed", "Bash")


@pytest.mark.parametrize("capture", CAPTURES, ids=_case)
def test_a_permission_decided_without_asking_is_permission_auto(capture: Path) -> None:
    lines = [json.loads(x) for x in capture.read_bytes().splitlines() if x.strip()]
    for sub in sorted((capture.parent / capture.stem / "subagents").glob("agent-*.jsonl")):
        lines += [json.loads(x) for x in sub.read_bytes().splitlines() if x.strip()]
    # the session's files are read in time order (a sub-agent's lines inside its parent's turn)
    lines.sort(key=lambda line: line.get("timestamp") or "")
    expected = [
        (block["tool_use_id"], "allow" if line["permissionDecision"]["decision"] == "accept" else "deny")
        for line in lines
        if line.get("permissionDecision", {}).get("source") == "config"
        for block in line["message"]["content"]
        if block["type"] == "tool_result"
    ]
    autos = [e.body for e in _events(capture) if isinstance(e.body, PermissionAuto)]
    assert [(a.tool_call.call_id, a.option_id) for a in autos] == expected


def test_permission_auto_names_the_call_as_its_start_did() -> None:
    a = Session(ClaudeTranscriptAdapter(), clock=fixed_clock)
    a.feed(_line(type="user", uuid="u1", parentUuid=None, message={"role": "user", "content": "ls"}))
    use = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls -1"}}
    a.feed(_assistant("a1", "u1", use, "tool_use"))
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}
    denied = _line(
        type="user",
        uuid="u2",
        parentUuid="a1",
        message={"role": "user", "content": [result]},
        toolDenialKind="user-rejected",
        permissionDecision={"decision": "reject", "source": "config", "reasonCode": "unknown"},
    )
    auto = _fed(a, denied)[0]
    ref = ToolCallRef(call_id="toolu_1", tool="Bash", title="ls -1", category="execute")
    assert auto == PermissionAuto(tool_call=ref, option_id="deny", decision="deny")
    # someone was asked: not automatic (the live control protocol reports the request)
    b = Session(ClaudeTranscriptAdapter(), clock=fixed_clock)
    b.feed(_line(type="user", uuid="u1", parentUuid=None, message={"role": "user", "content": "ls"}))
    b.feed(_assistant("a1", "u1", use, "tool_use"))
    asked = _line(
        type="user",
        uuid="u2",
        parentUuid="a1",
        message={"role": "user", "content": [result]},
        permissionDecision={"decision": "accept", "source": "user_temporary"},
    )
    assert not any(isinstance(x, PermissionAuto) for x in _fed(b, asked))


@pytest.mark.parametrize("capture", CAPTURES, ids=_case)
def test_no_capture_is_reported_as_branching(capture: Path) -> None:
    # none of the runs rewinds or forks; 40-parallel-tools answers two calls of one message
    branches = [e.body for e in _events(capture) if isinstance(e.body, WarningBody) and "branches" in e.body.message]
    assert branches == []


def test_parallel_tool_calls_are_not_a_branch() -> None:
    (capture,) = [c for c in CAPTURES if _case(c) == "40-parallel-tools"]
    calls = [(e.body.call_id, e.body.phase) for e in _events(capture) if isinstance(e.body, ToolCall)]
    assert calls == [
        ("toolu_01FAKE000100", "started"),
        ("toolu_01FAKE000101", "started"),
        ("toolu_01FAKE000100", "completed"),
        ("toolu_01FAKE000101", "completed"),
    ]


def _parallel_lines() -> dict[str, bytes]:
    """One API message with two tool_use blocks (two lines), each answered by its own line."""
    use1 = {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/a"}}
    use2 = {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "ls"}}

    def result(uuid: str, parent: str, call: str) -> bytes:
        block = {"type": "tool_result", "tool_use_id": call, "content": "x"}
        return _line(type="user", uuid=uuid, parentUuid=parent, message={"role": "user", "content": [block]})

    return {
        "prompt": _line(type="user", uuid="u1", parentUuid=None, message={"role": "user", "content": "go"}),
        "a1": _assistant("a1", "u1", use1, "tool_use"),
        "a2": _assistant("a2", "a1", use2, "tool_use", idx=1),
        "r1": result("r1", "a1", "t1"),
        "r2": result("r2", "a2", "t2"),
        "again": result("r3", "a1", "t1"),  # t1 answered a second time: a real branch
    }


@pytest.mark.parametrize(
    "order", [["a1", "a2", "r1", "r2"], ["a1", "r1", "a2", "r2"]], ids=["blocks-first", "result-between"]
)
def test_parallel_tool_results_by_hand_are_not_a_branch(order: list[str]) -> None:
    a = Session(ClaudeTranscriptAdapter(), clock=fixed_clock)
    lines = _parallel_lines()
    out = [b for name in ["prompt", *order] for b in _fed(a, lines[name])]
    assert [b for b in out if isinstance(b, WarningBody)] == []
    assert [(b.call_id, b.phase) for b in out if isinstance(b, ToolCall) and b.phase != "started"] == [
        ("t1", "completed"),
        ("t2", "completed"),
    ]
    warnings = [b.message for b in _fed(a, lines["again"]) if isinstance(b, WarningBody)]
    assert [w for w in warnings if "branches" in w] == [
        "the conversation branches at a1: the messages first written after it are abandoned"
    ]


def test_a_rewind_is_reported_as_a_branch() -> None:
    a = ClaudeTranscriptAdapter()
    a.feed(_line(type="user", uuid="u1", parentUuid=None, message={"role": "user", "content": "one"}))
    a.feed(_assistant("a1", "u1", {"type": "text", "text": "first"}, "end_turn"))
    # the user rewinds and asks again from the first prompt
    items = a.feed(_line(type="user", uuid="u2", parentUuid="u1", message={"role": "user", "content": "two"}))
    warnings = [b for b in _bodies(items) if isinstance(b, WarningBody)]
    assert len(warnings) == 1 and "u1" in warnings[0].message


def test_the_session_is_announced_at_the_first_conversation_line() -> None:
    a = ClaudeTranscriptAdapter()
    first = a.feed(_line(type="queue-operation", operation="enqueue", content="hi"))
    assert not any(isinstance(i, SessionCreated) for i in first)
    prompt = _line(type="user", uuid="u1", parentUuid=None, version="2.1.332", cwd="/w", message={"content": "hi"})
    (created,) = [i for i in a.feed(prompt) if isinstance(i, SessionCreated)]
    assert created.record.agent_version == "2.1.332" and created.record.cwd == "/w"
    assert created.record.native_session_id == "s1" and created.record.created_at == "2026-01-01T00:00:00.000Z"


def test_a_file_of_bookkeeping_lines_is_still_announced() -> None:
    a = ClaudeTranscriptAdapter()
    assert not any(isinstance(i, SessionCreated) for i in a.feed(_line(type="queue-operation")))
    (created,) = [i for i in a.close() if isinstance(i, SessionCreated)]
    assert created.record.native_session_id == "s1" and created.record.agent_version is None


def test_bookkeeping_lines_are_kept_with_their_type() -> None:
    a = ClaudeTranscriptAdapter()
    a.feed(_line(type="queue-operation", operation="enqueue", content="hi"))
    for kind in ("atis-latch", "api-request", "tools-used", "last-prompt"):
        items = a.feed(_line(type=kind))
        assert Passthrough(method=kind) in items


def test_detect_tells_transcripts_from_stream_json() -> None:
    transcript = [(p.read_bytes().splitlines()[2], "agent") for p in CAPTURES[:1]]
    stream = [(b'{"type":"assistant","session_id":"s","uuid":"u","message":{}}', "agent")]
    assert ClaudeTranscriptAdapter.detect(transcript) > 0.9  # type: ignore[arg-type]
    assert ClaudeTranscriptAdapter.detect(stream) == 0.0  # type: ignore[arg-type]


def test_whole_capture_through_the_public_api() -> None:
    (capture,) = [c for c in CAPTURES if _case(c) == "05-bash-ls-bypass"]
    (inp,) = [i for i in find_inputs([capture]) if isinstance(i, SessionInput)]
    evs = list(events(read_records(inp.paths), protocol=inp.protocol, clock=fixed_clock))
    kinds = [e.event.kind for e in evs if isinstance(e, SessionEvent)]
    assert kinds.count("tool-call") == 2 and kinds.count("command-output") == 1


# -- Turn inference and sub-agent layouts of older versions (1.0.x-2.0.x) -------------------------


def _convert(*lines: bytes) -> list[EventEnvelope]:
    from normalize import CaptureParser

    parser = CaptureParser()
    records = [*parser.feed(b"".join(line + b"\n" for line in lines)), *parser.close()]
    out = events(records, protocol="claude-transcript", clock=fixed_clock)
    return [e.event for e in out if isinstance(e, SessionEvent)]


def _prompt(uuid: str, parent: str | None, text: str, **kw: Any) -> bytes:
    return _line(type="user", uuid=uuid, parentUuid=parent, message={"role": "user", "content": text}, **kw)


def _old(uuid: str, parent: str, msg_id: str, block: dict[str, Any], out_tokens: int = 1, **kw: Any) -> bytes:
    """An assistant line as 1.0.x-2.0.x write it: ``stop_reason: null``, the usage known so far."""
    msg: dict[str, Any] = {"id": msg_id, "model": "m", "role": "assistant", "content": [block], "stop_reason": None}
    msg["usage"] = {"input_tokens": 10, "output_tokens": out_tokens}
    return _line(type="assistant", uuid=uuid, parentUuid=parent, message=msg, **kw)


def _kinds(evs: list[EventEnvelope]) -> list[tuple[str, str | None]]:
    out = []
    for e in evs:
        b = e.body
        detail = getattr(b, "reason", None) or getattr(b, "phase", None) or getattr(b, "text", None)
        if e.kind != "usage":
            out.append((e.kind, detail))
    return out


def test_without_stop_reasons_the_next_prompt_and_the_end_of_the_file_end_turns_ok() -> None:
    evs = _convert(
        _prompt("u1", None, "one"),
        _old("a1", "u1", "m1", {"type": "text", "text": "answer one"}),
        _prompt("u2", "a1", "two"),
        _old("a2", "u2", "m2", {"type": "text", "text": "answer two"}),
    )
    assert _kinds(evs) == [
        ("turn-start", None),
        ("user-message", "one"),
        ("assistant-message", "answer one"),
        ("turn-complete", "ok"),
        ("turn-start", None),
        ("user-message", "two"),
        ("assistant-message", "answer two"),
        ("turn-complete", "ok"),
    ]
    assert [e.native.protocol for e in evs if e.kind == "turn-complete"] == ["core", "core"]


def test_an_answer_written_again_at_the_next_prompt_is_said_once() -> None:
    """Before 1.0.98, prompts on stdin: at the next prompt the CLI writes the previous answer
    again (same ``message.id`` and content, new ``uuid``, the first copy at the root): one
    answer, its copy kept as ``session.update``."""
    think = {"type": "thinking", "thinking": "hmm"}
    text = {"type": "text", "text": "answer one"}
    evs = _convert(
        _prompt("u1", None, "one"),
        _old("a1", "u1", "m1", think),
        _old("a2", "a1", "m1", text, out_tokens=5),
        _line(**{**json.loads(_old("c1", "", "m1", think)), "parentUuid": None}),
        _old("c2", "c1", "m1", text, out_tokens=5),
        _prompt("u2", "c2", "two"),
        _old("a3", "u2", "m2", {"type": "text", "text": "answer two"}),
    )
    assert _kinds(evs) == [
        ("turn-start", None),
        ("user-message", "one"),
        ("reasoning", "hmm"),
        ("assistant-message", "answer one"),
        ("turn-complete", "ok"),
        ("turn-start", None),
        ("user-message", "two"),
        ("assistant-message", "answer two"),
        ("turn-complete", "ok"),
    ]
    # the copy's usage is no new call either
    usages = [e.body.tokens for e in evs if isinstance(e.body, Usage)]
    assert [t.output if t is not None else None for t in usages] == [1, 4, 1]


@pytest.mark.parametrize("version", ["1.0.30", "1.0.60"])
def test_each_answer_of_a_stdin_session_is_said_once_as_on_stdout(version: str) -> None:
    (main,) = (KIT / f"claude-code-{version}" / "10-multiturn-stream-input").glob("*.jsonl")
    stdout = ADAPTERS / "claude-stream-json" / "captures" / f"claude-code-{version}"
    stdout = stdout / "10-multiturn-stream-input.tap.jsonl"

    def said(capture: Path) -> list[tuple[str, str]]:
        return [(b.message_id, b.text) for b in (e.body for e in _events(capture)) if isinstance(b, AssistantMessage)]

    assert said(main) == said(stdout) == [("msg_01FAKE000001", "First answer."), ("msg_01FAKE000003", "OK.")]
    # the copy is kept, untranslated
    assert [u.update.method for u in _updates(main) if u.update.method == "assistant/copy"] == ["assistant/copy"]


@pytest.mark.parametrize(
    ("version", "may_copy"),
    [
        ("1.0.30", True),
        ("1.0.60", True),
        ("1.0.97", True),
        ("1.0.98", False),
        ("2.1.332", False),
        (None, True),
        ("dev", True),
    ],
)
def test_only_releases_before_1_0_98_are_read_for_copied_answers(version: str | None, may_copy: bool) -> None:
    """The copies are looked for (each assistant line's content hashed) only in files of the
    releases that write them, or of a version not known."""
    assert claude_transcript._writes_copies(version) is may_copy


@pytest.mark.parametrize("last", ["tool call", "tool result", "prompt"])
def test_a_file_ending_with_something_pending_is_cut_off(last: str) -> None:
    use = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
    lines = [_prompt("u1", None, "one"), _old("a1", "u1", "m1", use)]
    if last == "tool result":
        result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}
        lines.append(_line(type="user", uuid="u2", parentUuid="a1", message={"role": "user", "content": [result]}))
    elif last == "prompt":
        lines = [_prompt("u1", None, "one")]
    kinds = _kinds(_convert(*lines))
    assert ("error", None) in kinds and kinds[-1] == ("turn-complete", "interrupt")


def test_a_call_failed_with_its_cut_turn_does_not_hold_the_next_turns_open() -> None:
    # the call never got its result: its turn is cut by the next prompt, and the call failed with
    # it; the turns after it are answered and end ok, by the same inference as any other
    use = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
    evs = _convert(
        _prompt("u1", None, "one"),
        _old("a1", "u1", "m1", use),
        _prompt("u2", "a1", "two"),
        _old("a2", "u2", "m2", {"type": "text", "text": "answer two"}),
        _prompt("u3", "a2", "three"),
        _old("a3", "u3", "m3", {"type": "text", "text": "answer three"}),
    )
    ends = [(e.turn_id, e.body.reason) for e in evs if isinstance(e.body, TurnComplete)]
    assert ends == [("turn:1", "interrupt"), ("turn:2", "ok"), ("turn:3", "ok")]
    failed = [(e.turn_id, e.body.call_id) for e in evs if isinstance(e.body, ToolCall) and e.body.phase == "failed"]
    assert failed == [("turn:1", "toolu_1")]
    assert not any(isinstance(e.body, Error) for e in evs)


def test_a_slash_command_and_its_expansion_are_the_prompt_of_one_turn() -> None:
    cmd = "<command-message>init is analyzing</command-message>\n<command-name>/init</command-name>"
    evs = _convert(
        _prompt("u0", None, "Caveat: The messages below were generated by the user", isMeta=True),
        _prompt("u1", "u0", cmd),
        _prompt("u2", "u1", "Please analyze this codebase", isMeta=True),
        _old("a1", "u2", "m1", {"type": "text", "text": "done"}),
        _prompt("u3", "a1", "<command-name>/clear</command-name>"),
        _prompt("u4", "u3", "<local-command-stdout></local-command-stdout>"),
    )
    assert _kinds(evs) == [
        ("turn-start", None),
        ("user-message", cmd),
        ("user-message", "Please analyze this codebase"),
        ("assistant-message", "done"),
        ("turn-complete", "ok"),
        ("conversation-reset", None),  # /clear: a new conversation begins
        ("turn-start", None),
        ("user-message", "<command-name>/clear</command-name>"),
        ("turn-complete", "ok"),  # /clear is answered by the CLI: nothing pending
    ]


def test_inline_sidechains_of_parallel_task_calls_are_keyed_by_their_call() -> None:
    """1.0.x: sub-agent lines in the session's file, no agentId; the first one is the Task prompt."""

    def task(call: str, prompt: str) -> dict[str, Any]:
        return {"type": "tool_use", "id": call, "name": "Task", "input": {"description": "d", "prompt": prompt}}

    def result(uuid: str, parent: str, call: str) -> bytes:
        block = {"type": "tool_result", "tool_use_id": call, "content": [{"type": "text", "text": "r"}]}
        usage = {"content": [{"type": "text", "text": "r"}], "totalTokens": 5, "totalDurationMs": 1}
        msg = {"role": "user", "content": [block]}
        return _line(type="user", uuid=uuid, parentUuid=parent, message=msg, toolUseResult=usage)

    side = {"isSidechain": True}
    evs = _convert(
        _prompt("u1", None, "go"),
        _old("a1", "u1", "m1", task("toolu_A", "do A")),
        _old("a2", "a1", "m1", task("toolu_B", "do B")),
        _prompt("sb1", None, "do B", **side),
        _prompt("sa1", None, "do A", **side),
        _old("sb2", "sb1", "mb", {"type": "text", "text": "B done"}, **side),
        _old("sa2", "sa1", "ma", {"type": "text", "text": "A done"}, **side),
        result("r1", "a1", "toolu_A"),
        result("r2", "a2", "toolu_B"),
        _old("a3", "r2", "m2", {"type": "text", "text": "both done"}),
    )
    by_agent: dict[str | None, list[str]] = {}
    for e in evs:
        if e.kind in ("user-message", "assistant-message"):
            by_agent.setdefault(e.subagent_id, []).append(str(getattr(e.body, "text", "")))
    assert by_agent == {None: ["go", "both done"], "toolu_A": ["do A", "A done"], "toolu_B": ["do B", "B done"]}
    done = [
        (e.body.subagent_id, e.body.phase) for e in evs if isinstance(e.body, Subagent) and e.body.phase != "started"
    ]
    assert done == [("toolu_A", "completed"), ("toolu_B", "completed")]
    assert all(e.turn_id == "turn:1" for e in evs)


def test_summary_lines_first_do_not_lose_the_session_metadata() -> None:
    summaries = [json.dumps({"type": "summary", "summary": f"s{i}", "leafUuid": f"l{i}"}).encode() for i in range(20)]
    first = _prompt("u1", None, "hi", version="2.0.28", cwd="/w")
    sample = [(s, "agent") for s in summaries]
    assert ClaudeTranscriptAdapter.detect(sample) > 0  # type: ignore[arg-type]
    from normalize import CaptureParser

    parser = CaptureParser()
    records = [*parser.feed(b"".join(x + b"\n" for x in [*summaries, first])), *parser.close()]
    (created,) = [e for e in events(records, protocol="claude-transcript") if isinstance(e, SessionCreated)]
    assert (created.record.native_session_id, created.record.cwd, created.record.agent_version) == (
        "s1",
        "/w",
        "2.0.28",
    )


def test_a_2_0_agent_file_beside_the_session_is_read_with_the_session_it_names(tmp_path: Path) -> None:
    (tmp_path / "s1.jsonl").write_bytes(_prompt("u1", None, "hi") + b"\n")
    (tmp_path / "s2.jsonl").write_bytes(
        _line(sessionId="s2", type="user", uuid="v1", parentUuid=None, message={"role": "user", "content": "yo"})
        + b"\n"
    )
    (tmp_path / "agent-a1.jsonl").write_bytes(_prompt("w1", None, "Warmup", isSidechain=True, agentId="a1") + b"\n")
    found = {
        i.main.name: [p.name for p in i.companions] for i in find_inputs([tmp_path]) if isinstance(i, SessionInput)
    }
    assert found == {"s1.jsonl": ["agent-a1.jsonl"], "s2.jsonl": []}
    assert [i.companions for i in find_inputs([tmp_path / "s1.jsonl"]) if isinstance(i, SessionInput)] == [
        [tmp_path / "agent-a1.jsonl"]
    ]


def test_a_project_folder_of_many_sessions_reads_each_agent_files_owner_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a project folder of the 2.0.x layout: sessions and agent files side by side
    sessions, agents = 60, 40
    for n in range(sessions):
        (tmp_path / f"s{n}.jsonl").write_bytes(_prompt(f"u{n}", None, "hi", sessionId=f"s{n}") + b"\n")
    for n in range(agents):
        line = _prompt(f"w{n}", None, "Warmup", isSidechain=True, agentId=f"a{n}", sessionId=f"s{n % 7}")
        (tmp_path / f"agent-a{n}.jsonl").write_bytes(line + b"\n")
    opened: list[Path] = []
    path_open = Path.open

    def counted(path: Path, *args: Any, **kwargs: Any) -> Any:
        opened.append(path)
        return path_open(path, *args, **kwargs)

    monkeypatch.setattr(Path, "open", counted)
    found = {
        i.main.name: [p.name for p in i.companions] for i in find_inputs([tmp_path]) if isinstance(i, SessionInput)
    }
    assert len(found) == sessions  # every agent file is read with its session, none is a session of its own
    assert found["s3.jsonl"] == sorted(f"agent-a{n}.jsonl" for n in range(agents) if n % 7 == 3)
    assert found["s10.jsonl"] == []
    # each agent file is read twice: its protocol detected, its owner read; not once per session beside it
    agent_files = sorted(tmp_path.glob("agent-*.jsonl"))
    assert sorted(p for p in opened if p.name.startswith("agent-")) == sorted(agent_files * 2)


def test_companions_are_found_under_a_session_named_with_glob_characters(tmp_path: Path) -> None:
    for stem in ("[x]", "x", "y"):
        (tmp_path / f"{stem}.jsonl").write_bytes(_prompt("u1", None, "hi", sessionId=stem) + b"\n")
    for folder in ("[x]", "x", "z"):  # z: a folder of sub-agents whose session file is not there
        sub = tmp_path / folder / "subagents"
        sub.mkdir(parents=True)
        (sub / "agent-a1.jsonl").write_bytes(_prompt("w1", None, "go", isSidechain=True, agentId="a1") + b"\n")
    found = {
        i.main.relative_to(tmp_path).as_posix(): [p.relative_to(tmp_path).as_posix() for p in i.companions]
        for i in find_inputs([tmp_path])
        if isinstance(i, SessionInput)
    }
    assert found == {
        "[x].jsonl": ["[x]/subagents/agent-a1.jsonl"],
        "x.jsonl": ["x/subagents/agent-a1.jsonl"],
        "y.jsonl": [],
        "z/subagents/agent-a1.jsonl": [],  # nobody's companion: converted as a session of its own
    }


def test_a_later_line_of_a_message_that_counts_more_tokens_adds_the_difference() -> None:
    evs = _convert(
        _prompt("u1", None, "hi"),
        _old("a1", "u1", "m1", {"type": "text", "text": "x"}, out_tokens=1),
        _old("a2", "a1", "m1", {"type": "text", "text": "y"}, out_tokens=1),
        _old("a3", "a2", "m1", {"type": "text", "text": "z"}, out_tokens=40),
    )
    usages = [e.body.tokens for e in evs if isinstance(e.body, Usage)]
    assert [(t.input, t.output) for t in usages if t is not None] == [(10, 1), (0, 39)]

"""The claude-stream-json adapter: Claude Code's stream-json stdout (and stdin)."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import msgspec
import pytest

from helpers import ADAPTERS, convert_capture, fixed_clock
from normalize import (
    AssistantDelta,
    AssistantMessage,
    Body,
    CommandOutput,
    Compaction,
    ContextUpdated,
    ConversationReset,
    Error,
    EventEnvelope,
    FileDiff,
    McpTool,
    MessageAccepted,
    MessageCompleted,
    PermissionAuto,
    PermissionRequest,
    Plan,
    RequestResolved,
    Session,
    SessionCreated,
    SessionEvent,
    SessionUpdate,
    Subagent,
    Task,
    ToolCall,
    ToolChangeApplied,
    TurnComplete,
    TurnStart,
    Usage,
    UserMessage,
    WebSearch,
)
from normalize import Warning as WarningBody
from normalize._model import _Core
from normalize.adapters.claude_stream_json import ClaudeStreamJsonAdapter

KIT = ADAPTERS / "claude-stream-json" / "captures" / "claude-code-2.1.332"
CAPTURES = sorted(KIT.glob("*.jsonl"))

#: Documented lines that are kept as session.update on purpose (README, "Kept as session.update"):
#: nothing in the model means the same.
KEPT = {
    "system/status",  # status "requesting" (compaction statuses do translate)
    "system/thinking_tokens",
    "system/background_tasks_changed",
    "stream_event/message_start",
    "stream_event/content_block_start",  # text and thinking blocks (tool_use blocks translate)
    "stream_event/content_block_stop",
    "stream_event/message_stop",
    "control_request/initialize",  # the client's; its response translates
    "control_request/interrupt",  # the client's; the turn's result says it was interrupted
    "control_response",  # the CLI's ack of an interrupt
    "user",  # --replay-user-messages echo of a prompt already seen on stdin
}


def _lines(capture: Path) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for raw in capture.read_text().splitlines():
        d = json.loads(raw)
        if capture.name.endswith(".tap.jsonl"):
            out.append((d["from"], d["msg"]))
        else:
            out.append(("agent", d))
    return out


def _events(capture: Path) -> list[EventEnvelope]:
    return [e.event for e in convert_capture(capture) if isinstance(e, SessionEvent)]


def _case(capture: Path) -> str:
    return capture.name


def _bodies(events: list[EventEnvelope], kind: type[Body]) -> list[Any]:
    return [e.body for e in events if isinstance(e.body, kind)]


def test_kit_has_every_case() -> None:
    assert len(CAPTURES) == 28


@pytest.mark.parametrize("capture", CAPTURES, ids=_case)
def test_no_error_unless_the_cli_reported_one(capture: Path) -> None:
    errors = _bodies(_events(capture), Error)
    reported = any(d.get("is_api_error_message") for _, d in _lines(capture))
    assert bool(errors) == reported
    if reported:
        assert all(e.recoverable for e in errors)


@pytest.mark.parametrize("capture", CAPTURES, ids=_case)
def test_documented_lines_translate_unless_nothing_means_the_same(capture: Path) -> None:
    for e in convert_capture(capture):
        if not isinstance(e, SessionUpdate):
            continue
        method = e.update.method or ""
        if method == "stream_event/content_block_delta":
            # only a signature delta has no body
            payload = json.loads(bytes(e.update.payload))
            assert payload["event"]["delta"]["type"] == "signature_delta"
            continue
        assert method in KEPT, method


@pytest.mark.parametrize("capture", CAPTURES, ids=_case)
def test_every_tool_use_ends_in_exactly_one_terminal_phase(capture: Path) -> None:
    ids: set[str] = set()
    for _, d in _lines(capture):
        if d.get("type") == "assistant":
            ids.update(b["id"] for b in d["message"]["content"] if b["type"] == "tool_use")
    terminal = Counter(b.call_id for b in _bodies(_events(capture), ToolCall) if b.phase in ("completed", "failed"))
    assert {i: terminal[i] for i in ids} == dict.fromkeys(ids, 1)
    assert set(terminal) == ids


@pytest.mark.parametrize("capture", CAPTURES, ids=_case)
def test_one_turn_complete_per_result(capture: Path) -> None:
    results = [d for f, d in _lines(capture) if f == "agent" and d.get("type") == "result"]
    events = _events(capture)
    completes = [e for e in events if isinstance(e.body, TurnComplete)]
    assert len(completes) == len(results)
    assert len([e for e in events if isinstance(e.body, TurnStart)]) == len(results)
    # none synthesized by the Session (which would mean a turn left open or a result outside one)
    assert all(e.native.protocol == "claude-stream-json" for e in completes)
    completed = [e for e in convert_capture(capture) if isinstance(e, MessageCompleted)]
    assert len(completed) == len(results)


@pytest.mark.parametrize("capture", CAPTURES, ids=_case)
def test_subagent_events_carry_their_subagent_id(capture: Path) -> None:
    for e in _events(capture):
        payload = e.native.payload
        if e.native.protocol != "claude-stream-json" or payload is None:
            continue
        line = json.loads(bytes(payload))
        parent = line.get("parent_tool_use_id")
        if parent is not None:
            assert e.subagent_id == parent, (e.kind, e.native.method)


@pytest.mark.parametrize("capture", CAPTURES, ids=_case)
def test_streamed_text_is_never_doubled(capture: Path) -> None:
    events = _events(capture)
    deltas: dict[str, str] = defaultdict(str)
    for b in _bodies(events, AssistantDelta):
        deltas[b.message_id] += b.text
    messages = Counter(b.message_id for b in _bodies(events, AssistantMessage))
    texts = {b.message_id: b.text for b in _bodies(events, AssistantMessage)}
    assert all(n == 1 for n in messages.values())
    for mid, text in deltas.items():
        assert texts[mid] == text


@pytest.mark.parametrize("capture", CAPTURES, ids=_case)
def test_the_native_session_is_recorded(capture: Path) -> None:
    created = [e for e in convert_capture(capture) if isinstance(e, SessionCreated)]
    native = {d["session_id"] for f, d in _lines(capture) if f == "agent" and d.get("session_id")}
    if not native:
        assert created == []  # the empty capture: no session at all
        return
    assert created[-1].record.native_session_id in native
    assert created[-1].record.agent == "claude-code"


def test_an_empty_capture_gives_no_events() -> None:
    # --output-format stream-json without --verbose: the CLI printed nothing
    assert convert_capture(KIT / "35-stream-json-without-verbose.jsonl") == []


def test_interrupt_ends_the_turn_as_interrupted_and_the_next_turn_is_ok() -> None:
    completes = _bodies(_events(KIT / "27-interrupt.tap.jsonl"), TurnComplete)
    assert [c.reason for c in completes] == ["interrupt", "ok"]
    done = [e for e in convert_capture(KIT / "27-interrupt.tap.jsonl") if isinstance(e, MessageCompleted)]
    assert [d.result.stop_reason for d in done] == ["cancelled", "end_turn"]


def test_background_agent_turn_is_a_turn_of_its_own() -> None:
    events = _events(KIT / "25-background-agent.jsonl")
    assert [e.turn_id for e in events if isinstance(e.body, TurnComplete)] == ["turn:1", "turn:2"]
    sub = [b for b in _bodies(events, Body) if type(b).__name__ == "Subagent"]
    assert [s.phase for s in sub].count("completed") == 1
    assert sub[-1].result == "Sub-agent here: the answer is 42."


def test_turn_usage_excludes_subagents_and_session_usage_is_cumulative() -> None:
    usage = _bodies(_events(KIT / "12-subagent-task.jsonl"), Usage)
    turn = [u for u in usage if u.scope == "turn"]
    session = [u for u in usage if u.scope == "session"]
    assert turn[0].tokens.input == 25455  # result.usage: main thread only
    assert session[0].tokens.input == 33798  # modelUsage: sub-agent included
    multi = _bodies(_events(KIT / "10-multiturn-stream-input.tap.jsonl"), Usage)
    assert [u.cost.amount for u in multi if u.scope == "session"] == [0.050588, 0.102116]
    assert [u.cost.amount for u in multi if u.scope == "turn"] == [0.050588, 0.051528]


@pytest.mark.parametrize(
    ("version", "exit_code"),
    [
        ("1.0.60", None),
        ("1.0.98", None),
        ("2.0.0", None),
        ("2.0.30", 2),
        ("2.0.76", 2),
        ("2.1.20", 2),
        ("2.1.42", 2),
        ("2.1.67", 2),
        ("2.1.100", 2),
        ("2.1.142", 2),
        ("2.1.190", 2),
        ("2.1.235", 2),
        ("2.1.260", 2),
        ("2.1.290", 2),
        ("2.1.332", 2),
    ],
)
def test_bash_error_has_exit_code_and_output(version: str, exit_code: int | None) -> None:
    """The same failed command, every version: what it printed; its exit code where Claude
    Code says it (up to 2.0.0 it writes only what the command printed to stderr)."""
    events = _events(ADAPTERS / "claude-stream-json" / "captures" / f"claude-code-{version}" / "29-bash-error.jsonl")
    (call,) = [b for b in _bodies(events, ToolCall) if b.phase == "failed"]
    assert call.exit_code == exit_code
    (out,) = _bodies(events, CommandOutput)
    # what ls printed; the "Exit code 2" line Claude Code puts first for the model is the exit code
    printed = "ls: cannot access '/nonexistent-dir-for-test': No such file or directory"
    if version == "2.1.67":  # it writes the command's stderr twice (in its session file too)
        printed = f"{printed}\n\n{printed}"
    assert (out.stream, out.delta) == ("merged", printed)


@pytest.mark.parametrize("version", ["2.1.142", "2.1.190", "2.1.235", "2.1.260", "2.1.290", "2.1.332"])
def test_api_retries_are_warnings_and_a_failed_call_ends_with_an_api_error(version: str) -> None:
    """The same HTTP 529 retried twice, then given up, and an HTTP 400: each 2.1 release says it
    in its own words (2.1.142 and 2.1.190: fractional retry delays, terminal_reason "completed")."""
    kit = ADAPTERS / "claude-stream-json" / "captures" / f"claude-code-{version}"
    events = _events(kit / "18-api-error-529-retries.jsonl")
    assert [e.error_type for e in _bodies(events, Error)] == ["server_error"]
    retries = [w.message for w in _bodies(events, WarningBody) if w.source == "api_retry"]
    assert [m.split("; ")[1].split(" in ")[0] for m in retries] == ["retry 1/2", "retry 2/2"]
    for case in ("17-api-error-400.jsonl", "18-api-error-529-retries.jsonl"):
        (done,) = [e for e in convert_capture(kit / case) if isinstance(e, MessageCompleted)]
        assert done.result.stop_reason == "error"
        assert done.result.error is not None and done.result.error.error_type == "api_error"


@pytest.mark.parametrize("version", ["2.0.76", "2.1.20", "2.1.42", "2.1.67"])
def test_an_api_error_without_a_terminal_reason_ends_the_turn_with_its_message(version: str) -> None:
    """Before 2.1.142 the retries are not on stdout and the failed call's ``result`` names no
    cause (no ``terminal_reason``, no ``api_error_status``): the turn still ends in error, with
    the API's words, and the error line keeps the CLI's own type."""
    kit = ADAPTERS / "claude-stream-json" / "captures" / f"claude-code-{version}"
    for case in ("17-api-error-400.jsonl", "18-api-error-529-retries.jsonl"):
        events = _events(kit / case)
        assert [w for w in _bodies(events, WarningBody) if w.source == "api_retry"] == []
        (err,) = _bodies(events, Error)
        assert (err.error_type, err.message.startswith("API Error: ")) == ("unknown", True)
        (done,) = [e for e in convert_capture(kit / case) if isinstance(e, MessageCompleted)]
        assert done.result.stop_reason == "error"
        assert done.result.error is not None and done.result.error.message == err.message


def test_retries_on_stdout_and_a_failed_call_said_as_before_2_1_142() -> None:
    """2.1.100 prints ``system/api_retry`` (as 2.1.142), but says the failed call as 2.1.67 does:
    the synthetic line's ``error`` is ``unknown`` and its text the API's raw body, the ``result``
    has no ``api_error_status`` and ``terminal_reason: "completed"``, so the completion's error
    has the message and no type."""
    kit = ADAPTERS / "claude-stream-json" / "captures" / "claude-code-2.1.100"
    retries = [w.message for w in _bodies(_events(kit / "18-api-error-529-retries.jsonl"), WarningBody)]
    assert [m.split("; ")[1].split(" in ")[0] for m in retries] == ["retry 1/2", "retry 2/2"]
    for case, status in (("17-api-error-400.jsonl", 400), ("18-api-error-529-retries.jsonl", 529)):
        (err,) = _bodies(_events(kit / case), Error)
        assert err.error_type == "unknown"
        assert err.message.startswith(f'API Error: {status} {{"type":"error"')
        (done,) = [e for e in convert_capture(kit / case) if isinstance(e, MessageCompleted)]
        assert done.result.stop_reason == "error"
        assert done.result.error is not None
        assert (done.result.error.message, done.result.error.error_type) == (err.message, None)


@pytest.mark.parametrize("version", ["1.0.60", "1.0.98", "2.0.0", "2.0.30"])
@pytest.mark.parametrize("case", ["17-api-error-400", "18-api-error-529-retries"])
def test_a_synthetic_api_error_line_without_an_error_field_is_an_error(version: str, case: str) -> None:
    """Up to 2.0.x the ``<synthetic>`` line of a failed call has neither ``error`` nor
    ``is_api_error_message``, only the CLI's ``API Error: ...`` text: still an ``error``, not
    an answer, with the words and type the session file of the same run gives it."""
    stream = ADAPTERS / "claude-stream-json" / "captures" / f"claude-code-{version}" / f"{case}.jsonl"
    events = _events(stream)
    (err,) = _bodies(events, Error)
    assert (err.error_type, err.message.startswith("API Error: ")) == ("api_error", True)
    assert _bodies(events, AssistantMessage) == []
    (done,) = [e for e in convert_capture(stream) if isinstance(e, MessageCompleted)]
    assert done.result.stop_reason == "error"
    assert done.result.error is not None and done.result.error.message == err.message
    folder = ADAPTERS / "claude-transcript" / "captures" / f"claude-code-{version}" / case
    (main,) = [p for p in folder.glob("*.jsonl") if p.name[:6] != "agent-"]
    assert [(b.error_type, b.message) for b in _bodies(_events(main), Error)] == [(err.error_type, err.message)]


@pytest.mark.parametrize(
    "version", ["2.0.0", "2.0.30", "2.0.76", "2.1.20", "2.1.42", "2.1.100", "2.1.142", "2.1.190", "2.1.235", "2.1.260"]
)
def test_a_streamed_call_counts_the_input_its_message_start_counted(version: str) -> None:
    """A ``message_delta`` whose usage gives only ``output_tokens`` (the API's shape, as the fake
    server sends it) does not say the call read nothing: its input is the ``message_start``'s."""
    kit = ADAPTERS / "claude-stream-json" / "captures" / f"claude-code-{version}"
    calls = [u.tokens for u in _bodies(_events(kit / "27-interrupt.tap.jsonl"), Usage) if u.scope == "call"]
    assert [(t.input, t.output, t.total) for t in calls] == [(120, 24, 144)]


def test_refused_command_has_no_command_output() -> None:
    for case in ("14-permission-denied-print.jsonl", "15-permission-stdio-deny.tap.jsonl"):
        events = _events(KIT / case)
        assert _bodies(events, CommandOutput) == []
        assert [b.phase for b in _bodies(events, ToolCall)][-1] == "failed"


@pytest.mark.parametrize(
    "version",
    [
        *("1.0.60", "1.0.98", "2.0.0", "2.0.30", "2.0.76"),
        *("2.1.20", "2.1.42", "2.1.67", "2.1.100", "2.1.142", "2.1.190", "2.1.235", "2.1.260", "2.1.290", "2.1.332"),
    ],
)
@pytest.mark.parametrize("case", ["15-permission-stdio-deny", "16-permission-stdio-allow"])
def test_a_permission_request_names_its_call_and_a_denied_call_did_not_run(version: str, case: str) -> None:
    """Before 2.0.76 ``can_use_tool`` does not say which call it asks for, and no
    ``tool_result_meta`` says that a denied call never ran: the same facts, every version."""
    events = _events(ADAPTERS / "claude-stream-json" / "captures" / f"claude-code-{version}" / f"{case}.tap.jsonl")
    (request,) = _bodies(events, PermissionRequest)
    started = [b.call_id for b in _bodies(events, ToolCall) if b.phase == "started"]
    assert request.tool_call.call_id in started
    end = [b for b in _bodies(events, ToolCall) if b.call_id == request.tool_call.call_id][-1]
    if case.endswith("deny"):
        assert _bodies(events, CommandOutput) == []
        assert (end.phase, end.exit_code) == ("failed", None)
    else:
        assert (end.phase, end.exit_code) == ("completed", 0)  # rm -f printed nothing


def test_write_gives_a_file_diff() -> None:
    (diff,) = _bodies(_events(KIT / "31-write-file.jsonl"), FileDiff)
    assert diff.path == "/home/user/project/new.txt"
    assert diff.change_kind == "add"
    assert diff.diff.endswith("+line one\n+line two\n")


# --------------------------------------------------------------------------
# By hand: small native messages -> expected bodies


def _run(*lines: tuple[str, dict[str, Any]] | dict[str, Any]) -> list[_Core]:
    session = Session(ClaudeStreamJsonAdapter(), session_id="s", clock=fixed_clock)
    out: list[_Core] = []
    for line in lines:
        from_, msg = line if isinstance(line, tuple) else ("agent", line)
        out.extend(session.feed(msgspec.json.encode(msg), from_))  # type: ignore[arg-type]
    out.extend(session.close())
    return out


def _b(out: list[_Core]) -> list[Body]:
    return [e.event.body for e in out if isinstance(e, SessionEvent)]


INIT = {"type": "system", "subtype": "init", "session_id": "n1", "cwd": "/w", "model": "m", "tools": ["Bash"]}
RESULT = {"type": "result", "subtype": "success", "is_error": False, "session_id": "n1", "result": "ok"}


def _assistant(block: dict[str, Any], msg_id: str = "msg_1", parent: str | None = None) -> dict[str, Any]:
    return {
        "type": "assistant",
        "message": {"id": msg_id, "content": [block]},
        "parent_tool_use_id": parent,
        "session_id": "n1",
    }


def _tool_result(call_id: str, content: Any, result: Any, is_error: bool = False) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error}
    return {
        "type": "user",
        "message": {"role": "user", "content": [block]},
        "session_id": "n1",
        "tool_use_result": result,
    }


def test_client_prompt_starts_a_turn_with_the_users_words() -> None:
    out = _run(("client", {"type": "user", "message": {"role": "user", "content": "hi"}, "session_id": ""}))
    accepted = [e for e in out if isinstance(e, MessageAccepted)]
    bodies = _b(out)
    assert isinstance(bodies[0], TurnStart)
    assert bodies[1] == UserMessage(message_id=accepted[0].message_id, text="hi")


def test_permission_request_and_its_answer() -> None:
    ask = {
        "type": "control_request",
        "request_id": "r1",
        "request": {"subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": "rm x"}, "tool_use_id": "t1"},
    }
    answer = {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": "r1", "response": {"behavior": "deny", "message": "no"}},
    }
    bodies = _b(_run(INIT, ask, ("client", answer)))
    (req,) = [b for b in bodies if isinstance(b, PermissionRequest)]
    assert req.tool_call.call_id == "t1" and req.tool_call.category == "execute"
    assert req.detail is not None and req.detail.command == "rm x"
    (res,) = [b for b in bodies if isinstance(b, RequestResolved)]
    assert res.outcome == "answered"
    assert msgspec.json.decode(bytes(res.answer)) == {"behavior": "deny", "message": "no"}


def test_requests_without_a_call_id_are_tied_to_identical_parallel_calls_in_order() -> None:
    """2.0.0 and older ask ``can_use_tool`` without ``tool_use_id``: two open calls of the
    same command are asked about in the order they were made, so the first request is the
    first call's, the second the second's; a call of another command is never taken."""

    def use(call_id: str, command: str) -> dict[str, Any]:
        return {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": command}}

    def ask(request_id: str, command: str) -> dict[str, Any]:
        request = {"subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": command}}
        return {"type": "control_request", "request_id": request_id, "request": request}

    def answer(request_id: str, behavior: str) -> tuple[str, dict[str, Any]]:
        given = {"behavior": behavior, "message": "no"} if behavior == "deny" else {"behavior": behavior}
        response = {"subtype": "success", "request_id": request_id, "response": given}
        return ("client", {"type": "control_response", "response": response})

    parallel = {
        "type": "assistant",
        "message": {"id": "msg_1", "content": [use("t1", "ls"), use("t2", "rm x"), use("t3", "rm x")]},
        "parent_tool_use_id": None,
        "session_id": "n1",
    }
    bodies = _b(
        _run(
            INIT,
            parallel,
            ask("r1", "rm x"),
            answer("r1", "deny"),
            ask("r2", "rm x"),
            answer("r2", "allow"),
            _tool_result("t2", "no", "Error: no", is_error=True),
            _tool_result("t3", "removed", {"stdout": "removed", "stderr": "", "interrupted": False}),
            _tool_result("t1", "x", {"stdout": "x", "stderr": "", "interrupted": False}),
            RESULT,
        )
    )
    asked = {b.request_id: b.tool_call.call_id for b in bodies if isinstance(b, PermissionRequest)}
    assert asked == {"r1": "t2", "r2": "t3"}
    # the denied call never ran: no output; the allowed one printed
    assert [(b.call_id, b.delta) for b in bodies if isinstance(b, CommandOutput)] == [("t3", "removed"), ("t1", "x")]


def test_edit_todo_and_mcp_tools() -> None:
    edit_result = {
        "filePath": "/w/a.py",
        "structuredPatch": [{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1, "lines": ["-a", "+b"]}],
        "originalFile": "a\n",
    }
    todos = {"todos": [{"content": "x", "status": "in_progress", "activeForm": "Xing"}]}
    bodies = _b(
        _run(
            INIT,
            _assistant({"type": "tool_use", "id": "e1", "name": "Edit", "input": {"file_path": "/w/a.py"}}),
            _tool_result("e1", "ok", edit_result),
            _assistant({"type": "tool_use", "id": "p1", "name": "TodoWrite", "input": todos}, "msg_2"),
            _assistant({"type": "tool_use", "id": "m1", "name": "mcp__gh__search", "input": {"q": 1}}, "msg_3"),
            _tool_result("m1", [{"type": "text", "text": "found"}], [{"type": "text", "text": "found"}]),
            RESULT,
        )
    )
    (diff,) = [b for b in bodies if isinstance(b, FileDiff)]
    assert diff.diff == "--- a/w/a.py\n+++ b/w/a.py\n@@ -1,1 +1,1 @@\n-a\n+b\n" and diff.call_id == "e1"
    (plan,) = [b for b in bodies if isinstance(b, Plan)]
    assert plan.entries[0].content == "x" and plan.entries[0].status == "in_progress"
    mcp = [b for b in bodies if isinstance(b, McpTool)]
    assert [(m.server, m.tool, m.phase) for m in mcp] == [("gh", "search", "started"), ("gh", "search", "completed")]
    started = {b.call_id: b.category for b in bodies if isinstance(b, ToolCall) and b.phase == "started"}
    assert started == {"e1": "edit", "p1": "think", "m1": "mcp"}


def test_an_init_whose_lists_cannot_be_read_is_malformed_and_changes_nothing() -> None:
    bad_tools = {**INIT, "tools": None}
    bad_commands = {**INIT, "slash_commands": [1]}
    out = _run(INIT, bad_tools, bad_commands, RESULT, {**INIT, "tools": ["Bash", "Read"]}, RESULT)
    bodies = _b(out)
    errors = [b for b in bodies if isinstance(b, Error)]
    assert [e.error_type for e in errors] == ["malformed", "malformed"]
    assert "$.tools" in errors[0].message
    assert "$.slash_commands[0]" in errors[1].message
    # the bad inits neither opened a turn nor changed the tools: the next init's change is
    # told against the first init's
    assert len([b for b in bodies if isinstance(b, TurnStart)]) == 2
    changes = [a for e in out if isinstance(e, ContextUpdated) for a in e.applied]
    assert changes == [ToolChangeApplied(added=["Bash"]), ToolChangeApplied(added=["Read"])]


def test_system_lines_map_to_their_bodies() -> None:
    retry = {"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 3, "error_status": 529,
             "error": "overloaded", "retry_delay_ms": 500, "session_id": "n1"}  # fmt: skip
    compacting = {"type": "system", "subtype": "status", "status": "compacting", "session_id": "n1"}
    boundary = {"type": "system", "subtype": "compact_boundary", "session_id": "n1",
                "compact_metadata": {"trigger": "manual", "pre_tokens": 100}}  # fmt: skip
    hook = {"type": "system", "subtype": "hook_started", "hook_id": "h1", "hook_name": "SessionStart:startup",
            "hook_event": "SessionStart", "session_id": "n1"}  # fmt: skip
    hook_done = {**hook, "subtype": "hook_response", "outcome": "error"}
    bodies = _b(_run(INIT, retry, compacting, boundary, hook, hook_done, RESULT))
    (warn,) = [b for b in bodies if isinstance(b, WarningBody)]
    assert "529" in warn.message
    assert [(c.compaction_id, c.status) for c in bodies if isinstance(c, Compaction)] == [
        ("compaction:1", "in_progress"),
        ("compaction:1", "completed"),
    ]
    assert [(t.task_id, t.phase) for t in bodies if isinstance(t, Task)] == [("h1", "started"), ("h1", "failed")]


def test_a_retry_delay_in_fractional_milliseconds_is_a_warning() -> None:
    # Claude Code 2.1.142 writes the delay it draws as a float (2.1.332: an int)
    retry = {"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 2,
             "retry_delay_ms": 596.0304919459031, "error_status": 529, "error": "rate_limit",
             "session_id": "n1"}  # fmt: skip
    bodies = _b(_run(INIT, retry, RESULT))
    assert [b for b in bodies if isinstance(b, Error)] == []
    (warn,) = [b for b in bodies if isinstance(b, WarningBody)]
    assert (warn.message, warn.source) == ("API error 529 (rate_limit); retry 1/2 in 596 ms", "api_retry")


def test_clear_reports_a_conversation_reset_with_the_new_session_id() -> None:
    reset = {"type": "conversation_reset", "new_conversation_id": "c2", "session_id": "n1"}
    result = {**RESULT, "session_id": "n2"}
    bodies = _b(_run(INIT, reset, result))
    (r,) = [b for b in bodies if isinstance(b, ConversationReset)]
    assert (r.agent_session_id, r.previous_agent_session_id, r.trigger) == ("n2", "n1", "clear")


def test_max_turns_and_api_errors_complete_the_message_with_an_error() -> None:
    max_turns = {**RESULT, "subtype": "error_max_turns", "is_error": True, "errors": ["Reached maximum"]}
    del max_turns["result"]
    (done,) = [e for e in _run(INIT, max_turns) if isinstance(e, MessageCompleted)]
    assert done.result.stop_reason == "max_turns"
    assert done.result.error is not None and done.result.error.message == "Reached maximum"


@pytest.mark.parametrize("terminal_reason", ["api_error", "completed"])
def test_an_api_error_result_names_the_api_error_whatever_the_terminal_reason(terminal_reason: str) -> None:
    # the same HTTP 400: 2.1.332 ends it with terminal_reason "api_error", 2.1.142 with
    # "completed" (only api_error_status says the call failed)
    failed = {**RESULT, "is_error": True, "api_error_status": 400, "terminal_reason": terminal_reason,
              "result": "API Error: 400 fake server: scripted error", "stop_reason": "stop_sequence"}  # fmt: skip
    (done,) = [e for e in _run(INIT, failed) if isinstance(e, MessageCompleted)]
    assert done.result.stop_reason == "error"
    assert done.result.error is not None
    assert (done.result.error.message, done.result.error.error_type) == (
        "API Error: 400 fake server: scripted error",
        "api_error",
    )


def test_a_cut_off_stream_reports_the_open_call_and_the_cut() -> None:
    out = _run(INIT, _assistant({"type": "tool_use", "id": "t9", "name": "Bash", "input": {"command": "ls"}}))
    bodies = _b(out)
    assert any(isinstance(b, WarningBody) and "t9" in b.message for b in bodies)
    assert any(isinstance(b, Error) and b.error_type == "cut-off" for b in bodies)
    assert isinstance(bodies[-1], TurnComplete) and bodies[-1].reason == "interrupt"


def test_a_foreground_agents_summary_that_only_repeats_its_description_is_not_its_result() -> None:
    # Claude Code 2.1.142: the task_notification of a foreground agent says the task's
    # description as its summary; the agent's answer is in the Agent call's result
    task = {"description": "Say hi", "prompt": "SUBTASK: say hi", "subagent_type": "general-purpose"}
    spawn = {"type": "tool_use", "id": "t1", "name": "Agent", "input": task}
    started = {"type": "system", "subtype": "task_started", "task_id": "a1", "tool_use_id": "t1",
               "description": "Say hi", "task_type": "local_agent", "session_id": "n1"}  # fmt: skip
    notified = {"type": "system", "subtype": "task_notification", "task_id": "a1", "tool_use_id": "t1",
                "status": "completed", "summary": "Say hi", "usage": {"total_tokens": 121},
                "session_id": "n1"}  # fmt: skip
    answer = [{"type": "text", "text": "hi"}]
    result = _tool_result("t1", answer, {"status": "completed", "agentId": "a1", "content": answer, "totalTokens": 144})
    subs = [b for b in _b(_run(INIT, _assistant(spawn), started, notified, result, RESULT)) if isinstance(b, Subagent)]
    assert [(s.phase, s.result) for s in subs if s.phase != "progress"] == [("started", None), ("completed", "hi")]
    # a summary that is the agent's report still ends it, with that report (2.1.332)
    reported = {**notified, "summary": "hi from the report"}
    subs = [b for b in _b(_run(INIT, _assistant(spawn), started, reported, result, RESULT)) if isinstance(b, Subagent)]
    assert [(s.phase, s.result) for s in subs if s.phase != "progress"] == [
        ("started", None),
        ("completed", "hi from the report"),
    ]


def test_a_sub_agents_call_denied_by_a_rule_is_named_as_it_started() -> None:
    # the permission_denied line names neither the sub-agent nor the title: the call's start did
    use = {"type": "tool_use", "id": "t5", "name": "Bash", "input": {"command": "touch x"}}
    denied = {"type": "system", "subtype": "permission_denied", "tool_name": "Bash", "tool_use_id": "t5",
              "message": "touch needs approval", "session_id": "n1"}  # fmt: skip
    out = _run(INIT, _assistant(use, parent="agent_1"), denied)
    (auto,) = [e.event for e in out if isinstance(e, SessionEvent) and isinstance(e.event.body, PermissionAuto)]
    assert isinstance(auto.body, PermissionAuto)
    assert auto.subagent_id == "agent_1"
    assert (auto.body.tool_call.title, auto.body.option_id) == ("touch x", "deny")


def test_a_server_tool_and_its_result_in_one_line() -> None:
    # both blocks in one assistant line: the result's call is not yet in the core's table
    line = {
        "type": "assistant",
        "message": {
            "id": "msg_1",
            "content": [
                {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "q"}},
                {"type": "web_search_tool_result", "tool_use_id": "srv_1", "content": [{"title": "hit"}]},
            ],
        },
        "session_id": "n1",
    }
    bodies = _b(_run(INIT, line, RESULT))
    search = [(b.phase, b.query) for b in bodies if isinstance(b, WebSearch)]
    assert search == [("started", "q"), ("completed", None)]
    ended = [(b.tool, b.category) for b in bodies if isinstance(b, ToolCall) and b.phase == "completed"]
    assert ended == [("web_search", "web-search")]


def test_a_notice_of_the_cli_is_a_warning_with_its_words() -> None:
    """``system/informational`` (2.1.290: the auto-mode billing notice, ``level: warning``) is
    the CLI's own notice: a ``warning`` from the agent, as claude-agent-acp gives the same
    notice, not an untranslated line."""
    notice = {
        "type": "system",
        "subtype": "informational",
        "content": "We're changing auto mode.",
        "level": "warning",
        "isMeta": False,
        "uuid": "u1",
        "session_id": "n1",
    }
    warnings = [b for b in _b(_run(INIT, notice, RESULT)) if isinstance(b, WarningBody)]
    assert [(w.message, w.source) for w in warnings] == [("We're changing auto mode.", "agent")]


def test_the_2_1_290_notice_is_a_warning_in_every_run_that_printed_it() -> None:
    kit = ADAPTERS / "claude-stream-json" / "captures" / "claude-code-2.1.290"
    seen = 0
    for capture in sorted(kit.glob("*.jsonl")):
        printed = [d["content"] for _, d in _lines(capture) if d.get("subtype") == "informational"]
        warned = [w.message for w in _bodies(_events(capture), WarningBody) if w.source == "agent"]
        assert warned == printed, capture.name
        seen += len(printed)
    assert seen > 0

"""The acp adapter: its promises over every capture, and precise mappings on small inline traffic."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import msgspec
import pytest

from helpers import ADAPTERS, convert_capture, fixed_clock, session_captures
from normalize import (
    AssistantDelta,
    AssistantMessage,
    CaptureParser,
    CommandOutput,
    Error,
    FileDiff,
    Message,
    MessageCompleted,
    ModeUpdate,
    PermissionRequest,
    Problem,
    Reasoning,
    ReasoningDelta,
    RequestResolved,
    Session,
    SessionCreated,
    SessionEvent,
    SessionResumed,
    SessionUpdate,
    ToolCall,
    TurnComplete,
    TurnStart,
    Usage,
    UserMessage,
    detect_protocol,
)
from normalize import (
    Warning as WarningBody,
)
from normalize._model import _Core
from normalize.adapters import acp
from normalize.adapters.acp import AcpAdapter

PROTOCOL = "acp"
CAPTURES = [c for c in session_captures() if c.relative_to(ADAPTERS).parts[0] == PROTOCOL]
Wire = dict[str, Any]

#: session/update fields that carry nothing the model holds (vendor data, a timestamp, the key).
NO_MEANING = {"sessionUpdate", "toolCallId", "_meta", "updatedAt"}
DOCUMENTED = {
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "available_commands_update",
    "current_mode_update",
    "config_option_update",
    "session_info_update",
    "usage_update",
}


def _id(p: Path) -> str:
    return f"{p.parent.name}/{p.name}"


def wire(capture: Path) -> list[tuple[str, Wire]]:
    msgs = [r for r in CaptureParser().feed(capture.read_bytes() + b"\n") if isinstance(r, Message)]
    return [(m.from_, json.loads(m.data)) for m in msgs]


def _injected(update: Wire) -> bool:
    """A user chunk that is the agent's own context, not the user's words (Gemini CLI 0.45.2
    replays its ``<session_context>`` on load)."""
    text = (update.get("content") or {}).get("text")
    return update.get("sessionUpdate") == "user_message_chunk" and str(text).startswith("<session_context>")


def _loaded(capture: Path) -> bool:
    """Whether the capture has a ``session/load`` the agent answered with a result after
    replaying the user's words (Gemini CLI 0.61.0, 0.56.0 and 0.51.0 answered their load with an
    error; 0.45.2 replayed only its injected ``<session_context>``: no history there)."""
    lines = wire(capture)
    ids = {m["id"] for d, m in lines if d == "client" and m.get("method") == "session/load"}
    users = [
        m
        for d, m in lines
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "user_message_chunk"
        and not _injected(m["params"]["update"])
    ]
    return bool(users) and any(d == "agent" and m.get("id") in ids and "result" in m for d, m in lines)


LOADS = [c for c in CAPTURES if "load" in c.name and _loaded(c)]


def events_of(capture: Path) -> list[_Core]:
    return convert_capture(capture)


def session_events(events: list[_Core]) -> list[SessionEvent]:
    return [e for e in events if isinstance(e, SessionEvent)]


def payload(ev: SessionEvent) -> Wire | None:
    raw = ev.event.native.payload
    return json.loads(bytes(raw)) if raw is not None and not isinstance(raw, str) else None


def native_of(e: _Core) -> Wire | None:
    """The native message of a session.event or session.update (None when synthesized)."""
    if isinstance(e, SessionEvent):
        return payload(e)
    if isinstance(e, SessionUpdate) and e.update.payload is not None:
        return json.loads(bytes(e.update.payload))  # type: ignore[no-any-return]
    return None


def run(*lines: tuple[str, Wire]) -> list[_Core]:
    """Feed inline traffic, (direction, message) pairs, through a Session."""
    session = Session(AcpAdapter(), session_id="s-test", clock=fixed_clock)
    out: list[_Core] = []
    for from_, msg in lines:
        out += session.feed(json.dumps(msg).encode(), from_)  # type: ignore[arg-type]
    out += session.close()
    return out


def bodies(events: list[_Core]) -> list[Any]:
    return [e.event.body for e in session_events(events)]


def upd(update: Wire, sid: str = "S") -> tuple[str, Wire]:
    return ("agent", {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}})


def req(from_: str, rid: int, method: str, params: Wire) -> tuple[str, Wire]:
    return (from_, {"jsonrpc": "2.0", "id": rid, "method": method, "params": params})


def res(from_: str, rid: int, result: Any) -> tuple[str, Wire]:
    return (from_, {"jsonrpc": "2.0", "id": rid, "result": result})


def prompt(rid: int, text: str = "hi") -> tuple[str, Wire]:
    return req("client", rid, "session/prompt", {"sessionId": "S", "prompt": [{"type": "text", "text": text}]})


def chunk(kind: str, text: str, mid: str | None = None) -> tuple[str, Wire]:
    u: Wire = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    if mid is not None:
        u["messageId"] = mid
    return upd(u)


# --------------------------------------------------------------------------
# Promises over every capture


def test_every_capture_set_is_here() -> None:
    assert {c.parent.name for c in CAPTURES} == {
        "acp-handwritten",
        "claude-agent-acp-0.55.0",
        "claude-agent-acp-0.80.0",
        "claude-agent-acp-0.101.0",
        "claude-code-acp-0.4.5",
        "claude-code-acp-0.16.2",
        "codex-acp-0.7.4",
        "codex-acp-1.0.0",
        "codex-acp-1.3.0",
        "codex-acp-1.6.2",
        "codex-acp-2.1.1",
        "codex-acp-2.6.0",
        "gemini-cli-0.25.0",
        "gemini-cli-0.31.0",
        "gemini-cli-0.41.2",
        "gemini-cli-0.45.2",
        "gemini-cli-0.51.0",
        "gemini-cli-0.56.0",
        "gemini-cli-0.61.0",
    }
    assert len(CAPTURES) == 157


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_detected_as_acp(capture: Path) -> None:
    sample = [(json.dumps(m).encode(), d) for d, m in wire(capture)[:20]]
    assert detect_protocol(sample) == PROTOCOL  # type: ignore[arg-type]


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_no_error_event_unless_the_traffic_carries_one(capture: Path) -> None:
    for ev in session_events(events_of(capture)):
        if isinstance(ev.event.body, Error):
            p = payload(ev)
            # a JSON-RPC error response, or codex-acp's systemError thread status (a failed model call)
            system_error = '"threadStatus":{"type":"systemError"}' in json.dumps(p, separators=(",", ":"))
            assert p is not None and ("error" in p or system_error), ev.event.body


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_no_session_update_for_a_documented_variant_with_meaning(capture: Path) -> None:
    for ev in events_of(capture):
        if not isinstance(ev, SessionUpdate) or ev.update.payload is None:
            continue
        msg = json.loads(bytes(ev.update.payload))
        if msg.get("method") != "session/update":
            continue
        update = msg["params"]["update"]
        if update["sessionUpdate"] not in DOCUMENTED or _injected(update):
            continue  # the injected context is kept on purpose (no user-message)
        meaningful = {k for k, v in update.items() if v is not None} - NO_MEANING
        assert not meaningful, f"untranslated {update['sessionUpdate']} with {sorted(meaningful)}"


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_every_tool_call_has_one_terminal_phase_or_is_reported_open(capture: Path) -> None:
    events = events_of(capture)
    phases: dict[str, list[str]] = defaultdict(list)
    for body in bodies(events):
        if isinstance(body, ToolCall):
            phases[body.call_id].append(body.phase)
    warned = {b.message for b in bodies(events) if isinstance(b, WarningBody) and b.source == "normalize"}
    for call_id, seen in phases.items():
        assert seen[0] == "started", (call_id, seen)
        terminal = [p for p in seen if p in ("completed", "failed")]
        if not terminal:
            assert any(call_id in w for w in warned), f"{call_id} never ended and was not reported"
        else:
            assert len(terminal) == 1, (call_id, seen)


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_one_turn_complete_per_prompt_response(capture: Path) -> None:
    lines = wire(capture)
    prompts = {m["id"] for d, m in lines if d == "client" and m.get("method") == "session/prompt"}
    answers = [m for d, m in lines if d == "agent" and "method" not in m and m.get("id") in prompts]
    events = events_of(capture)
    completes = [
        ev
        for ev in session_events(events)
        if isinstance(ev.event.body, TurnComplete)
        and ev.event.native.method == "session/prompt"
        and ev.event.origin == "live"  # not the end of a replayed turn the prompt closes (Gemini CLI 0.31)
    ]
    assert len(completes) == len(answers) > 0
    for ev in completes:
        p = payload(ev)
        assert p is not None and p["id"] in prompts
    completed = [e for e in events if isinstance(e, MessageCompleted)]
    assert [e.message_id for e in completed] == [f"prompt-{m['id']}" for m in answers]
    failed = _prompts_failed_by_a_system_error(lines)
    for answer, done, turn in zip(answers, completed, completes, strict=True):
        native = answer.get("result", {}).get("stopReason") if "result" in answer else "error"
        expected = {"max_turn_requests": "max_turns"}.get(native, native)
        if answer["id"] in failed and expected == "end_turn":
            expected = "error"  # codex-acp answers a failed model call end_turn, after a systemError
            assert done.result.error is not None and done.result.error.error_type == "systemError"
        assert done.result.stop_reason == expected
        body = turn.event.body
        assert isinstance(body, TurnComplete)
        assert body.reason == ("interrupt" if expected in ("cancelled", "error") else "ok")


def _prompts_failed_by_a_system_error(lines: list[tuple[str, Wire]]) -> set[object]:
    """The prompts (ids) in whose turn codex-acp said ``threadStatus: systemError``: the
    turn is the oldest prompt not yet answered."""
    open_prompts: list[object] = []
    failed: set[object] = set()
    for d, m in lines:
        if d == "client" and m.get("method") == "session/prompt":
            open_prompts.append(m["id"])
        elif d == "agent" and "method" not in m and m.get("id") in open_prompts:
            open_prompts.remove(m["id"])
        elif m.get("method") == "session/update" and open_prompts:
            update = m.get("params", {}).get("update", {})
            status = ((update.get("_meta") or {}).get("codex") or {}).get("threadStatus") or {}
            if update.get("sessionUpdate") == "session_info_update" and status.get("type") == "systemError":
                failed.add(open_prompts[0])
    return failed


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_streamed_text_is_assembled_once(capture: Path) -> None:
    deltas: dict[tuple[str, str], str] = defaultdict(str)
    whole: Counter[tuple[str, str]] = Counter()
    texts: dict[tuple[str, str], str] = {}
    for body in bodies(events_of(capture)):
        if isinstance(body, AssistantDelta):
            deltas["m", body.message_id] += body.text
        elif isinstance(body, ReasoningDelta):
            deltas["r", body.reasoning_id] += body.text
        elif isinstance(body, AssistantMessage):
            whole["m", body.message_id] += 1
            texts["m", body.message_id] = body.text
        elif isinstance(body, Reasoning):
            whole["r", body.reasoning_id] += 1
            texts["r", body.reasoning_id] = body.text or ""
    assert set(whole) == set(deltas)
    assert all(n == 1 for n in whole.values()), whole
    assert texts == dict(deltas)


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_every_permission_request_is_resolved_with_the_option_kind(capture: Path) -> None:
    asked: dict[str, dict[str, str]] = {}
    for body in bodies(events_of(capture)):
        if isinstance(body, PermissionRequest):
            asked[body.request_id] = {o.id: o.kind for o in body.options}
        elif isinstance(body, RequestResolved):
            kinds = asked.pop(body.request_id)
            if body.outcome == "answered":
                assert body.answer["kind"] == kinds[body.answer["optionId"]]
    assert asked == {}


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_a_change_to_a_file_is_reported_once(capture: Path) -> None:
    """An agent that repeats a call's diff, or writes it through the client, reports no new
    change: the same diff of the same call is one ``file-diff``."""
    diffs = Counter((b.call_id, b.path, b.diff) for b in bodies(events_of(capture)) if isinstance(b, FileDiff))
    assert [d for d, n in diffs.items() if n > 1] == []


@pytest.mark.parametrize("capture", LOADS, ids=_id)
def test_load_history_is_replay_and_the_prompt_after_it_is_live(capture: Path) -> None:
    lines = wire(capture)
    load_id = next(m["id"] for d, m in lines if d == "client" and m.get("method") == "session/load")
    events = events_of(capture)
    assert sum(isinstance(e, SessionResumed) for e in events) == 1
    inside = False
    replayed = 0
    for e in events:
        p = native_of(e)
        if p is not None and p.get("method") == "session/load":
            inside = True
        if inside and isinstance(e, SessionEvent) and p is not None and p.get("method") == "session/update":
            if isinstance(e.event.body, WarningBody):
                assert e.event.origin == "live"  # the agent's notice, not history (codex-acp 2.6.0)
            else:
                assert e.event.origin == "replay", e.event.body
                replayed += 1
        if p is not None and p.get("id") == load_id and "result" in p:
            inside = False
        if p is not None and p.get("method") == "session/prompt":
            break
    assert replayed > 0
    after = False
    for ev in session_events(events):
        p = payload(ev)
        after = after or (p is not None and p.get("method") == "session/prompt")
        if after:
            assert ev.event.origin == "live"
    assert after
    # the replayed conversation has turns of its own, each with the user's words
    replay_turns = {
        ev.event.turn_id for ev in session_events(events) if ev.event.origin == "replay" and ev.event.turn_id
    }
    users = {ev.event.turn_id for ev in session_events(events) if isinstance(ev.event.body, UserMessage)}
    assert len(replay_turns) == _replayed_user_messages(lines, load_id)
    assert replay_turns <= users


def _replayed_user_messages(lines: list[tuple[str, Wire]], load_id: Any) -> int:
    """The user messages a load replays: runs of ``user_message_chunk`` of one ``messageId``
    (without ids, codex-acp 1.0.0: a run of user chunks between other updates)."""
    count, inside, last = 0, False, ("", None)
    for d, m in lines:
        if d == "client" and m.get("method") == "session/load":
            inside = True
        elif inside and d == "agent" and m.get("id") == load_id:
            break
        elif inside and m.get("method") == "session/update":
            u = m["params"]["update"]
            key = (u["sessionUpdate"], u.get("messageId"))
            if key[0] == "user_message_chunk" and key != last:
                count += 1
            last = key
    return count


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_session_record_names_the_native_session_and_agent(capture: Path) -> None:
    lines = wire(capture)
    native = {
        m["result"]["sessionId"]
        for d, m in lines
        if d == "agent" and isinstance(m.get("result"), dict) and "sessionId" in m["result"]
    }
    native |= {m["params"]["sessionId"] for d, m in lines if m.get("method") in ("session/load", "session/resume")}
    info = next(
        (
            m["result"]["agentInfo"]
            for d, m in lines
            if d == "agent" and m.get("id") == 0 and "result" in m and "agentInfo" in m["result"]
        ),
        None,
    )
    records = [
        e.record
        for e in events_of(capture)
        if isinstance(e, SessionCreated | SessionResumed) and e.record.native_session_id
    ]
    assert {r.native_session_id for r in records} == native
    bridged = {
        "@agentclientprotocol/claude-agent-acp": "claude-code",
        "@zed-industries/claude-code-acp": "claude-code",  # 0.16.2: the same bridge under its earlier name
        "@agentclientprotocol/codex-acp": "codex",
        "codex-acp": "codex",  # @zed-industries/codex-acp 0.x names itself so
    }
    auth = next((m["result"].get("authMethods") for d, m in lines if d == "agent" and m.get("id") == 0), None)
    if info is None:
        # claude-code-acp 0.4.5 sends no agentInfo: Claude Code's login names the agent, nothing the bridge
        claude = any(a.get("id") == "claude-login" for a in auth or ())
        agent = "claude-code" if claude else "unknown"
        assert all(r.agent == agent and r.via is None and r.agent_version is None for r in records)
    elif info["name"] in bridged:  # a bridge: the agent is named as over its own protocol, the package kept as via
        assert all(r.agent == bridged[info["name"]] and r.agent_version is None for r in records)
        assert all(r.via == info["name"] and r.via_version == info["version"] for r in records)
    else:
        assert all(r.agent == info["name"] and r.agent_version == info["version"] and r.via is None for r in records)


def test_an_agent_without_agent_info_is_named_only_by_claude_code_s_login() -> None:
    """No agentInfo (claude-code-acp 0.4.5): ``authMethods`` offering ``claude-login`` name
    Claude Code; any other login, or none, names nobody (never a guess from a near match)."""

    def agent_of(result: dict[str, object]) -> set[str]:
        out = run(
            req("client", 0, "initialize", {"protocolVersion": 1}),
            res("agent", 0, {"protocolVersion": 1, **result}),
            req("client", 1, "session/new", {"cwd": "/p", "mcpServers": []}),
            res("agent", 1, {"sessionId": "S"}),
            prompt(2),
            res("agent", 2, {"stopReason": "end_turn"}),
        )
        return {e.event.agent for e in session_events(out)}

    login = {"id": "claude-login", "name": "Log in with Claude Code"}
    assert agent_of({"authMethods": [login]}) == {"claude-code"}
    assert agent_of({"authMethods": [{"id": "oauth-personal"}]}) == {"unknown"}
    assert agent_of({"authMethods": "claude-login"}) == {"unknown"}  # not a list of methods
    assert agent_of({}) == {"unknown"}
    # agentInfo, when sent, decides alone
    assert agent_of({"agentInfo": {"name": "other-agent", "version": "1"}, "authMethods": [login]}) == {"other-agent"}


def test_answers_to_initialize_of_the_same_length_each_name_their_own_agent() -> None:
    """The answers to ``initialize`` are kept decoded across sessions (the same bytes again
    are not decoded again): one that differs, even by a letter, is read for itself."""

    def agent_of(name: str, version: str) -> set[tuple[str, str | None]]:
        out = run(
            req("client", 0, "initialize", {"protocolVersion": 1}),
            res("agent", 0, {"protocolVersion": 1, "agentInfo": {"name": name, "version": version}}),
            req("client", 1, "session/new", {"cwd": "/p", "mcpServers": []}),
            res("agent", 1, {"sessionId": "S"}),
        )
        return {(r.record.agent, r.record.agent_version) for r in out if isinstance(r, SessionCreated)}

    for _ in range(2):
        assert agent_of("agent-a", "1.0.0") == {("agent-a", "1.0.0")}
        assert agent_of("agent-b", "1.0.0") == {("agent-b", "1.0.0")}
        assert agent_of("agent-b", "1.0.1") == {("agent-b", "1.0.1")}


# --------------------------------------------------------------------------
# Precise mappings on inline traffic


def test_ids_collide_across_directions_and_are_paired_by_direction() -> None:
    events = run(
        prompt(0),
        req(
            "agent",
            0,
            "session/request_permission",
            {
                "sessionId": "S",
                "toolCall": {"toolCallId": "t1", "title": "ls", "kind": "execute", "rawInput": {"command": "ls"}},
                "options": [
                    {"optionId": "y", "name": "Yes", "kind": "allow_once"},
                    {"optionId": "n", "name": "No", "kind": "reject_once"},
                ],
            },
        ),
        res("client", 0, {"outcome": {"outcome": "selected", "optionId": "n"}}),
        res("agent", 0, {"stopReason": "end_turn"}),
    )
    bs = bodies(events)
    call = next(b for b in bs if isinstance(b, ToolCall))
    assert (call.call_id, call.phase, call.category) == ("t1", "started", "execute")
    ask = next(b for b in bs if isinstance(b, PermissionRequest))
    assert ask.detail is not None and ask.detail.command == "ls"
    assert [o.kind for o in ask.options] == ["allow_once", "reject_once"]
    done = next(b for b in bs if isinstance(b, RequestResolved))
    assert done.answer == {"optionId": "n", "kind": "reject_once"}
    assert [b.reason for b in bs if isinstance(b, TurnComplete)] == ["ok"]


@pytest.mark.parametrize(
    ("native", "stop", "reason"),
    [
        ("end_turn", "end_turn", "ok"),
        ("max_tokens", "max_tokens", "ok"),
        ("max_turn_requests", "max_turns", "ok"),
        ("refusal", "refusal", "ok"),
        ("cancelled", "cancelled", "interrupt"),
    ],
)
def test_stop_reasons(native: str, stop: str, reason: str) -> None:
    events = run(prompt(1), res("agent", 1, {"stopReason": native}))
    (done,) = [e for e in events if isinstance(e, MessageCompleted)]
    assert done.result.stop_reason == stop
    (turn,) = [b for b in bodies(events) if isinstance(b, TurnComplete)]
    assert (turn.reason, turn.stop_reason) == (reason, native)


def test_a_prompt_error_fails_the_turn_unless_it_was_cancelled() -> None:
    err = {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {"code": -32603, "message": "Internal error", "data": {"message": "HTTP 529"}},
    }
    events = run(prompt(1), ("agent", err))
    errors = [b for b in bodies(events) if isinstance(b, Error)]
    assert [(e.message, e.error_type) for e in errors] == [("HTTP 529", "internal-error")]
    (done,) = [e for e in events if isinstance(e, MessageCompleted)]
    assert done.result.stop_reason == "error" and done.result.error is not None
    cancelled = run(
        prompt(1),
        ("client", {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "S"}}),
        ("agent", err),
    )
    assert not [b for b in bodies(cancelled) if isinstance(b, Error)]
    (done,) = [e for e in cancelled if isinstance(e, MessageCompleted)]
    assert done.result.stop_reason == "cancelled"
    assert [b.reason for b in bodies(cancelled) if isinstance(b, TurnComplete)] == ["interrupt"]


def test_the_sdk_error_details_are_the_message() -> None:
    """claude-code-acp and Gemini CLI answer ``-32603 "Internal error"`` with the reason in
    ``data.details`` ("Session not found" after a failed load): the reason is the message."""
    err = {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {"code": -32603, "message": "Internal error", "data": {"details": "Session not found"}},
    }
    errors = [b for b in bodies(run(prompt(1), ("agent", err))) if isinstance(b, Error)]
    assert [(e.message, e.error_type) for e in errors] == [("Session not found", "internal-error")]


def test_the_api_error_object_in_data_is_the_message() -> None:
    """Gemini CLI 0.25 answers a prompt whose model request failed ``-32603 "Internal error"``
    with the API's error object in ``data.error``: its message is the error's, as 0.31's
    ``code: 500`` answer gives it (not the generic "Internal error")."""
    capture = ADAPTERS / "acp/captures/gemini-cli-0.25.0/gemini-x-api-error.tap.jsonl"
    (error,) = [e.event.body for e in session_events(events_of(capture)) if isinstance(e.event.body, Error)]
    assert (error.message, error.error_type) == ("fake server: scripted error", "internal-error")
    # data.message / data.details still come first; a data.error without words is no message
    err = {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {"code": -32603, "message": "Internal error", "data": {"error": {"code": 500}}},
    }
    errors = [b for b in bodies(run(prompt(1), ("agent", err))) if isinstance(b, Error)]
    assert [(e.message, e.error_type) for e in errors] == [("Internal error", "internal-error")]


def _codex(name: str, version: str) -> tuple[str, Wire]:
    return res("agent", 0, {"protocolVersion": 1, "agentInfo": {"name": name, "version": version}})


@pytest.mark.parametrize(
    ("name", "version", "notice"),
    [
        ("codex-acp", "0.7.4", False),  # @zed-industries/codex-acp: no chunk has an id
        ("@agentclientprotocol/codex-acp", "1.0.0", False),  # the first of the new name, still none
        ("@agentclientprotocol/codex-acp", "1.1.0", True),  # model text has ids from here on
        ("@agentclientprotocol/codex-acp", "2.6.0", True),
    ],
)
def test_codex_text_without_message_id_is_a_notice_only_once_codex_ids_its_text(
    name: str, version: str, notice: bool
) -> None:
    """codex-acp before 1.1.0 sends the model's answer as chunks without ``messageId``: it is the
    assistant's message, not a run of warnings (it was read as notices, and the turn had no text)."""
    events = run(
        req("client", 0, "initialize", {"protocolVersion": 1}),
        _codex(name, version),
        prompt(1),
        chunk("agent_message_chunk", "Hello "),
        chunk("agent_message_chunk", "there."),
        res("agent", 1, {"stopReason": "end_turn"}),
    )
    bs = bodies(events)
    texts = [b.text for b in bs if isinstance(b, AssistantMessage)]
    warnings = [b.message for b in bs if isinstance(b, WarningBody)]
    (done,) = [e for e in events if isinstance(e, MessageCompleted)]
    if notice:
        assert (texts, warnings, done.result.text) == ([], ["Hello ", "there."], None)
    else:
        assert (texts, warnings, done.result.text) == (["Hello there."], [], "Hello there.")


def test_codex_s_retry_notice_in_meta_is_a_warning() -> None:
    """codex-acp (1.6.2) reports a model call it retries as a ``session_info_update`` carrying only
    ``_meta.codex.error`` ("Reconnecting... 1/1"): an agent notice, not a pass-through."""
    retry = {
        "message": "Reconnecting... 1/1",
        "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": None}},
        "additionalDetails": "We're currently experiencing high demand, which may cause temporary errors.",
        "willRetry": True,
    }
    events = run(
        prompt(1),
        upd({"sessionUpdate": "session_info_update", "_meta": {"codex": {"error": retry}}}),
        upd({"sessionUpdate": "session_info_update", "_meta": {"codex": {"threadStatus": {"type": "systemError"}}}}),
        res("agent", 1, {"stopReason": "end_turn", "usage": None}),
    )
    infos = [
        e
        for e in events
        if isinstance(e, SessionUpdate)
        and e.update.payload is not None
        and b"session_info_update" in bytes(e.update.payload)
    ]
    assert not infos
    evs = session_events(events)
    assert [(e.event.origin, e.event.body.message) for e in evs if isinstance(e.event.body, WarningBody)] == [
        ("live", "Reconnecting... 1/1")
    ]
    assert [b.error_type for b in bodies(events) if isinstance(b, Error)] == ["systemError"]


@pytest.mark.parametrize(
    ("agent", "title"),
    [
        ("@agentclientprotocol/codex-acp", "touch made.txt"),  # codex-acp 2.1.1 asks "Run command"
        ("other-agent", "Run command"),  # elsewhere the request's title renames the call (ACP's patch)
    ],
)
def test_codex_acp_s_permission_title_is_the_question_not_the_call_s(agent: str, title: str) -> None:
    """codex-acp 2.1.1 announces ``touch made.txt`` and asks permission for it titled "Run
    command": the call keeps its title (as over 1.6.2 and 2.6.0, which send the command), and so
    does the permission request."""
    call = {"toolCallId": "c", "kind": "execute", "rawInput": {"command": "touch made.txt"}}
    perm = {
        "sessionId": "S",
        "toolCall": {**call, "title": "Run command", "status": "pending"},
        "options": [{"optionId": "allow_once", "name": "Yes, proceed", "kind": "allow_once"}],
    }
    events = run(
        req("client", 0, "initialize", {"protocolVersion": 1}),
        res("agent", 0, {"protocolVersion": 1, "agentInfo": {"name": agent, "version": "2.1.1"}}),
        req("client", 1, "session/new", {"cwd": "/p", "mcpServers": []}),
        res("agent", 1, {"sessionId": "S"}),
        prompt(2),
        upd({**call, "sessionUpdate": "tool_call", "title": "touch made.txt", "status": "in_progress"}),
        req("agent", 0, "session/request_permission", perm),
        res("client", 0, {"outcome": {"outcome": "selected", "optionId": "allow_once"}}),
        upd({"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "completed"}),
        res("agent", 2, {"stopReason": "end_turn"}),
    )
    phases = [(b.phase, b.title) for b in bodies(events) if isinstance(b, ToolCall)]
    assert phases == [("started", "touch made.txt"), ("completed", title)]
    (request,) = [b for b in bodies(events) if isinstance(b, PermissionRequest)]
    assert request.tool_call.title == title


def test_a_cancelled_turn_fails_its_open_calls_once() -> None:
    events = run(
        prompt(1),
        upd({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "x", "kind": "read", "status": "pending"}),
        res("agent", 1, {"stopReason": "cancelled"}),
    )
    assert [b.phase for b in bodies(events) if isinstance(b, ToolCall)] == ["started", "failed"]
    assert not [b for b in bodies(events) if isinstance(b, WarningBody)]


def test_tool_call_update_null_means_unchanged_and_lists_replace() -> None:
    events = run(
        prompt(1),
        upd(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "t1",
                "title": "Read a",
                "kind": "read",
                "status": "pending",
                "locations": [{"path": "/a"}],
                "rawInput": {"path": "/a"},
            }
        ),
        upd(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "t1",
                "title": None,
                "kind": None,
                "locations": [{"path": "/b", "line": 3}],
            }
        ),
        upd({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed", "rawOutput": "ok"}),
        res("agent", 1, {"stopReason": "end_turn"}),
    )
    calls = [b for b in bodies(events) if isinstance(b, ToolCall)]
    assert [c.phase for c in calls] == ["started", "updated", "completed"]
    last = calls[-1]
    assert last.title == "Read a" and last.category == "read"
    assert [(loc.path, loc.line) for loc in last.locations or ()] == [("/b", 3)]
    assert json.loads(bytes(last.input)) == {"path": "/a"} and json.loads(bytes(last.output)) == "ok"


@pytest.mark.parametrize(
    ("kind", "category"),
    [
        ("read", "read"),
        ("edit", "edit"),
        ("delete", "delete"),
        ("move", "move"),
        ("search", "search"),
        ("execute", "execute"),
        ("think", "think"),
        ("fetch", "fetch"),
        ("switch_mode", "other"),
        ("other", "other"),
        ("something_new", "other"),
    ],
)
def test_kind_to_category(kind: str, category: str) -> None:
    events = run(
        upd({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "t", "kind": kind, "status": "completed"})
    )
    assert {b.category for b in bodies(events) if isinstance(b, ToolCall)} == {category}


def test_diff_content_gives_one_file_diff_per_change() -> None:
    diff = {"type": "diff", "path": "/p/a.txt", "oldText": "a\n", "newText": "b\n"}
    events = run(
        upd({"sessionUpdate": "tool_call", "toolCallId": "e", "title": "Edit", "kind": "edit", "content": [diff]}),
        upd({"sessionUpdate": "tool_call_update", "toolCallId": "e", "status": "completed", "content": [diff]}),
    )
    (fd,) = [b for b in bodies(events) if isinstance(b, FileDiff)]
    assert (fd.call_id, fd.path, fd.change_kind) == ("e", "/p/a.txt", "update")
    assert "-a\n+b\n" in fd.diff


def _edit_then_write(read: Wire, written: str) -> list[Any]:
    """claude-code-acp 0.16.2's Edit, as recorded: a diff of the changed text only, the file read
    and written through the client, then the completion repeating the diff."""
    diff = {"type": "diff", "path": "/p/a.txt", "oldText": "hello world", "newText": "hello, world"}
    call = {"toolCallId": "e", "_meta": {"claudeCode": {"toolName": "mcp__acp__Edit"}}}
    return bodies(
        run(
            prompt(9),
            upd({**call, "sessionUpdate": "tool_call", "title": "Edit", "kind": "edit", "content": [diff]}),
            req("agent", 0, "fs/read_text_file", {"sessionId": "S", "path": "/p/a.txt", **read}),
            res("client", 0, {"content": "hello world\nbye\n"}),
            req("agent", 1, "fs/write_text_file", {"sessionId": "S", "path": "/p/a.txt", "content": written}),
            res("client", 1, {}),
            upd({**call, "sessionUpdate": "tool_call_update", "status": "completed", "content": [diff]}),
            res("agent", 9, {"stopReason": "end_turn"}),
        )
    )


def test_the_write_of_an_edit_reported_as_its_changed_text_is_no_new_diff() -> None:
    out = _edit_then_write({}, "hello, world\nbye\n")
    (fd,) = [b for b in out if isinstance(b, FileDiff)]
    no_eol = "\\ No newline at end of file\n"
    assert fd.diff.endswith(f"@@ -1 +1 @@\n-hello world\n{no_eol}+hello, world\n{no_eol}")  # the call's own diff
    assert [b.phase for b in out if isinstance(b, ToolCall)] == ["started", "updated", "updated", "completed"]


def test_a_write_other_than_the_reported_edit_is_diffed_against_the_file_as_read() -> None:
    written = [b for b in _edit_then_write({}, "hello, world\nBYE\n") if isinstance(b, FileDiff)][1]
    assert (written.call_id, written.change_kind) == ("e", "update")
    assert written.diff.endswith("@@ -1,2 +1,2 @@\n-hello world\n-bye\n+hello, world\n+BYE\n")
    # a part of the file read is not the file: the write is diffed against the call's diff, as before
    part = [b for b in _edit_then_write({"line": 1, "limit": 1}, "hello, world\nBYE\n") if isinstance(b, FileDiff)]
    assert "-bye" not in part[1].diff


def test_a_diff_s_relative_path_is_the_session_directory_s_file_and_its_write_no_new_diff() -> None:
    """Gemini CLI 0.31's edit, as recorded: the diff names the file relative to the session's
    directory (``hello.txt``), the client then reads and writes it by its absolute path.  The
    diff is of ``<cwd>/hello.txt`` (headers ``a/...``, ``b/...``) and the write that applies it
    is no second diff (it read as the whole file written anew)."""
    diff = {"type": "diff", "path": "hello.txt", "oldText": "hello world\n", "newText": "hello, world\n"}
    file = "/home/user/project/hello.txt"
    edit = {"toolCallId": "e", "kind": "edit", "locations": [{"path": file}]}
    out = bodies(
        run(
            req("client", 1, "session/new", {"cwd": "/home/user/project", "mcpServers": []}),
            res("agent", 1, {"sessionId": "S"}),
            prompt(2),
            upd({**edit, "sessionUpdate": "tool_call", "title": "hello.txt", "content": [diff]}),
            req("agent", 0, "fs/read_text_file", {"sessionId": "S", "path": file}),
            res("client", 0, {"content": "hello world\n"}),
            req("agent", 1, "fs/write_text_file", {"sessionId": "S", "path": file, "content": "hello, world\n"}),
            res("client", 1, {}),
            upd({"sessionUpdate": "tool_call_update", "toolCallId": "e", "status": "completed", "content": [diff]}),
            res("agent", 2, {"stopReason": "end_turn"}),
        )
    )
    (fd,) = [b for b in out if isinstance(b, FileDiff)]
    assert (fd.call_id, fd.path, fd.change_kind) == ("e", file, "update")
    assert fd.diff.startswith("--- a/home/user/project/hello.txt\n+++ b/home/user/project/hello.txt\n")
    # without a session directory the path stays as sent, its headers still a/ and b/
    (alone,) = [
        b
        for b in bodies(run(upd({**edit, "sessionUpdate": "tool_call", "content": [diff]})))
        if isinstance(b, FileDiff)
    ]
    assert (alone.path, alone.diff.splitlines()[:2]) == ("hello.txt", ["--- a/hello.txt", "+++ b/hello.txt"])


def test_claude_code_acp_s_copies_of_claude_code_tools_are_named_as_claude_code_s() -> None:
    """claude-code-acp 0.16.2 runs Claude Code's Bash, Read, Edit... as its own MCP tools
    ``mcp__acp__Bash``...: the tool is named ``Bash`` as over claude-agent-acp 0.101.0; another
    MCP server's tools keep their names."""

    def tool_of(name: str) -> set[str]:
        call = {"toolCallId": "c", "_meta": {"claudeCode": {"toolName": name}}}
        perm = {"sessionId": "S", "toolCall": {"toolCallId": "c"}, "options": []}
        out = run(
            prompt(3),
            upd({**call, "sessionUpdate": "tool_call", "title": "Terminal", "kind": "execute"}),
            req("agent", 0, "session/request_permission", perm),
            upd({**call, "sessionUpdate": "tool_call_update", "status": "completed"}),
            res("agent", 3, {"stopReason": "end_turn"}),
        )
        tools = {b.tool for b in bodies(out) if isinstance(b, ToolCall)}
        return tools | {b.tool_call.tool for b in bodies(out) if isinstance(b, PermissionRequest)}

    for name in ("Read", "Write", "Edit", "Bash", "BashOutput", "KillShell"):
        assert tool_of(f"mcp__acp__{name}") == {name}
    assert tool_of("Bash") == {"Bash"}
    assert tool_of("mcp__acp__Other") == {"mcp__acp__Other"}
    assert tool_of("mcp__github__Bash") == {"mcp__github__Bash"}


def test_client_terminal_output_snapshots_become_deltas_on_the_linked_call() -> None:
    term = {"sessionId": "S", "terminalId": "T1"}
    events = run(
        prompt(5),
        upd({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "make", "kind": "execute"}),
        req("agent", 0, "terminal/create", {"sessionId": "S", "command": "make"}),
        res("client", 0, {"terminalId": "T1"}),
        upd(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "c",
                "status": "in_progress",
                "content": [{"type": "terminal", "terminalId": "T1"}],
            }
        ),
        req("agent", 1, "terminal/output", term),
        res("client", 1, {"output": "one\n", "truncated": False}),
        req("agent", 2, "terminal/output", term),
        res("client", 2, {"output": "one\ntwo\n", "truncated": False, "exitStatus": {"exitCode": 2, "signal": None}}),
        upd({"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "failed"}),
        res("agent", 5, {"stopReason": "end_turn"}),
    )
    outs = [b for b in bodies(events) if isinstance(b, CommandOutput)]
    assert [(o.call_id, o.delta) for o in outs] == [("c", "one\n"), ("c", "two\n")]
    final = [b for b in bodies(events) if isinstance(b, ToolCall)][-1]
    assert (final.phase, final.exit_code) == ("failed", 2)


@pytest.mark.parametrize("first", [True, False], ids=["in-the-first-message", "later"])
def test_terminals_past_the_bound_are_forgotten_with_a_warning(first: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # the tables of terminals are made at the first terminal: their evictions are reported
    # like those of the tables made with the adapter
    monkeypatch.setattr(acp, "OPEN_CALLS", 2)
    lines = [] if first else [prompt(5)]
    for n in range(4):
        terminal = [{"type": "terminal", "terminalId": f"T{n}"}]
        lines.append(upd({"sessionUpdate": "tool_call", "toolCallId": f"c{n}", "kind": "execute", "content": terminal}))
    warned = [b.message for b in bodies(run(*lines)) if isinstance(b, WarningBody) and "forgotten" in b.message]
    assert warned == [
        "terminal T0 forgotten: more than 2 open at once; a later message about it is treated as unknown",
        "terminal T1 forgotten: more than 2 open at once; a later message about it is treated as unknown",
    ]


@pytest.mark.parametrize("first", [True, False], ids=["in-the-first-message", "later"])
def test_requests_past_the_bound_are_forgotten_with_a_warning(first: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # the table of requests is made at the first request and given back once all are
    # answered: a table made again later reports its evictions too
    monkeypatch.setattr(acp, "PENDING_REQUESTS", 2)
    lines = [] if first else [req("agent", 90, "fs/read_text_file", {"sessionId": "s1", "path": "/a"})]
    lines += [] if first else [res("client", 90, {"content": "a"})]  # answered: the table goes
    for n in range(4):
        lines.append(req("agent", n, "fs/read_text_file", {"sessionId": "s1", "path": f"/f{n}"}))
    warned = [b.message for b in bodies(run(*lines)) if isinstance(b, WarningBody) and "forgotten" in b.message]
    assert warned == [
        "request ('agent', 0) forgotten: more than 2 open at once; a later message about it is treated as unknown",
        "request ('agent', 1) forgotten: more than 2 open at once; a later message about it is treated as unknown",
    ]


def test_agent_owned_terminal_output_in_meta() -> None:
    meta = {
        "terminal_output_delta": {"terminal_id": "c", "data": "hi\n"},
        "terminal_exit": {"terminal_id": "c", "exit_code": 0, "signal": None},
    }
    events = run(
        upd(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "c",
                "title": "echo hi",
                "kind": "execute",
                "status": "in_progress",
                "content": [{"type": "terminal", "terminalId": "c"}],
            }
        ),
        upd({"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "completed", "_meta": meta}),
    )
    bs = [b for b in bodies(events) if isinstance(b, CommandOutput | ToolCall)]
    assert [type(b).__name__ for b in bs] == ["ToolCall", "CommandOutput", "ToolCall"]
    assert isinstance(bs[2], ToolCall) and (bs[2].phase, bs[2].exit_code) == ("completed", 0)


def test_overlapping_prompts_queue_behind_the_oldest() -> None:
    events = run(
        prompt(1, "first"),
        prompt(2, "second"),
        chunk("agent_message_chunk", "to the first", "m1"),
        res("agent", 1, {"stopReason": "end_turn"}),
        chunk("agent_message_chunk", "to the second", "m2"),
        res("agent", 2, {"stopReason": "end_turn"}),
    )
    per_turn: dict[str | None, list[str]] = defaultdict(list)
    for ev in session_events(events):
        b = ev.event.body
        if isinstance(b, UserMessage | AssistantMessage):
            per_turn[ev.event.turn_id].append(b.text)
    assert dict(per_turn) == {"turn:1": ["first", "to the first"], "turn:2": ["second", "to the second"]}
    queued = [b.queued for b in bodies(events) if isinstance(b, UserMessage)]
    assert queued == [None, True]


def test_messages_without_ids_end_at_a_change_of_variant() -> None:
    events = run(
        prompt(1),
        chunk("agent_message_chunk", "a"),
        chunk("agent_message_chunk", "b"),
        chunk("agent_thought_chunk", "think"),
        chunk("agent_message_chunk", "c"),
        res("agent", 1, {"stopReason": "end_turn"}),
    )
    assert [b.text for b in bodies(events) if isinstance(b, AssistantMessage)] == ["ab", "c"]
    assert [b.text for b in bodies(events) if isinstance(b, Reasoning)] == ["think"]
    (done,) = [e for e in events if isinstance(e, MessageCompleted)]
    assert done.result.text == "c"


def test_replayed_user_chunks_start_turns_and_the_load_response_ends_the_last() -> None:
    events = run(
        req("client", 1, "session/load", {"sessionId": "S", "cwd": "/w", "mcpServers": []}),
        chunk("user_message_chunk", "q1"),
        chunk("agent_message_chunk", "a1"),
        chunk("user_message_chunk", "q2"),
        chunk("user_message_chunk", " more"),
        chunk("agent_message_chunk", "a2"),
        res("agent", 1, {"modes": {"currentModeId": "default", "availableModes": []}}),
        prompt(2, "live"),
        res("agent", 2, {"stopReason": "end_turn"}),
    )
    evs = session_events(events)
    turns = [(ev.event.turn_id, ev.event.origin) for ev in evs if isinstance(ev.event.body, TurnStart)]
    assert turns == [("turn:1", "replay"), ("turn:2", "replay"), ("turn:3", "live")]
    users = [(ev.event.turn_id, b.message_id, b.text) for ev in evs if isinstance(b := ev.event.body, UserMessage)]
    assert [u[0] for u in users] == ["turn:1", "turn:2", "turn:2", "turn:3"]
    assert users[1][1] == users[2][1]  # one message in two chunks keeps one id
    ends = [ev.event.origin for ev in evs if isinstance(ev.event.body, TurnComplete)]
    assert ends == ["replay", "replay", "live"]
    assert [b.mode_id for b in bodies(events) if isinstance(b, ModeUpdate)] == ["default"]
    (resumed,) = [e for e in events if isinstance(e, SessionResumed)]
    assert (resumed.record.native_session_id, resumed.record.cwd) == ("S", "/w")


def test_history_sent_after_the_load_response_ends_the_replayed_turn() -> None:
    """Gemini CLI 0.31 sends its history unawaited: the load is answered between a replayed
    prompt and its answer.  The answer is still the replayed turn's (it read as a live message
    outside any turn); that turn ends at the client's next request, or at the end."""
    load = req("client", 1, "session/load", {"sessionId": "S", "cwd": "/w", "mcpServers": []})
    loaded = res("agent", 1, {"modes": {"currentModeId": "default", "availableModes": []}})
    events = run(
        load,
        chunk("user_message_chunk", "q1"),
        loaded,
        chunk("agent_message_chunk", "a1"),
        prompt(2, "live"),
        chunk("agent_message_chunk", "a2"),
        res("agent", 2, {"stopReason": "end_turn"}),
    )
    evs = session_events(events)
    said = [
        (ev.event.turn_id, ev.event.origin, type(b).__name__, getattr(b, "text", None))
        for ev in evs
        if isinstance(b := ev.event.body, UserMessage | AssistantMessage | TurnStart | TurnComplete)
    ]
    assert said == [
        ("turn:1", "replay", "TurnStart", None),
        ("turn:1", "replay", "UserMessage", "q1"),
        ("turn:1", "replay", "AssistantMessage", "a1"),
        ("turn:1", "replay", "TurnComplete", None),
        ("turn:2", "live", "TurnStart", None),
        ("turn:2", "live", "UserMessage", "live"),
        ("turn:2", "live", "AssistantMessage", "a2"),
        ("turn:2", "live", "TurnComplete", None),
    ]
    # the stream ends after the late answer: the replayed turn ends with it, not cut off
    ended = session_events(run(load, chunk("user_message_chunk", "q1"), loaded, chunk("agent_message_chunk", "a1")))
    assert [(ev.event.origin, ev.event.body.reason) for ev in ended if isinstance(ev.event.body, TurnComplete)] == [
        ("replay", "ok")
    ]
    assert [ev.event.turn_id for ev in ended if isinstance(ev.event.body, AssistantMessage)] == ["turn:1"]


def test_usage_update_is_session_scope_and_the_turn_gets_its_cost_delta() -> None:
    events = run(
        req("client", 0, "session/new", {"cwd": "/w", "mcpServers": []}),
        res("agent", 0, {"sessionId": "S"}),
        prompt(1),
        upd({"sessionUpdate": "usage_update", "used": 10, "size": 100, "cost": {"amount": 0.25, "currency": "USD"}}),
        res("agent", 1, {"stopReason": "end_turn", "usage": {"inputTokens": 7, "outputTokens": 3, "totalTokens": 10}}),
        prompt(2),
        upd({"sessionUpdate": "usage_update", "used": 20, "size": 100, "cost": {"amount": 0.75, "currency": "USD"}}),
        res("agent", 2, {"stopReason": "end_turn"}),
    )
    usages = [b for b in bodies(events) if isinstance(b, Usage)]
    assert [(u.scope, u.cost.amount if u.cost else None) for u in usages] == [
        ("session", 0.25),
        ("turn", 0.25),
        ("session", 0.75),
        ("turn", 0.5),
    ]
    assert usages[0].context is not None and (usages[0].context.used, usages[0].context.size) == (10, 100)
    assert usages[1].tokens is not None and (usages[1].tokens.input, usages[1].tokens.total) == (7, 10)


def test_a_cancelled_turn_s_cost_reported_in_the_next_turn_is_not_that_turn_s() -> None:
    """claude-agent-acp 0.55.0 reports the cost of a cancelled turn only once the next prompt
    is sent, before that turn's own output: it moves the next turn's baseline, not its cost."""

    def cost(amount: float) -> tuple[str, Wire]:
        return upd(
            {"sessionUpdate": "usage_update", "used": 5, "size": 100, "cost": {"amount": amount, "currency": "USD"}}
        )

    events = run(
        req("client", 0, "session/new", {"cwd": "/w", "mcpServers": []}),
        res("agent", 0, {"sessionId": "S"}),
        prompt(1),
        chunk("agent_message_chunk", "Once upon", "m1"),
        ("client", {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "S"}}),
        res("agent", 1, {"stopReason": "cancelled"}),
        prompt(2),
        upd({"sessionUpdate": "usage_update", "used": 5, "size": 100}),
        cost(0.25),  # the cancelled turn's
        chunk("agent_message_chunk", "Briefly.", "m2"),
        cost(0.75),
        res("agent", 2, {"stopReason": "end_turn"}),
        prompt(3),
        cost(1.0),  # no cancelled turn before: this turn's own
        chunk("agent_message_chunk", "Again.", "m3"),
        res("agent", 3, {"stopReason": "end_turn"}),
    )
    turns = [u.cost.amount if u.cost else None for u in bodies(events) if isinstance(u, Usage) and u.scope == "turn"]
    assert turns == [0.5, 0.25]
    completions = [e.result for e in events if isinstance(e, MessageCompleted)]
    assert [c.usage.cost.amount if c.usage and c.usage.cost else None for c in completions] == [None, 0.5, 0.25]


def test_unknown_variants_and_methods_pass_through() -> None:
    events = run(
        upd({"sessionUpdate": "something_new", "x": 1}),
        ("agent", {"jsonrpc": "2.0", "method": "_vendor/ping", "params": {}}),
    )
    ups = [e for e in events if isinstance(e, SessionUpdate)]
    assert [u.update.method for u in ups] == ["session/update", "_vendor/ping"]
    assert not session_events(events)


def test_bad_input_is_an_error_event_and_the_stream_goes_on() -> None:
    session = Session(AcpAdapter(), session_id="s-test", clock=fixed_clock)
    out = session.feed(b"{not json", "agent")
    out += session.feed(json.dumps(prompt(1)[1]).encode(), "client")
    out += session.close()  # no session/new was seen: the held events come out at close
    errors = [b for b in bodies(out) if isinstance(b, Error)]
    assert [e.error_type for e in errors] == ["malformed", "cut-off"]  # the prompt's turn never ended
    assert any(isinstance(b, TurnStart) for b in bodies(out))


def test_a_call_open_at_close_is_reported() -> None:
    events = run(upd({"sessionUpdate": "tool_call", "toolCallId": "dangling", "title": "x", "kind": "read"}))
    warnings = [ev for ev in session_events(events) if isinstance(ev.event.body, WarningBody)]
    assert len(warnings) == 1
    assert warnings[0].event.native.protocol == "core"
    body = warnings[0].event.body
    assert isinstance(body, WarningBody) and "dangling" in body.message


def test_detection_needs_acp_methods() -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}},
    }
    assert AcpAdapter.detect([(json.dumps(init).encode(), "client")]) == 0.95
    other = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"clientInfo": {"name": "x"}}}
    assert AcpAdapter.detect([(json.dumps(other).encode(), "client")]) == 0.0
    assert AcpAdapter.detect([(b"not json", "agent")]) == 0.0
    assert AcpAdapter.detect([(json.dumps(prompt(1)[1]).encode(), "client")]) == 0.8


def test_an_injected_session_context_replayed_by_a_load_is_no_user_message() -> None:
    """Gemini CLI 0.45.2 replays only its own ``<session_context>`` (date, OS, files) as a
    user chunk on load: not the user's words, so no user-message and no replayed turn; the
    message stays a ``session.update`` and the prompt after the load is the first turn."""
    context = "<session_context>\nThis is the Gemini CLI. Today's date is ...\n</session_context>"
    events = run(
        req("client", 1, "session/load", {"sessionId": "S", "cwd": "/w", "mcpServers": []}),
        chunk("user_message_chunk", context),
        res("agent", 1, {"modes": {"currentModeId": "default", "availableModes": []}}),
        prompt(2, "live"),
        chunk("agent_message_chunk", "a"),
        res("agent", 2, {"stopReason": "end_turn"}),
    )
    evs = session_events(events)
    users = [(ev.event.turn_id, ev.event.origin, b.text) for ev in evs if isinstance(b := ev.event.body, UserMessage)]
    assert users == [("turn:1", "live", "live")]
    assert [(ev.event.turn_id, ev.event.origin) for ev in evs if isinstance(ev.event.body, TurnStart)] == [
        ("turn:1", "live")
    ]
    kept = [e for e in events if isinstance(e, SessionUpdate) and e.update.payload is not None]
    assert any(b"<session_context>" in bytes(e.update.payload) for e in kept)
    # the recording: the load's replay holds no turn, the second question is turn 1
    capture = ADAPTERS / "acp/captures/gemini-cli-0.45.2/gemini-f-load.tap.jsonl"
    recorded = session_events(events_of(capture))
    assert [ev.event.origin for ev in recorded if isinstance(ev.event.body, TurnStart | UserMessage)] == ["live"] * 2
    assert [b.text for b in bodies(events_of(capture)) if isinstance(b, UserMessage)] == [
        "scenario load: and a second question"
    ]


def test_bad_input_inside_load_history_is_replay_and_after_it_live() -> None:
    bad_call = upd({"sessionUpdate": "tool_call", "title": "no id"})  # a tool call needs its toolCallId
    events = run(
        req("client", 1, "session/load", {"sessionId": "S", "cwd": "/w", "mcpServers": []}),
        bad_call,
        res("agent", 1, {}),
        prompt(2, "live"),
        bad_call,
        res("agent", 2, {"stopReason": "end_turn"}),
    )
    errors = [(ev.event.origin, b.error_type) for ev in session_events(events) if isinstance(b := ev.event.body, Error)]
    assert errors == [("replay", "malformed"), ("live", "malformed")]


def _call_traffic() -> list[tuple[str, Wire]]:
    """One call asked about, run, ended and patched after its end; a second left open when
    the prompt is cancelled."""
    perm = {
        "sessionId": "S",
        "toolCall": {"toolCallId": "t1", "title": "ls -la", "rawInput": {"command": "ls -la"}},
        "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"}],
    }
    return [
        prompt(1),
        upd({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "ls", "kind": "execute", "status": "pending"}),
        req("agent", 0, "session/request_permission", perm),
        res("client", 0, {"outcome": {"outcome": "selected", "optionId": "ok"}}),
        upd({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}),
        upd({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "rawOutput": {"exit_code": 0}}),
        upd({"sessionUpdate": "tool_call", "toolCallId": "t2", "title": "cat a", "kind": "read"}),
        res("agent", 1, {"stopReason": "cancelled"}),
    ]


@pytest.mark.parametrize("announced", [True, False], ids=["announced", "never-announced"])
def test_a_calls_fields_are_merged_across_its_updates_whether_or_not_the_session_was_announced(
    announced: bool,
) -> None:
    # the adapter reads its calls from the core's table: also while the Session holds the
    # events of a session never announced (no session/new here)
    new = [req("client", 9, "session/new", {"cwd": "/w", "mcpServers": []}), res("agent", 9, {"sessionId": "S"})]
    events = run(*(new if announced else []), *_call_traffic())
    calls = [(c.call_id, c.phase, c.tool, c.title, c.category) for c in bodies(events) if isinstance(c, ToolCall)]
    assert calls == [
        ("t1", "started", "execute", "ls", "execute"),
        ("t1", "completed", "execute", "ls -la", "execute"),  # the permission's title, merged
        ("t1", "updated", "execute", "ls -la", "execute"),  # a patch after the end: the call's fields again
        ("t2", "started", "read", "cat a", "read"),
        ("t2", "failed", "read", "cat a", "read"),  # the cancelled prompt's open call, failed once
    ]
    patched = [c for c in bodies(events) if isinstance(c, ToolCall) and c.phase == "updated"]
    assert json.loads(bytes(patched[0].input)) == {"command": "ls -la"}
    assert json.loads(bytes(patched[0].output)) == {"exit_code": 0}
    (request,) = [b for b in bodies(events) if isinstance(b, PermissionRequest)]
    assert (request.tool_call.tool, request.tool_call.category) == ("execute", "execute")
    # nothing duplicated or left open for the core to settle
    assert not [b for b in bodies(events) if isinstance(b, WarningBody | Error)]


def _problem_text(update: Any, **params: Any) -> str | None:
    line = json.dumps(
        {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "S", **params, "update": update}}
    )
    items = AcpAdapter().feed(line.encode())
    problems = [i for i in items if isinstance(i, Problem)]
    return str(problems[0].error) if problems else None


@pytest.mark.parametrize(
    ("update", "params", "expected"),
    [
        # bad input in a variant is reported where it sits in the update
        (
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": 5}},
            {},
            "session/update: Expected `str | null`, got `int` - at `$.content.text`",
        ),
        ({"sessionUpdate": 7}, {}, "session/update: Expected `str`, got `int` - at `$.sessionUpdate`"),
        (None, {}, "session/update: Expected `object`, got `null`"),
        (
            {"sessionUpdate": "plan", "entries": []},
            {"sessionId": 3},
            "session/update: Expected `str | null`, got `int` - at `$.sessionId`",
        ),
        # a variant this version does not know: passed through, not an error
        ({"sessionUpdate": "some_future_update", "x": 1}, {}, None),
    ],
)
def test_a_malformed_or_unknown_update_is_reported_as_before(
    update: Any, params: dict[str, Any], expected: str | None
) -> None:
    assert _problem_text(update, **params) == expected


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_an_update_gives_the_same_events_however_its_line_is_written(capture: Path) -> None:
    # a session/update line with the usual head is read in one pass, one with its keys in
    # another order the general way: the same events
    def bodies_of(dumps: Any) -> list[bytes]:
        session = Session(AcpAdapter(), session_id="s-test", clock=fixed_clock)
        out: list[_Core] = []
        for from_, msg in wire(capture):
            out += session.feed(dumps(msg).encode(), from_)  # type: ignore[arg-type]
        out += session.close()
        return [msgspec.json.encode(b) for b in bodies(out)]

    def reordered(m: Wire) -> str:
        return json.dumps(dict(reversed(m.items())), separators=(",", ":"))

    assert bodies_of(lambda m: json.dumps(m, separators=(",", ":"))) == bodies_of(reordered)


def _failed_turn_outcomes(capture: Path) -> list[tuple[str, str, str | None]]:
    """Each turn's (turn-complete reason, completion stopReason, its error's type)."""
    events = convert_capture(capture)
    reasons = [ev.event.body.reason for ev in session_events(events) if isinstance(ev.event.body, TurnComplete)]
    done = [e.result for e in events if isinstance(e, MessageCompleted)]
    return [(r, c.stop_reason, c.error.error_type if c.error else None) for r, c in zip(reasons, done, strict=True)]


_CODEX_ACP_API_ERRORS = sorted(ADAPTERS.glob("acp/captures/codex-acp-*/codex-x-api-error.tap.jsonl"))
_APP_SERVER_API_ERRORS = sorted(ADAPTERS.glob("codex-app-server/captures/*/h_api_error.tap.jsonl"))


@pytest.mark.parametrize("capture", _CODEX_ACP_API_ERRORS, ids=_id)
def test_a_failed_codex_model_call_ends_its_turn_as_over_codex_app_server(capture: Path) -> None:
    """Codex's model call failed for good (the scripted server answers 500): over its
    app-server the turn ends failed, codex-acp 1.0 and later say a systemError and answer
    the prompt end_turn (0.7 answers an error).  Both come out as a turn interrupted by an
    error, so that a count of failed turns is the same whichever protocol carried them."""
    assert _APP_SERVER_API_ERRORS
    for other in _APP_SERVER_API_ERRORS:
        [(reason, stop, _)] = _failed_turn_outcomes(other)
        assert (reason, stop) == ("interrupt", "error"), other
    [(reason, stop, error_type)] = _failed_turn_outcomes(capture)
    assert (reason, stop) == ("interrupt", "error")
    assert error_type is not None

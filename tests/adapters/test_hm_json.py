"""The hm-json adapter: its promises over every capture, and precise mappings by hand."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from helpers import ADAPTERS, convert_capture, fixed_clock, session_captures
from normalize import (
    CaptureParser,
    Error,
    MalformedMessage,
    Message,
    MessageAccepted,
    MessageCompleted,
    MessageStarted,
    ModeUpdate,
    PermissionAuto,
    PermissionRequest,
    PermissionsUpdate,
    RequestResolved,
    Session,
    SessionCreated,
    SessionEvent,
    SessionFailed,
    SessionUpdate,
    Subagent,
    Tokens,
    ToolCall,
    TurnComplete,
    TurnStart,
    Usage,
    UsageError,
    UserMessage,
    UserQuestion,
    adapter_class,
    detect_protocol,
    encode,
)
from normalize import Warning as WarningBody
from normalize._model import _Core

PROTOCOL = "hm-json"
CAPTURES = [c for c in session_captures() if c.relative_to(ADAPTERS).parts[0] == PROTOCOL]
Line = dict[str, Any]


def _id(p: Path) -> str:
    return p.name


def messages(capture: Path) -> list[tuple[Line, str]]:
    """The capture's native messages, decoded, with their direction."""
    recs = CaptureParser().feed(capture.read_bytes()) + CaptureParser().close()
    return [(json.loads(r.data), r.from_) for r in recs if isinstance(r, Message)]


def agent_lines(capture: Path) -> list[Line]:
    return [m for m, side in messages(capture) if side == "agent"]


def session_events(events: list[_Core]) -> list[SessionEvent]:
    return [e for e in events if isinstance(e, SessionEvent)]


def payload(ev: SessionEvent) -> Line | None:
    """The native message an event came from (None for synthesized events)."""
    if ev.event.native.protocol == "core":
        return None
    p = ev.event.native.payload
    return json.loads(bytes(p)) if p is not None else None


def mains(capture: Path) -> set[str]:
    """The session ids hm announces with session_start (the others are sub-agents)."""
    return {m["session"] for m in agent_lines(capture) if m["type"] == "session_start"}


def run(*lines: Line | tuple[Line, str], strict: bool = False) -> list[_Core]:
    """Feed inline messages (agent side unless given as ``(msg, "client")``) through a Session."""
    session = Session(adapter_class(PROTOCOL)(), clock=fixed_clock, strict=strict)
    out: list[_Core] = []
    for item in lines:
        msg, side = item if isinstance(item, tuple) else (item, "agent")
        out.extend(session.feed(json.dumps(msg).encode(), side))  # type: ignore[arg-type]
    out.extend(session.close())
    return out


def bodies(events: list[_Core]) -> list[Any]:
    return [e.event.body for e in session_events(events)]


S = "20261201-aaaaaa"


def line(type_: str, **fields: Any) -> Line:
    return {"v": 1, "type": type_, "session": fields.pop("session", S), "time": "2026-12-01T10:00:00.000Z", **fields}


START = line("session_start", root="/w", mode="auto", provider="anthropic", model="", resumed=False, prompt="")


# ------------------------------------------------------------------ over every capture


def test_every_shared_capture_is_in_the_kit() -> None:
    names = {c.name for c in CAPTURES}
    assert len(CAPTURES) >= 12
    assert {"01_plain_answer.jsonl", "05_background_subagent.jsonl", "08_rpc_session.tap.jsonl"} <= names


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_no_error_events_except_those_the_capture_reports(capture: Path) -> None:
    """Errors come only from hm's own error lines, refused commands, or a missing session_end."""
    lines = agent_lines(capture)
    expected = Counter(
        "error" if m["type"] == "error" else "response" for m in lines if m["type"] == "error" or m.get("ok") is False
    )
    if not any(m["type"] == "session_end" for m in lines):
        expected["cut-off"] += 1
    got: Counter[str] = Counter()
    for ev in session_events(convert_capture(capture)):
        body = ev.event.body
        if isinstance(body, Error):
            got["cut-off" if body.error_type == "cut-off" else str(ev.event.native.method)] += 1
            assert body.error_type != "cut-off" or ev.event.native.protocol == "core"
    assert got == expected


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_every_tool_call_has_exactly_one_terminal_phase(capture: Path) -> None:
    """Each call ends once: as the stream says, or settled by the core (a warning, then ``failed``)."""
    events = convert_capture(capture)
    started: list[str] = []
    terminal: Counter[str] = Counter()
    warned: set[str] = set()
    for ev in session_events(events):
        body = ev.event.body
        if isinstance(body, ToolCall) and body.phase == "started":
            started.append(body.call_id)
        elif isinstance(body, ToolCall) and body.phase in ("completed", "failed"):
            terminal[body.call_id] += 1
        elif isinstance(body, WarningBody) and body.source == "normalize":
            warned |= {c for c in started if c in body.message}
    assert len(started) == len(set(started))
    for call in started:
        assert terminal[call] == 1, call
    assert set(terminal) <= set(started)
    assert warned <= set(started)
    # the tool_call lines are exactly the started calls
    assert started == [m["call_id"] for m in agent_lines(capture) if m["type"] == "tool_call"]


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_one_turn_complete_per_turn_end(capture: Path) -> None:
    lines = agent_lines(capture)
    turn_ends = sum(1 for m in lines if m["type"] == "turn_end" and m["session"] in mains(capture))
    completes = [e for e in session_events(convert_capture(capture)) if isinstance(e.event.body, TurnComplete)]
    native = [e for e in completes if e.event.native.method == "turn_end"]
    assert len(native) == turn_ends
    cut_in_turn = sum(1 for e in completes if e.event.native.protocol == "core")
    # the only other turn ends: a turn the stream cut off (07)
    assert cut_in_turn == (1 if capture.name == "07_cut_off.jsonl" else 0)
    starts = [e for e in session_events(convert_capture(capture)) if isinstance(e.event.body, TurnStart)]
    assert len(starts) == len(completes)


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_subagent_events_carry_their_subagent_id(capture: Path) -> None:
    main_ids = mains(capture)
    for ev in session_events(convert_capture(capture)):
        native = payload(ev)
        if native is None:
            continue
        sid = native.get("session")
        if isinstance(ev.event.body, Subagent):
            # the parent's announcement of the sub-agent, named in its body
            assert ev.event.subagent_id is None
            assert ev.event.body.subagent_id not in main_ids
        elif sid is None or sid in main_ids:
            assert ev.event.subagent_id is None, ev
        else:
            assert ev.event.subagent_id == sid, ev


def test_subagents_start_at_their_spawning_call_and_end_at_subagent_end() -> None:
    (bg,) = [c for c in CAPTURES if c.name == "05_background_subagent.jsonl"]
    subs = [b for b in bodies(convert_capture(bg)) if isinstance(b, Subagent)]
    assert [(s.subagent_id, s.phase, s.call_id, s.background) for s in subs] == [
        ("20261109-r7vx2c", "started", "toolu_01bYfk6lvrLzZxTF71IH9D7m", True),
        ("20261109-r7vx2c", "completed", "toolu_01bYfk6lvrLzZxTF71IH9D7m", None),
    ]
    assert subs[1].result is not None and subs[1].result.startswith("CI went from about 6 to about 19 minutes")
    (failing,) = [c for c in CAPTURES if c.name == "09_rpc_commands.tap.jsonl"]
    subs = [b for b in bodies(convert_capture(failing)) if isinstance(b, Subagent)]
    assert [(s.phase, s.call_id) for s in subs] == [("started", "toolu_01Ag5Rb8"), ("failed", "toolu_01Ag5Rb8")]
    assert subs[1].result == {"error": "anthropic: 529 Overloaded; no attempts left"}


def test_background_report_starts_turn_two() -> None:
    (bg,) = [c for c in CAPTURES if c.name == "05_background_subagent.jsonl"]
    events = session_events(convert_capture(bg))
    (second,) = [e for e in events if isinstance(e.event.body, TurnStart) and e.event.turn_id == "turn:2"]
    assert payload(second) is not None
    assert payload(second)["text"].startswith("Report from background sub-agent 20261109-r7vx2c")  # type: ignore[index]
    # sub-agent work between the turns belongs to no turn
    between = [e for e in events if e.event.subagent_id and e.event.turn_id is None]
    assert between


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_approvals_are_resolved_with_the_decision_sent(capture: Path) -> None:
    sent = {m["call_id"]: m for m, side in messages(capture) if side == "client" and m.get("type") == "approve"}
    events = bodies(convert_capture(capture))
    requests = {b.request_id for b in events if isinstance(b, PermissionRequest)}
    resolved = {b.request_id: b for b in events if isinstance(b, RequestResolved)}
    assert requests <= set(resolved), "every permission request is settled"
    decided = {m["call_id"] for m in agent_lines(capture) if m["type"] == "approval"}
    for call_id, cmd in sent.items():
        if call_id not in decided:
            continue  # refused by hm: the call was not waiting
        r = resolved[call_id]
        assert r.outcome == "answered"
        assert r.answer["allow"] is cmd["allow"]
        assert r.answer.get("note") == cmd.get("note")
        assert r.answer.get("forSession") == cmd.get("for_session")
        expected = ("allow-session" if cmd.get("for_session") else "allow") if cmd["allow"] else "reject"
        assert r.answer["optionId"] == expected
    autos = [b for b in events if isinstance(b, PermissionAuto)]
    # an approval nobody sent is a decision taken without asking, never an answer
    for call_id in decided - set(sent):
        if call_id in requests:
            assert resolved[call_id].outcome == "cancelled"
        if not any(m.get("type") == "abort" for m, side in messages(capture) if side == "client"):
            assert call_id in {a.tool_call.call_id for a in autos}


def test_approve_with_edits_keeps_the_edits() -> None:
    (rpc,) = [c for c in CAPTURES if c.name == "09_rpc_commands.tap.jsonl"]
    resolved = [b for b in bodies(convert_capture(rpc)) if isinstance(b, RequestResolved)]
    (r,) = [b for b in resolved if b.request_id == "toolu_01Ed9Lm4"]
    assert r.outcome == "answered"
    assert json.loads(bytes(r.answer["edits"])) == [
        {
            "path": "config/test.yaml",
            "content": "driver: postgres\ndsn: postgres://test@localhost:5432/test?sslmode=disable\n",
        }
    ]


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_usage_per_call_sums_to_the_session_usage(capture: Path) -> None:
    lines = agent_lines(capture)
    ends = [m for m in lines if m["type"] == "session_end"]
    calls = [b for b in bodies(convert_capture(capture)) if isinstance(b, Usage) and b.scope == "call"]
    # one call usage per usage line, sub-agents included
    assert len(calls) == sum(1 for m in lines if m["type"] == "usage")
    if not ends:
        return
    total = ends[0]["usage"]
    # the capture's own arithmetic: its usage lines add up to session_end's totals
    for key in ("input", "output", "cache_read", "cache_write"):
        assert sum(m[key] for m in lines if m["type"] == "usage") == total[key], key
    assert sum(m["cost"] for m in lines if m["type"] == "usage") == pytest.approx(total["cost"], abs=1e-6)
    # and the normalized events say the same
    session_usage = [b for b in bodies(convert_capture(capture)) if isinstance(b, Usage) and b.scope == "session"]
    last = session_usage[-1]
    assert last.tokens is not None
    for attr in ("input", "output", "cache_read", "cache_write"):
        assert sum(getattr(c.tokens, attr) for c in calls if c.tokens) == getattr(last.tokens, attr)
    assert sum(c.cost.amount for c in calls if c.cost) == pytest.approx(last.cost.amount if last.cost else 0, abs=1e-6)


def test_usage_arithmetic_of_the_background_capture_by_hand() -> None:
    (bg,) = [c for c in CAPTURES if c.name == "05_background_subagent.jsonl"]
    session = [b for b in bodies(convert_capture(bg)) if isinstance(b, Usage) and b.scope == "session"]
    assert session[-1].tokens == Tokens(input=74132, output=1163, total=75295, cache_read=56291, cache_write=17841)
    assert session[-1].cost is not None and session[-1].cost.amount == 0.101235


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_documented_types_become_bodies(capture: Path) -> None:
    """session.update only for unknown types and for lines that carry nothing to translate."""
    kept = {"message_start", "tool_start", "message_end", "response", "turn_end"}
    for ev in convert_capture(capture):
        if isinstance(ev, SessionUpdate) and ev.update.protocol == PROTOCOL:
            msg = json.loads(bytes(ev.update.payload))
            if "v" not in msg:
                continue  # a client command: what it means shows in hm's answer to it
            assert msg["type"] in kept or msg["type"] == "plan_update", msg["type"]
            if msg["type"] == "message_end":
                assert msg["role"] == "tool" or (msg["role"] == "assistant" and not msg["text"])


def test_unknown_type_is_kept_as_session_update() -> None:
    (rpc,) = [c for c in CAPTURES if c.name == "09_rpc_commands.tap.jsonl"]
    updates = [e for e in convert_capture(rpc) if isinstance(e, SessionUpdate) and e.update.method == "plan_update"]
    assert len(updates) == 1
    assert json.loads(bytes(updates[0].update.payload))["steps"][0]["done"] is True
    # inline, with unknown fields of any type: kept too, never an error
    events = run(START, line("plan_update", text=5, input={"a": 1}, steps=[]))
    upd = [e for e in events if isinstance(e, SessionUpdate)]
    assert [u.update.method for u in upd] == ["plan_update"]
    assert not [b for b in bodies(events) if isinstance(b, Error) and b.error_type != "cut-off"]


# ------------------------------------------------------------------ precise mappings


def test_session_start_gives_the_record_and_the_mode() -> None:
    events = run(line("session_start", root="/w", mode="plan", provider="anthropic", model="claude-x", resumed=False))
    created = events[0]
    assert isinstance(created, SessionCreated)
    rec = created.record
    assert (rec.native_session_id, rec.cwd, rec.model, rec.mode) == (S, "/w", "claude-x", "plan")
    assert bodies(events)[0] == ModeUpdate(mode_id="plan", model="claude-x")


def test_a_prompt_lives_from_accepted_to_completed() -> None:
    events = run(
        START,
        ({"id": 7, "type": "prompt", "text": "hi"}, "client"),
        line("response", id=7, command="prompt", ok=True),
        line("message_end", role="user", text="hi"),
        line("message_start", role="assistant"),
        line("text_delta", text="Hello"),
        line("usage", input=10, output=2, cache_read=0, cache_write=10, cost=0.5),
        line("message_end", role="assistant", text="Hello"),
        line("turn_end"),
        line("session_end", answer="Hello", exit_code=0, refused=[], usage={"input": 10, "output": 2}),
    )
    lifecycle = [e for e in events if isinstance(e, MessageAccepted | MessageStarted | MessageCompleted)]
    assert [type(e).__name__ for e in lifecycle] == ["MessageAccepted", "MessageStarted", "MessageCompleted"]
    assert {e.message_id for e in lifecycle} == {"cmd-7"}
    done = lifecycle[-1]
    assert isinstance(done, MessageCompleted)
    assert done.result.stop_reason == "end_turn" and done.result.text == "Hello"
    assert done.result.usage is not None and done.result.usage.tokens == Tokens(
        input=10, output=2, total=12, cache_read=0, cache_write=10
    )
    b = bodies(events)
    (user,) = [x for x in b if isinstance(x, UserMessage)]
    assert user.message_id == "cmd-7" and user.text == "hi"
    assert [type(x).__name__ for x in b if isinstance(x, TurnStart | TurnComplete)] == ["TurnStart", "TurnComplete"]


def test_a_refused_command_is_a_recoverable_error() -> None:
    events = run(
        START,
        ({"id": "8", "type": "prompt", "text": "again"}, "client"),
        line("response", id="8", command="prompt", ok=False, error="a turn is running"),
        line("session_end", answer="", exit_code=0, refused=[], usage={}),
    )
    (err,) = [b for b in bodies(events) if isinstance(b, Error)]
    assert err.recoverable is True and "a turn is running" in err.message
    assert not [e for e in events if isinstance(e, MessageAccepted)]


def test_a_response_without_id_is_matched_by_its_command() -> None:
    events = run(
        START,
        ({"type": "set_mode", "mode": "plan"}, "client"),
        line("response", command="set_mode", ok=True),
        line("session_end", answer="", exit_code=0, refused=[], usage={}),
    )
    b = bodies(events)
    assert ModeUpdate(mode_id="plan") in b
    assert PermissionsUpdate(spec={"mode": "plan"}, applied="next-turn") in b


def test_an_approval_nobody_sent_is_permission_auto() -> None:
    events = run(
        START,
        line("tool_call", tool="shell", call_id="c1", summary="ls", input={"command": "ls"}),
        line("approval_needed", call_id="c1", tool="shell", category="shell", summary="ls", command="ls"),
        line("approval", call_id="c1", tool="shell", allow=True),
    )
    b = bodies(events)
    (req,) = [x for x in b if isinstance(x, PermissionRequest)]
    assert req.tool_call.category == "execute" and req.detail is not None and req.detail.command == "ls"
    (auto,) = [x for x in b if isinstance(x, PermissionAuto)]
    assert auto.option_id == "allow" and auto.tool_call.call_id == "c1"
    (res,) = [x for x in b if isinstance(x, RequestResolved)]
    assert res.outcome == "cancelled"


def test_an_approve_sent_is_the_answer() -> None:
    events = run(
        START,
        line("tool_call", tool="shell", call_id="c1", summary="ls", input={"command": "ls"}),
        line("approval_needed", call_id="c1", tool="shell", category="shell", summary="ls"),
        ({"id": 2, "type": "approve", "call_id": "c1", "allow": False, "note": "no"}, "client"),
        line("response", id=2, command="approve", ok=True),
        line("approval", call_id="c1", tool="shell", allow=False, note="no"),
        line("tool_result", tool="shell", call_id="c1", text="refused", is_error=True),
    )
    b = bodies(events)
    assert not [x for x in b if isinstance(x, PermissionAuto)]
    (res,) = [x for x in b if isinstance(x, RequestResolved)]
    assert res.outcome == "answered" and res.answer == {"optionId": "reject", "allow": False, "note": "no"}
    # a refused call never ran: no command output, one failed phase
    assert [(x.phase, x.output) for x in b if isinstance(x, ToolCall)][-1] == ("failed", "refused")
    assert not [x for x in b if type(x).__name__ == "CommandOutput"]


def test_blocked_is_a_rule_refusing_the_call_before_it() -> None:
    events = run(
        START,
        line("tool_call", tool="shell", call_id="c1", summary="git push", input={"command": "git push"}),
        line("blocked", tool="shell", reason="guard.yaml: denied"),
        line("tool_result", tool="shell", call_id="c1", text="refused by guard.yaml", is_error=True),
    )
    b = bodies(events)
    (auto,) = [x for x in b if isinstance(x, PermissionAuto)]
    assert (auto.option_id, auto.tool_call.call_id, auto.tool_call.title) == ("reject", "c1", "git push")


def test_a_question_and_its_answer() -> None:
    events = run(
        START,
        line("tool_call", tool="ask_user", call_id="q1", summary="Which?", input={"question": "Which?"}),
        line("question", call_id="q1", text="Which?"),
        ({"id": "a", "type": "answer", "call_id": "q1", "text": "That one."}, "client"),
        line("response", id="a", command="answer", ok=True),
        line("tool_result", tool="ask_user", call_id="q1", text="That one.", is_error=False),
    )
    b = bodies(events)
    (q,) = [x for x in b if isinstance(x, UserQuestion)]
    assert q.request_id == "q1" and q.questions[0].prompt == "Which?" and q.questions[0].allow_free_text
    (res,) = [x for x in b if isinstance(x, RequestResolved)]
    assert res.outcome == "answered" and res.answer == {"text": "That one."}


def test_usage_line_is_one_call_in_usd_and_zero_cost_is_unknown() -> None:
    events = run(
        START,
        line("usage", input=100, output=5, cache_read=90, cache_write=10, cost=0.25),
        line("usage", input=7, output=1, cache_read=0, cache_write=0, cost=0),
    )
    u1, u2 = [x for x in bodies(events) if isinstance(x, Usage)]
    assert u1.scope == "call" and u1.tokens == Tokens(input=100, output=5, total=105, cache_read=90, cache_write=10)
    assert u1.cost is not None and (u1.cost.amount, u1.cost.currency, u1.cost.source) == (0.25, "USD", "agent")
    assert u2.cost is None


def test_fork_is_a_new_session_record_with_fork_of() -> None:
    events = run(
        START,
        ({"id": "f", "type": "fork"}, "client"),
        line("session_start", session="20261201-bbbbbb", root="/w", mode="auto", model="", resumed=False),
        line("response", session="20261201-bbbbbb", id="f", command="fork", ok=True, data={"id": "20261201-bbbbbb"}),
    )
    created = [e for e in events if isinstance(e, SessionCreated)]
    # the fork is a session of its own, named after the session it forks (docs/events.md)
    assert [c.record.fork_of for c in created] == [None, created[0].session_id]
    assert created[1].session_id != created[0].session_id
    assert created[1].record.native_session_id == "20261201-bbbbbb"


def test_cut_off_after_a_turn_is_reported_at_close() -> None:
    events = run(START, line("message_end", role="user", text="hi"), line("turn_end"))
    (err,) = [e for e in session_events(events) if isinstance(e.event.body, Error)]
    assert err.event.native.protocol == "core" and err.event.body.error_type == "cut-off"  # type: ignore[union-attr]
    assert err.event.turn_id is None
    (failed,) = [e for e in events if isinstance(e, SessionFailed)]
    assert failed.error.error_type == "cut-off"


def test_session_end_exit_1_fails_the_session() -> None:
    events = run(START, line("session_end", answer="", exit_code=1, refused=[], usage={}))
    assert any(isinstance(e, SessionFailed) for e in events)
    assert not [b for b in bodies(events) if isinstance(b, Error)]


def test_bad_lines() -> None:
    session = Session(adapter_class(PROTOCOL)(), clock=fixed_clock)
    session.feed(json.dumps(START).encode())  # announce the session, so events come out at once
    out = session.feed(b"not json")
    (err,) = [b for b in bodies(out) if isinstance(b, Error)]
    assert err.error_type == "malformed"
    # a documented type with a field of the wrong type is malformed too
    out = session.feed(json.dumps(line("tool_call", call_id=5)).encode())
    assert [b.error_type for b in bodies(out) if isinstance(b, Error)] == ["malformed"]
    strict = Session(adapter_class(PROTOCOL)(), clock=fixed_clock, strict=True)
    with pytest.raises(MalformedMessage):
        strict.feed(b"[1, 2]")


def test_feed_after_close_raises() -> None:
    adapter = adapter_class(PROTOCOL)()
    adapter.close()
    with pytest.raises(UsageError):
        adapter.feed(json.dumps(START).encode())


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_captures_are_detected_as_hm_json(capture: Path) -> None:
    sample = [(json.dumps(m).encode(), side) for m, side in messages(capture)[:8]]
    assert detect_protocol(sample) == PROTOCOL  # type: ignore[arg-type]


def test_encoded_output_is_deterministic() -> None:
    (rpc,) = [c for c in CAPTURES if c.name == "08_rpc_session.tap.jsonl"]
    assert [encode(e) for e in convert_capture(rpc)] == [encode(e) for e in convert_capture(rpc)]

"""The lifecycle rules the core applies for every agent: one vocabulary of decisions."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from helpers import (
    ADAPTERS,
    capture_files,
    capture_id,
    companions,
    convert_capture,
    convert_records,
    golden_path,
    protocol_of,
    records_of,
)
from normalize import (
    AccountAvailable,
    AccountExhausted,
    Adapter,
    AssistantMessage,
    ContextDegraded,
    ConversationReset,
    Direction,
    Emit,
    EventEnvelope,
    InTurn,
    Item,
    Message,
    OpenCall,
    PermissionAuto,
    PermissionOption,
    PermissionRequest,
    Record,
    RequestResolved,
    Session,
    SessionCreated,
    SessionEvent,
    SessionRecord,
    SessionStateChanged,
    SessionUpdate,
    Subagent,
    Task,
    Tokens,
    ToolCall,
    ToolCalled,
    ToolCallRef,
    ToolFinished,
    TurnComplete,
    TurnStart,
    UserQuestion,
    adapter_class,
    events,
    session_id_for,
)
from normalize import Error as ErrorBody
from normalize import Warning as WarningBody
from normalize._convert import merge_records
from normalize._lifecycle import DECISION_WORDS, ENDED_CALLS, Calls, Requests, decision_of, tokens_plus, tokens_since
from normalize._session import MAX_RUNNING

REF = ToolCallRef(call_id="c1", tool="Bash", title="ls")


def _ask(requests: Requests, rid: str = "r1") -> None:
    options = [
        PermissionOption(id="yes", kind="allow_once", label="Yes"),
        PermissionOption(id="always", kind="allow_always", label="Always"),
        PermissionOption(id="no", kind="reject_once", label="No"),
        PermissionOption(id="never", kind="reject_always", label="Never"),
    ]
    requests.ask(PermissionRequest(request_id=rid, tool_call=REF, options=options))


@pytest.mark.parametrize(
    ("option", "decision"), [("yes", "allow"), ("always", "allow-always"), ("no", "deny"), ("never", "deny-always")]
)
def test_the_chosen_option_kind_gives_the_decision(option: str, decision: str) -> None:
    requests = Requests(10)
    _ask(requests)
    resolved = requests.resolve(RequestResolved(request_id="r1", outcome="answered", option_id=option))
    assert resolved.decision == decision
    assert not requests  # no longer open


def test_an_unanswered_request_is_cancel_and_a_question_answered() -> None:
    requests = Requests(10)
    _ask(requests)
    assert requests.resolve(RequestResolved(request_id="r1", outcome="cancelled")).decision == "cancel"
    requests.ask(UserQuestion(request_id="q", blocking=True, questions=[]))
    assert requests.resolve(RequestResolved(request_id="q", outcome="answered", answer={"a": 1})).decision == "answered"


def test_an_unknown_request_is_read_from_its_option_word_and_never_guessed() -> None:
    requests = Requests(10)
    assert requests.resolve(RequestResolved(request_id="x", outcome="answered", option_id="decline")).decision == "deny"
    assert requests.resolve(RequestResolved(request_id="x", outcome="answered", option_id="maybe")).decision is None
    assert requests.resolve(RequestResolved(request_id="x", outcome="answered")).decision is None


def test_the_adapters_own_decision_is_kept_and_auto_decisions_are_read() -> None:
    requests = Requests(10)
    _ask(requests)
    given = RequestResolved(request_id="r1", outcome="answered", option_id="yes", decision="deny")
    assert requests.resolve(given).decision == "deny"
    assert Requests.auto(PermissionAuto(tool_call=REF, option_id="reject")).decision == "deny"
    assert Requests.auto(PermissionAuto(tool_call=REF, option_id="allow-session")).decision == "allow-always"


def test_the_oldest_open_request_is_forgotten_past_the_limit() -> None:
    requests = Requests(2)
    for rid in ("a", "b", "c"):
        _ask(requests, rid)
    assert len(requests) == 2
    # "a" was forgotten: its option id alone says nothing, so no decision is made up
    assert requests.resolve(RequestResolved(request_id="a", outcome="answered", option_id="yes")).decision is None
    assert requests.resolve(RequestResolved(request_id="b", outcome="answered", option_id="yes")).decision == "allow"


def test_every_word_maps_into_the_vocabulary() -> None:
    assert set(DECISION_WORDS.values()) <= {"allow", "allow-always", "deny", "deny-always", "cancel", "answered"}
    assert decision_of(None) is None


# The same fact from every agent: a shell command allowed once, and one declined.
ALLOWED_ONCE = [
    "claude-stream-json/captures/claude-code-2.1.332/16-permission-stdio-allow.tap.jsonl",
    "codex-app-server/captures/codex-0.171.0/b_command_approval_accept.tap.jsonl",
    "acp/captures/claude-agent-acp-0.101.0/claude-b-shell-allow.tap.jsonl",
    "acp/captures/codex-acp-2.6.0/codex-b-shell-allow.tap.jsonl",
    "hm-json/captures/hm-handwritten/09_rpc_commands.tap.jsonl",
]
DECLINED = [
    "claude-stream-json/captures/claude-code-2.1.332/15-permission-stdio-deny.tap.jsonl",
    "codex-app-server/captures/codex-0.171.0/c_command_approval_decline.tap.jsonl",
    "acp/captures/claude-agent-acp-0.101.0/claude-c-shell-reject.tap.jsonl",
    "acp/captures/codex-acp-2.6.0/codex-c-shell-reject.tap.jsonl",
    "antigravity-stream-json/captures/agy-handwritten/04-denied-command.jsonl",
    "claude-transcript/captures/claude-code-2.1.332/14-permission-denied-print",
    "hm-json/captures/hm-handwritten/03_blocked_and_refused.jsonl",
]


def _decisions(rel: str) -> list[tuple[str, str | None]]:
    path = ADAPTERS / rel
    if path.is_dir():
        (path,) = sorted(Path(path).glob("*.jsonl"))
    out: list[tuple[str, str | None]] = []
    for event in convert_capture(path):
        body = getattr(getattr(event, "event", None), "body", None)
        if isinstance(body, RequestResolved | PermissionAuto):
            out.append((type(body).__name__, body.decision))
    return out


@pytest.mark.parametrize("rel", ALLOWED_ONCE)
def test_allowed_once_reads_the_same_for_every_agent(rel: str) -> None:
    assert ("RequestResolved", "allow") in _decisions(rel)
    assert all(d != "deny" for _, d in _decisions(rel) if _ == "RequestResolved")


@pytest.mark.parametrize("rel", DECLINED)
def test_a_decline_reads_deny_for_every_agent(rel: str) -> None:
    decisions = [d for _, d in _decisions(rel)]
    assert "deny" in decisions
    assert "allow" not in decisions


# MCP calls: tool.called when one starts, tool.finished with its duration when it ends.
MCP_CAPTURES = [
    ("codex-app-server/captures/codex-0.169.0/d_mcp_tool_call_and_web_search.tap.jsonl", "durationMs"),
    ("codex-rollout/captures/codex-0.169.0/app-server-d_mcp_tool_call_and_web_search.jsonl", "duration"),
]


def _native_durations(rel: str, field: str) -> dict[str, float]:
    """The duration each finished MCP call has in the native file, read with plain json."""
    found: dict[str, float] = {}

    def walk(value: object) -> None:
        if isinstance(value, dict):
            kind = str(value.get("type", "")).lower()
            if kind in ("mcptoolcall", "mcp_tool_call") and value.get(field) is not None:
                d = value[field]
                found[value["id"]] = d["secs"] * 1000 + d["nanos"] / 1e6 if isinstance(d, dict) else float(d)
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for line in (ADAPTERS / rel).read_text().splitlines():
        walk(json.loads(line))
    return found


@pytest.mark.parametrize(("rel", "field"), MCP_CAPTURES)
def test_an_mcp_call_gives_tool_called_and_tool_finished_with_its_duration(rel: str, field: str) -> None:
    events = convert_capture(ADAPTERS / rel)
    native = _native_durations(rel, field)
    assert native, "the capture has a finished MCP call"
    called = [e.call_id for e in events if isinstance(e, ToolCalled)]
    finished = {e.call_id: e for e in events if isinstance(e, ToolFinished)}
    assert set(called) == set(native) == set(finished)
    for call_id, ms in native.items():
        assert finished[call_id].ok
        assert finished[call_id].duration_ms == pytest.approx(ms)
    # in stream order: called before its finish, each after the session event it comes from
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("ToolCalled") < kinds.index("ToolFinished")


def test_without_any_time_no_duration_is_made_up() -> None:
    events = convert_capture(ADAPTERS / "codex-exec-json/captures/codex-0.169.0/mixed_items.jsonl")
    assert [e.tool for e in events if isinstance(e, ToolCalled)] == ["search_docs"]
    assert not [e for e in events if isinstance(e, ToolFinished)]  # exec --json has no times


# One start and one end per call, and one policy for what is left open.


def _call(phase: str, call_id: str = "c1") -> ToolCall:
    return ToolCall(call_id=call_id, tool="Bash", phase=phase)  # type: ignore[arg-type]


def test_a_call_starts_once_and_ends_once_whatever_the_input_repeats() -> None:
    calls = Calls(10, 10)
    assert calls.refuse(_call("started"), None, "turn:1") is None
    assert (
        calls.refuse(_call("started"), None, "turn:1") == "tool call c1 already started; a second start is not reported"
    )
    assert calls.refuse(_call("updated"), None, "turn:1") is None
    assert calls.refuse(_call("completed"), None, "turn:1") is None
    # ACP agents patch a finished call: an update is kept; a second end is not
    assert calls.refuse(_call("updated"), None, "turn:1") is None
    assert "already finished; a later failed phase" in (calls.refuse(_call("failed"), "agent-1", None) or "")
    # an end whose start was never written is believed
    assert calls.refuse(_call("completed", "c2"), None, None) is None
    assert len(calls) == 0


def test_open_calls_are_bounded_and_main_thread_calls_belong_to_their_turn() -> None:
    calls = Calls(2, 10)
    for cid, sub in (("a", None), ("b", "agent-1"), ("c", None)):
        assert calls.refuse(_call("started", cid), sub, "turn:1") is None
    assert [cid for cid, _ in calls.open_calls()] == ["b", "c"]  # the oldest forgotten
    assert [cid for cid, _ in calls.open_in_turn("turn:1")] == ["c"]  # a sub-agent may outlive the turn


def _session_of(lines: list[dict[str, object]]) -> list[EventEnvelope]:
    session = Session(adapter_class("claude-stream-json")(), clock=lambda: 0.0)
    out: list[Any] = []
    for line in lines:
        out += session.feed(json.dumps(line).encode())
    out += session.close()
    return [e.event for e in out if isinstance(e, SessionEvent)]


INIT: dict[str, object] = {
    "type": "system",
    "subtype": "init",
    "session_id": "s1",
    "model": "m",
    "tools": [],
    "cwd": "/",
}


def _tool_use(call_id: str) -> dict[str, object]:
    content = [{"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": "ls"}}]
    return {"type": "assistant", "session_id": "s1", "message": {"id": "m1", "content": content}}


def test_a_duplicated_call_start_is_an_error_event_not_a_second_call() -> None:
    envs = _session_of([INIT, _tool_use("t1"), _tool_use("t1")])
    starts = [e for e in envs if isinstance(e.body, ToolCall) and e.body.phase == "started"]
    assert len(starts) == 1
    (error,) = [e.body for e in envs if isinstance(e.body, ErrorBody) and e.body.error_type == "protocol"]
    assert "t1 already started" in error.message


def test_a_call_open_at_its_turns_end_or_at_close_is_reported_and_failed() -> None:
    result: dict[str, object] = {"type": "result", "subtype": "success", "session_id": "s1", "result": "ok"}
    envs = _session_of([INIT, _tool_use("t1"), result])
    turn_end = next(n for n, e in enumerate(envs) if isinstance(e.body, TurnComplete))
    failed = [n for n, e in enumerate(envs) if isinstance(e.body, ToolCall) and e.body.phase == "failed"]
    assert failed and failed[0] < turn_end  # settled inside its turn, before the turn's end
    warning = envs[failed[0] - 1].body
    assert isinstance(warning, WarningBody) and "was still open when turn:1 ended" in warning.message
    assert envs[failed[0]].native.protocol == "core"
    # cut off with the call open: settled at close, then the turn is cut off
    envs = _session_of([INIT, _tool_use("t2")])
    kinds = [type(e.body).__name__ for e in envs]
    assert kinds[-4:] == ["Warning", "ToolCall", "Error", "TurnComplete"]


class _Nested(Adapter):
    """Says that sub-agent ``inner`` started inside sub-agent ``outer``."""

    protocol = "test-nested"

    def feed(self, message: bytes, from_: Direction = "agent") -> list[Item]:
        inner = Subagent(subagent_id="inner", phase="started", call_id="c2")
        return [
            Emit(body=Subagent(subagent_id="outer", phase="started", call_id="c1")),
            Emit(body=inner, subagent_id="outer"),
        ]


def test_a_nested_sub_agent_keeps_its_parent() -> None:
    session = Session(_Nested(), clock=lambda: 0.0)
    envs = [e.event for e in session.feed(b"{}") if isinstance(e, SessionEvent)]
    subs = [
        (e.body.subagent_id, e.body.parent_subagent_id, e.subagent_id) for e in envs if isinstance(e.body, Subagent)
    ]
    # the envelope's subagentId would share the body's JSON key: the parent moves to parentSubagentId
    assert subs == [("outer", None, None), ("inner", "outer", None)]


def _bodies(envs: list[EventEnvelope]) -> list[tuple[str, str | None, str | None]]:
    """The sub-agent, task, call and warning events: kind, phase and id (a warning's text)."""
    out: list[tuple[str, str | None, str | None]] = []
    for e in envs:
        b = e.body
        if isinstance(b, Subagent):
            out.append(("subagent", b.phase, b.subagent_id))
        elif isinstance(b, Task):
            out.append(("task", b.phase, b.task_id))
        elif isinstance(b, ToolCall):
            out.append(("call", b.phase, b.call_id))
        elif isinstance(b, WarningBody):
            out.append(("warning", None, b.message))
    return out


def test_a_sub_agent_cut_off_with_its_call_fails_with_it() -> None:
    """The input ends while the call that spawned a sub-agent (and a task it runs) is open:
    the call fails, then the sub-agent and the task, each after a warning saying why."""
    spawn = ToolCall(call_id="c1", tool="Task", phase="started")
    sub = Subagent(subagent_id="c1", phase="started", name="explorer", call_id="c1")
    task = Task(task_id="k1", task_kind="shell", phase="started", label="make", parent_call_id="c2")
    shell = ToolCall(call_id="c2", tool="Bash", phase="started")
    _, envs = _scripted(
        [
            [Emit(body=TurnStart()), Emit(body=spawn), Emit(body=sub)],
            [Emit(body=shell, subagent_id="c1"), Emit(body=task, subagent_id="c1")],
            [Emit(body=Subagent(subagent_id="c1", phase="progress"))],
        ]
    )
    assert _bodies(envs)[-8:] == [
        ("warning", None, "tool call c1 (Task) never finished: the input ended first"),
        ("call", "failed", "c1"),
        ("warning", None, "tool call c2 (Bash) never finished: the input ended first"),
        ("call", "failed", "c2"),
        ("warning", None, "sub-agent c1 never finished: the input ended first while its call c1 was open"),
        ("subagent", "failed", "c1"),
        ("warning", None, "task k1 (shell) never finished: the input ended first while its call c2 was open"),
        ("task", "failed", "k1"),
    ]
    ends = [e for e in envs if isinstance(e.body, Subagent | Task) and e.body.phase == "failed"]
    sub_end, task_end = (e.body for e in ends)
    # the end names what the start (not the progress) said, and runs where the start ran
    assert isinstance(sub_end, Subagent) and (sub_end.name, sub_end.call_id) == ("explorer", "c1")
    assert isinstance(task_end, Task) and (task_end.label, task_end.parent_call_id) == ("make", "c2")
    assert [e.subagent_id for e in ends] == [None, "c1"]
    assert all(e.native.protocol == "core" and e.turn_id == "turn:1" for e in ends)
    # then the turn is cut off
    assert [type(e.body).__name__ for e in envs[-2:]] == ["Error", "TurnComplete"]


def test_a_sub_agent_that_ran_on_after_its_call_is_only_warned_of_at_close() -> None:
    """A sub-agent whose call returned (a background or collab agent) and that the input
    never ends: how it ended is not known, so a warning says so and no end is made up.
    One that ended, or was cancelled, is not settled again; one resumed runs again."""
    spawn = ToolCall(call_id="c1", tool="spawn", phase="started")
    _, envs = _scripted(
        [
            [Emit(body=spawn), Emit(body=Subagent(subagent_id="a", phase="started", call_id="c1"))],
            [Emit(body=ToolCall(call_id="c1", tool="spawn", phase="completed"))],
            [
                Emit(body=Subagent(subagent_id="b", phase="started")),
                Emit(body=Subagent(subagent_id="b", phase="completed")),
            ],
            [
                Emit(body=Subagent(subagent_id="c", phase="progress")),
                Emit(body=Subagent(subagent_id="c", phase="cancelled")),
            ],
            [Emit(body=Subagent(subagent_id="c", phase="resumed"))],
        ]
    )
    settled = [b for b in _bodies(envs) if b[0] == "warning" or b[1] == "failed"]
    assert settled == [
        ("warning", None, "sub-agent a: the input ended first, without saying how it ended"),
        ("warning", None, "sub-agent c: the input ended first, without saying how it ended"),
    ]


def test_the_sub_agents_running_are_bounded_the_oldest_forgotten_with_a_warning() -> None:
    starts: list[Item] = [Emit(body=Subagent(subagent_id=f"s{n}", phase="started")) for n in range(MAX_RUNNING + 1)]
    _, envs = _scripted([starts])
    warnings = [b[2] or "" for b in _bodies(envs) if b[0] == "warning"]
    assert warnings[0].startswith(f"sub-agent s0 forgotten: more than {MAX_RUNNING} open at once")
    # the others are warned of at close, the forgotten one is not
    closing = [w.split(":")[0] for w in warnings[1:]]
    assert closing == [f"sub-agent s{n}" for n in range(1, MAX_RUNNING + 1)]


def _with_sub_agents() -> list[Path]:
    return [c for c in capture_files() if b'"kind":"subagent"' in golden_path(c).read_bytes()]


@pytest.mark.parametrize("capture", _with_sub_agents(), ids=capture_id)
def test_a_sub_agent_cut_off_by_the_end_of_the_input_is_settled_once(capture: Path) -> None:
    """Every recording with a sub-agent, cut right after the sub-agent starts: its parent
    says it failed (its spawning call still open, failed first) or, when the input cannot
    tell how it ended, a warning names it; never both, never neither."""
    protocol = protocol_of(capture)
    records = list(records_of(companions(capture), protocol=protocol))
    for cut in range(1, len(records) + 1):
        envs = [e.event for e in convert_records(records[:cut], protocol) if isinstance(e, SessionEvent)]
        started = next((e.body for e in envs if isinstance(e.body, Subagent) and e.body.phase == "started"), None)
        if started is not None:
            break
    assert started is not None
    ends = [
        n
        for n, e in enumerate(envs)
        if isinstance(e.body, Subagent)
        and e.body.subagent_id == started.subagent_id
        and e.body.phase in ("completed", "failed", "cancelled")
    ]
    warned = [
        n
        for n, e in enumerate(envs)
        if isinstance(e.body, WarningBody) and e.body.message.startswith(f"sub-agent {started.subagent_id}")
    ]
    closing = [n for n in warned if envs[n].native.method == "open-subagent"]
    assert warned == closing  # said by the core alone, never by an adapter as well
    if not ends:  # the input cannot tell how it ended
        assert len(closing) == 1
        return
    assert len(ends) == 1
    if envs[ends[0]].native.method == "open-subagent":  # failed with its call, each after its warning
        assert closing == [ends[0] - 1]
        assert started.call_id is not None
        failed = [
            n
            for n, e in enumerate(envs)
            if isinstance(e.body, ToolCall) and e.body.call_id == started.call_id and e.body.phase == "failed"
        ]
        assert failed and failed[0] < ends[0]
    else:  # the input said it (or its thread's cut-off did): nothing more
        assert not closing


class _Scripted(Adapter):
    """Returns, for each message fed, the next list of items of ``script``; reads the core's calls."""

    protocol = "test-scripted"

    def __init__(self, script: list[list[Item]]) -> None:
        super().__init__()
        self.script = script
        self.seen: list[OpenCall | None] = []

    def feed(self, message: bytes, from_: Direction = "agent") -> list[Item]:
        self.seen.append(self.calls.get("c1"))
        return self.script.pop(0)


def _scripted(script: list[list[Item]]) -> tuple[_Scripted, list[EventEnvelope]]:
    adapter = _Scripted(script)
    session = Session(adapter, clock=lambda: 0.0)
    out = [e for _ in range(len(script)) for e in session.feed(b"{}")]
    out += session.close()
    return adapter, [e.event for e in out if isinstance(e, SessionEvent)]


def test_an_end_that_names_only_its_call_gets_the_calls_tool_title_category_and_sub_agent() -> None:
    started = ToolCall(call_id="c1", tool="Bash", phase="started", title="ls", category="execute")
    note = {"command": "ls"}
    adapter, envs = _scripted(
        [
            [Emit(body=started, subagent_id="agent-1", note=note)],
            [ToolCall(call_id="c1", tool="", phase="completed", output="a")],
            [ToolCall(call_id="c9", tool="", phase="failed")],  # never started
        ]
    )
    # the adapter reads what the core knows of the call: nothing before its start, then its start
    assert adapter.seen[0] is None
    known = adapter.seen[1]
    assert known is not None
    assert (known.tool, known.title, known.category, known.subagent_id, known.note) == (
        "Bash",
        "ls",
        "execute",
        "agent-1",
        note,
    )
    assert adapter.seen[2] is None  # ended: no longer open
    calls = [(e.body, e.subagent_id) for e in envs if isinstance(e.body, ToolCall)]
    _, (done, sub1), (unknown, sub2) = calls
    assert (done.tool, done.title, done.category, done.output, sub1) == ("Bash", "ls", "execute", "a", "agent-1")
    assert (unknown.tool, unknown.title, sub2) == ("unknown", None, None)


def test_an_update_may_name_the_call_better_and_replace_its_note() -> None:
    calls = Calls(10, 10)
    calls.refuse(ToolCall(call_id="c1", tool="other", phase="started"), None, "turn:1", note=1)
    calls.refuse(ToolCall(call_id="c1", tool="Read", phase="updated", title="a.txt", category="read"), None, None, 2)
    known = calls.get("c1")
    assert known is not None and (known.tool, known.title, known.category, known.note) == ("Read", "a.txt", "read", 2)
    assert "c1" in calls and [c.call_id for c in calls] == ["c1"]


def test_a_call_that_ended_lately_stays_readable_with_its_note() -> None:
    kept = Calls(10, 1000)  # by default an ended call is forgotten at once
    kept.refuse(ToolCall(call_id="c1", tool="Read", phase="started"), None, None)
    kept.refuse(ToolCall(call_id="c1", tool="", phase="completed"), None, None)
    assert kept.ended("c1") is None
    calls = Calls(10, 1000, ended=ENDED_CALLS)  # an adapter that asks (Adapter.ended_calls) keeps the last ones
    note = {"merged": "fields"}
    calls.refuse(ToolCall(call_id="c1", tool="Read", phase="started", title="a.txt"), "agent-1", "turn:1", note)
    assert calls.ended("c1") is None  # open, not ended
    calls.refuse(ToolCall(call_id="c1", tool="", phase="completed"), None, "turn:1")
    assert calls.get("c1") is None and "c1" not in calls
    known = calls.ended("c1")
    assert known is not None
    assert (known.tool, known.title, known.subagent_id, known.note) == ("Read", "a.txt", "agent-1", note)
    # only the last ENDED_CALLS are kept; a call never started is not one of them
    for n in range(ENDED_CALLS):
        calls.refuse(ToolCall(call_id=f"d{n}", tool="Bash", phase="started"), None, None)
        calls.refuse(ToolCall(call_id=f"d{n}", tool="Bash", phase="completed"), None, None)
    calls.refuse(ToolCall(call_id="never", tool="Bash", phase="completed"), None, None)
    assert calls.ended("c1") is None and calls.ended("never") is None
    assert calls.ended("d0") is not None
    calls.clear()
    assert calls.ended("d0") is None


def test_a_call_forgotten_past_the_bound_is_named_in_a_warning() -> None:
    script: list[list[Item]] = [[ToolCall(call_id=f"c{n}", tool="Bash", phase="started")] for n in range(4)]
    adapter = _Scripted(script)
    adapter.calls.limit = 2
    session = Session(adapter, clock=lambda: 0.0)
    envs = [e.event for _ in range(4) for e in session.feed(b"{}") if isinstance(e, SessionEvent)]
    warnings = [(e.body.message.split(":")[0], e.native.protocol) for e in envs if isinstance(e.body, WarningBody)]
    assert warnings == [("tool call c0 forgotten", "core"), ("tool call c1 forgotten", "core")]
    assert [c.call_id for c in adapter.calls] == ["c2", "c3"]


def test_a_message_in_a_turn_starts_one_only_when_none_is_open() -> None:
    text = AssistantMessage(message_id="m", text="hi")
    _, envs = _scripted(
        [
            [InTurn(), text],  # starts turn:1, from this message
            [InTurn(), text],  # inside turn:1
            [InTurn()],  # nothing to say and a turn is open: the message is kept as it is
            [TurnComplete(reason="ok")],
            [InTurn(), text],  # turn:2
        ]
    )
    kinds = [(type(e.body).__name__, e.turn_id, e.native.protocol) for e in envs]
    assert kinds[:6] == [
        ("TurnStart", "turn:1", "test-scripted"),
        ("AssistantMessage", "turn:1", "test-scripted"),
        ("AssistantMessage", "turn:1", "test-scripted"),
        ("TurnComplete", "turn:1", "test-scripted"),
        ("TurnStart", "turn:2", "test-scripted"),
        ("AssistantMessage", "turn:2", "test-scripted"),
    ]
    # a message that only belongs to the open turn is not lost: it is kept as it is
    session = Session(_Scripted([[InTurn()], [InTurn()]]), clock=lambda: 0.0)
    out = [e for _ in range(2) for e in session.feed(b"{}")]
    assert [type(e).__name__ for e in out if isinstance(e, SessionEvent | SessionUpdate)] == [
        "SessionEvent",
        "SessionUpdate",
    ]


def test_a_turns_usage_from_two_cumulative_counts() -> None:
    before = Tokens(input=100, output=10, total=110, cache_read=None)
    now = Tokens(input=250, output=30, total=280, cache_read=40, reasoning=None)
    assert tokens_since(now, before) == Tokens(input=150, output=20, total=170, cache_read=40)
    assert tokens_since(now, None) is now  # the first count is the first turn's
    call = Tokens(input=5, output=None, cache_write=2)
    assert tokens_plus(call, Tokens(input=7, total=9)) == Tokens(input=12, total=9, cache_write=2)


class _Announcing(_Scripted):
    announces_session = True


def test_messages_held_until_the_session_is_announced_are_translated_in_order_with_the_calls_they_start() -> None:
    started = ToolCall(call_id="c1", tool="Bash", phase="started", title="ls")
    created = SessionCreated(session_id="", record=SessionRecord(id="", agent="", protocol="", native_session_id="n1"))
    adapter = _Announcing(
        [
            [InTurn(), started],
            [ToolCall(call_id="c1", tool="", phase="completed")],  # still held: its call is known
            [created],
        ]
    )
    session = Session(adapter, clock=lambda: 0.0)
    assert session.feed(b"{}") == [] and session.feed(b"{}") == []  # held
    assert adapter.seen[1] is not None and adapter.seen[1].tool == "Bash"
    out = session.feed(b"{}")
    assert isinstance(out[0], SessionCreated)
    sid = session_id_for("unknown", "n1")
    events = [e.event for e in out if isinstance(e, SessionEvent)]
    assert [(type(e.body).__name__, e.seq, e.turn_id) for e in events] == [
        ("TurnStart", 1, "turn:1"),
        ("ToolCall", 2, "turn:1"),
        ("ToolCall", 3, "turn:1"),
    ]
    assert events[2].body == ToolCall(call_id="c1", tool="Bash", phase="completed", title="ls")
    assert {e.session_id for e in out} == {sid} and {e.session_id for e in events} == {sid}


# account.*: what the agents say of the account itself.


def _convert(protocol: str, lines: list[dict[str, Any]]) -> list[Any]:
    data = [json.dumps(line).encode() for line in lines]
    return list(events(iter(Message(d, "agent", None) for d in data), protocol=protocol, clock=lambda: 0.0))


def _limits(reached: str | None, plan: str | None = "plus") -> dict[str, Any]:
    limits = {"limitId": "codex", "planType": plan, "rateLimitReachedType": reached, "primary": None}
    return {"method": "account/rateLimits/updated", "params": {"rateLimits": limits}}


def test_codex_says_when_its_account_is_exhausted_and_available_again() -> None:
    out = _convert("codex-app-server", [_limits(None), _limits("primary"), _limits("primary", "plus2"), _limits(None)])
    account = [e for e in out if isinstance(e, AccountExhausted | AccountAvailable)]
    assert [(type(e).__name__, e.agent, e.account) for e in account] == [
        ("AccountExhausted", "codex", "plus"),
        ("AccountAvailable", "codex", "plus"),
    ]
    error = {"turnId": "t", "threadId": "th", "willRetry": False}
    error["error"] = {"message": "You've hit your usage limit.", "codexErrorInfo": "usageLimitExceeded"}
    out = _convert("codex-app-server", [{"method": "error", "params": error}])
    assert [e.reason for e in out if isinstance(e, AccountExhausted)] == ["limit"]


def test_claude_says_when_a_rate_limit_rejects_the_account() -> None:
    def event(status: str) -> dict[str, Any]:
        info = {"status": status, "rateLimitType": "five_hour", "resetsAt": 1}
        return {"type": "rate_limit_event", "rate_limit_info": info, "session_id": "s1"}

    out = _convert(
        "claude-stream-json", [INIT, event("allowed"), event("rejected"), event("rejected"), event("allowed")]
    )
    account = [type(e).__name__ for e in out if isinstance(e, AccountExhausted | AccountAvailable)]
    assert account == ["AccountExhausted", "AccountAvailable"]
    assert {e.agent for e in out if isinstance(e, AccountExhausted)} == {"claude-code"}


DEGRADED = [
    ("hm-json/captures/hm-handwritten/06_retry_warning_compaction.jsonl", "image"),
    (
        "codex-app-server/captures/codex-0.169.0/extra_context_window_exceeded_then_autocompact_PARTIAL.tap.jsonl",
        "message",
    ),
    (
        "codex-rollout/captures/codex-0.169.0/app-server-extra_context_window_exceeded_then_autocompact_PARTIAL.jsonl",
        "message",
    ),
]


@pytest.mark.parametrize(("rel", "what"), DEGRADED)
def test_what_an_agent_leaves_out_of_the_context_is_context_degraded(rel: str, what: str) -> None:
    degraded = [e for e in convert_capture(ADAPTERS / rel) if isinstance(e, ContextDegraded)]
    assert [[d.what for d in e.dropped] for e in degraded] == [[what]]


def _ask_user(answer: dict[str, Any]) -> list[Any]:
    questions = [
        {
            "question": "Which color?",
            "header": "Color",
            "multiSelect": False,
            "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}],
        }
    ]
    request = {
        "type": "control_request",
        "request_id": "q1",
        "request": {"subtype": "can_use_tool", "tool_name": "AskUserQuestion", "input": {"questions": questions}},
    }
    response = {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": "q1", "response": answer},
    }
    data = [(json.dumps(INIT).encode(), "agent"), (json.dumps(request).encode(), "agent")]
    data.append((json.dumps(response).encode(), "client"))
    records = [Message(d, side, None) for d, side in data]  # type: ignore[arg-type]
    return [
        e.event
        for e in events(records, protocol="claude-stream-json", clock=lambda: 0.0)
        if isinstance(e, SessionEvent)
    ]


def test_claude_ask_user_question_is_a_user_question_answered() -> None:
    answers = {"questions": [], "answers": {"Which color?": "Red"}}
    envs = _ask_user({"behavior": "allow", "updatedInput": answers})
    (asked,) = [e.body for e in envs if isinstance(e.body, UserQuestion)]
    assert [(q.prompt, q.header, [o.label for o in q.options]) for q in asked.questions] == [
        ("Which color?", "Color", ["Red", "Blue"])
    ]
    assert not [e for e in envs if isinstance(e.body, PermissionRequest)]
    (resolved,) = [e.body for e in envs if isinstance(e.body, RequestResolved)]
    assert (resolved.outcome, resolved.decision) == ("answered", "answered")
    envs = _ask_user({"behavior": "deny", "message": "no"})
    (resolved,) = [e.body for e in envs if isinstance(e.body, RequestResolved)]
    assert (resolved.outcome, resolved.decision) == ("cancelled", "cancel")


def _elicit(answer: dict[str, Any]) -> list[EventEnvelope]:
    schema = {
        "type": "object",
        "properties": {
            "question_0": {
                "type": "string",
                "title": "Which color?",
                "oneOf": [{"const": "Red", "title": "Red"}, {"const": "Blue", "title": "Blue"}],
            }
        },
        "required": ["question_0"],
    }
    wire: list[tuple[dict[str, Any], str]] = [
        ({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}, "client"),
        ({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}}, "agent"),
        ({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/"}}, "client"),
        ({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "S"}}, "agent"),
        (
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "elicitation/create",
                "params": {"sessionId": "S", "message": "Pick one", "mode": "form", "requestedSchema": schema},
            },
            "agent",
        ),
        ({"jsonrpc": "2.0", "id": 7, "result": answer}, "client"),
    ]
    records = [Message(json.dumps(m).encode(), side, None) for m, side in wire]  # type: ignore[arg-type]
    return [e.event for e in events(records, protocol="acp", clock=lambda: 0.0) if isinstance(e, SessionEvent)]


def test_an_acp_elicitation_is_a_user_question_and_its_answer_resolves_it() -> None:
    envs = _elicit({"action": "accept", "content": {"question_0": "Red"}})
    (asked,) = [e.body for e in envs if isinstance(e.body, UserQuestion)]
    assert [(q.id, q.prompt, [o.id for o in q.options], q.allow_free_text) for q in asked.questions] == [
        ("question_0", "Which color?", ["Red", "Blue"], False)
    ]
    (resolved,) = [e.body for e in envs if isinstance(e.body, RequestResolved)]
    assert (resolved.request_id, resolved.outcome, resolved.decision) == ("7", "answered", "answered")
    for action in ("decline", "cancel"):
        (resolved,) = [e.body for e in _elicit({"action": action}) if isinstance(e.body, RequestResolved)]
        assert resolved.decision == "cancel"


# --------------------------------------------------------------------------
# A session's files read in time order (``Adapter.interleave``)


def _line(ts: str | None, n: int) -> Message:
    body: dict[str, Any] = {"n": n} if ts is None else {"n": n, "timestamp": ts}
    return Message(data=json.dumps(body).encode(), from_="agent", line=n)


def _ns(records: Iterable[Record]) -> list[int]:
    return [json.loads(r.data)["n"] for r in records if isinstance(r, Message)]


def test_a_sessions_files_are_merged_in_time_order_each_keeping_its_own() -> None:
    main = [_line("2026-01-01T00:00:01.000Z", 1), _line(None, 2), _line("2026-01-01T00:00:05.000Z", 3)]
    # a companion's untimed head goes with its first timed line; a time going back stays in place
    sub = [_line(None, 10), _line("2026-01-01T00:00:02.000Z", 11), _line("2026-01-01T00:00:01.500Z", 12)]
    assert _ns(merge_records([main, sub], "claude-transcript")) == [1, 2, 10, 11, 12, 3]
    # a tie goes to the session's own file
    tie = [_line("2026-01-01T00:00:01.000Z", 20)]
    assert _ns(merge_records([tie, main[:1]], "claude-transcript")) == [20, 1]
    # an adapter that does not interleave reads one file after the other
    assert _ns(merge_records([main, sub], "hm-json")) == [1, 2, 3, 10, 11, 12]


def test_a_stored_sub_agent_is_placed_inside_its_parents_turn_as_live() -> None:
    """The transcript and the live stream of one session say the same about its sub-agent."""
    base = "claude-code-2.1.332/24-subagent-with-tool"
    (stored,) = sorted((ADAPTERS / "claude-transcript/captures" / base).glob("*.jsonl"))

    def shape(rel: Path) -> list[tuple[str | None, str | None, str]]:
        envs = [e.event for e in convert_capture(rel) if isinstance(e, SessionEvent)]
        return [(e.turn_id, e.subagent_id, type(e.body).__name__) for e in envs if e.subagent_id is not None]

    live = shape(ADAPTERS / "claude-stream-json/captures" / f"{base}.jsonl")
    from_file = shape(stored)
    assert from_file and all(turn == "turn:1" for turn, _, _ in from_file)
    # the calls the sub-agent made, in the same turn and order (stream-json leaves out the
    # sub-agent's text and usage, the file its task progress)
    calls = {"UserMessage", "ToolCall", "PermissionAuto", "CommandOutput"}
    assert [x for x in live if x[2] in calls] == [x for x in from_file if x[2] in calls]


def test_an_hm_fork_is_a_new_session_linked_to_the_one_it_forks() -> None:
    evs = convert_capture(ADAPTERS / "hm-json/captures/hm-handwritten/08_rpc_session.tap.jsonl")
    created = [e for e in evs if isinstance(e, SessionCreated)]
    assert [c.record.native_session_id for c in created] == ["20261112-m4q8zt", "20261112-w2n6hs"]
    parent, fork = created
    assert fork.session_id != parent.session_id
    assert fork.record.fork_of == parent.session_id
    assert fork.session_id == session_id_for("hm", "20261112-w2n6hs")  # the fork read alone has the same id
    for c in created:
        envs = [e.event for e in evs if isinstance(e, SessionEvent) and e.session_id == c.session_id]
        assert [e.seq for e in envs] == list(range(1, len(envs) + 1))
        turns = [e.turn_id for e in envs if isinstance(e.body, TurnStart)]
        assert turns == [f"turn:{n}" for n in range(1, len(turns) + 1)]
    # the forked session ends where the fork begins
    states = [(e.session_id, e.state) for e in evs if isinstance(e, SessionStateChanged)]
    assert (parent.session_id, "ended") in states


def test_a_transcript_that_starts_with_clear_says_conversation_reset() -> None:
    """Claude Code writes ``/clear`` at the head of the new conversation's file."""
    capture = ADAPTERS / "claude-transcript/captures/external-jnarowski__agentcmd/full-session-two.jsonl"
    envs = [e.event for e in convert_capture(capture) if isinstance(e, SessionEvent)]
    resets = [e for e in envs if isinstance(e.body, ConversationReset)]
    assert [(r.body.agent_session_id, r.body.trigger) for r in resets if isinstance(r.body, ConversationReset)] == [
        ("8a2518dd-ff41-4d5f-83a1-407b03598cc6", "clear")
    ]
    assert resets[0].turn_id is None and envs.index(resets[0]) < min(
        i for i, e in enumerate(envs) if isinstance(e.body, TurnStart)
    )


def test_ended_ids_are_remembered_up_to_the_bound_then_the_oldest_forgotten() -> None:
    calls = Calls(10, 64)
    for n in range(1000):
        calls.refuse(_call("started", f"c{n}"), None, None)
        assert calls.refuse(_call("completed", f"c{n}"), None, None) is None
        # the last 64 ended calls are always known: a repeated end of any of them is refused
        assert calls.refuse(_call("completed", f"c{max(0, n - 63)}"), None, None) is not None
    # the oldest are forgotten (at most a sixteenth more than the bound is kept): memory stays bounded
    remembered = 0
    for n in reversed(range(1000)):  # newest first, up to the first forgotten
        if calls.refuse(_call("completed", f"c{n}"), None, None) is None:
            break
        remembered += 1
    assert 64 <= remembered <= 64 + 64 // 16

"""The codex-app-server adapter: Codex's app-server JSON-RPC, both directions."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import normalize
from helpers import ADAPTERS, convert_capture, fixed_clock
from normalize import (
    AssistantDelta,
    AssistantMessage,
    Body,
    CommandOutput,
    Direction,
    Emit,
    Error,
    EventEnvelope,
    FileDiff,
    Item,
    MalformedMessage,
    McpTool,
    Message,
    PermissionRequest,
    RequestResolved,
    Session,
    SessionCreated,
    SessionEvent,
    SessionResumed,
    SessionUpdate,
    Subagent,
    Task,
    ToolCall,
    TurnComplete,
    TurnStart,
    Usage,
    UserMessage,
    read_records,
)
from normalize import Warning as WarningBody
from normalize._connection import Connection
from normalize._model import _Core
from normalize.adapters.codex_app_server import CodexAppServerAdapter

KIT = ADAPTERS / "codex-app-server" / "captures"
#: Captures per recorded Codex version (the folder names the version): the versions whose
#: facts these tests state (0.120 in tests/test_history.py and the goldens too)
RECORDED = {
    "codex-0.77.0": 9,
    "codex-0.87.0": 10,
    "codex-0.96.0": 10,
    "codex-0.107.0": 10,
    "codex-0.120.0": 9,
    "codex-0.125.0": 10,
    "codex-0.131.0": 10,
    "codex-0.142.2": 10,
    "codex-0.155.0": 10,
    "codex-0.169.0": 7,
    "codex-0.171.0": 10,
}
CAPTURES = sorted(c for c in KIT.rglob("*.jsonl") if c.relative_to(KIT).parts[0] in RECORDED)
VERSION = "0.169.0"  # of the hand-built messages below


def version_of(capture: Path) -> str | None:
    """The Codex version a capture was recorded with, from its folder name."""
    folder = capture.parent.name
    return folder.removeprefix("codex-") if folder in RECORDED else None


#: Methods kept as session.update, each for a stated reason (adapters/codex-app-server/README.md).
#: The client's requests (initialize, thread/start, turn/start, turn/interrupt) are kept too:
#: their responses and the notifications that follow carry what they did.
KEPT_RAW = {
    "initialize",  # the response: the version goes into the session record
    "initialized",  # handshake acknowledgement, no content
    "turn/interrupt",  # the empty response: turn/completed says how the turn ended
    "remoteControl/status/changed",  # remote-control availability: nothing in the model
    "thread/status/changed",  # the Session derives running / waiting / idle itself
    "serverRequest/resolved",  # after the client's answer, which already gave request-resolved
    "thread/goal/cleared",  # not in the reference (seen in 0.171.0): carries only a thread id
}
#: Items whose item/started holds no content yet (the deltas and item/completed carry it).
CONTENTLESS_STARTS = {"userMessage", "agentMessage", "reasoning", "plan"}
#: Snapshot notifications: an identical re-send is not reported again.
SNAPSHOTS = {"turn/diff/updated", "thread/tokenUsage/updated", "account/rateLimits/updated"}
#: Versions that send every notification a second time as a ``codex/event/*`` one (the older
#: protocol's event, naming the thread as ``conversationId``): kept as session.update only,
#: the v2 notification beside it is the source.
DOUBLED = {"0.77.0", "0.87.0", "0.96.0", "0.107.0"}
#: Versions that announce no turn of a sub-agent's thread (no ``turn/started``, as no
#: ``thread/started``): the turn's first item starts it.
UNANNOUNCED_SUB_AGENT_TURNS = {"0.87.0", "0.96.0", "0.107.0"}
#: Versions that complete a declined command twice (``declined``, then ``failed`` with "exec
#: command rejected by user"): the second completion repeats the end already reported.
DECLINED_COMPLETED_TWICE = {"0.77.0", "0.87.0"}
#: Versions that may send a turn's first item (the prompt) before its ``turn/started``: the
#: item starts the turn, the ``turn/started`` after it starts none.
ITEM_BEFORE_TURN_STARTED = {"0.107.0"}


# --------------------------------------------------------------- helpers


class Fed:
    """One native message and what the Session made of it."""

    def __init__(self, msg: dict[str, Any], from_: str, out: list[_Core]) -> None:
        self.msg = msg
        self.from_ = from_
        self.out = out

    @property
    def method(self) -> str | None:
        return self.msg.get("method")

    @property
    def params(self) -> dict[str, Any]:
        return self.msg.get("params") or {}

    def bodies(self) -> list[Any]:
        return [e.event.body for e in self.out if isinstance(e, SessionEvent)]


def feed_capture(capture: Path) -> tuple[list[Fed], list[_Core]]:
    # a connection: a sub-agent's thread (i_collab_agent) is a session of its own
    session = Connection(CodexAppServerAdapter, clock=fixed_clock)
    fed: list[Fed] = []
    for rec in read_records([capture]):
        assert isinstance(rec, Message)
        out = session.feed(rec.data, rec.from_, t=rec.t)
        fed.append(Fed(json.loads(rec.data), rec.from_, out))
    return fed, session.close()


def envelopes(fed: list[Fed], tail: list[_Core]) -> list[EventEnvelope]:
    return [e.event for f in fed for e in f.out if isinstance(e, SessionEvent)] + [
        e.event for e in tail if isinstance(e, SessionEvent)
    ]


def item_of(f: Fed) -> dict[str, Any]:
    return f.params.get("item") or {}


def translate(*messages: tuple[str, dict[str, Any]]) -> list[Item]:
    """Feed inline messages to a fresh adapter; every item they give, in order."""
    adapter = CodexAppServerAdapter()
    out: list[Item] = []
    for from_, msg in messages:
        out.extend(adapter.feed(json.dumps(msg).encode(), from_))  # type: ignore[arg-type]
    return out


def converse(*messages: tuple[str, dict[str, Any]]) -> list[EventEnvelope]:
    """Feed inline messages, after a ``thread/started``, through a Session (whose table of
    calls the adapter reads at a call's end); every event, in order."""
    session = Session(CodexAppServerAdapter(), clock=fixed_clock)
    thread = {"method": "thread/started", "params": {"thread": {"id": "th", "cwd": "/p", "cliVersion": VERSION}}}
    out: list[_Core] = []
    for from_, msg in (("agent", thread), *messages):
        out += session.feed(json.dumps(msg).encode(), from_)  # type: ignore[arg-type]
    out += session.close()
    return [e.event for e in out if isinstance(e, SessionEvent)]


def bodies_of(items: list[Item]) -> list[Any]:
    return [i.body if isinstance(i, Emit) else i for i in items if isinstance(i, (Body, Emit))]


ids = [str(c.relative_to(KIT)) for c in CAPTURES]


@pytest.fixture(scope="module", params=CAPTURES, ids=ids)
def run(request: pytest.FixtureRequest) -> tuple[Path, list[Fed], list[_Core]]:
    fed, tail = feed_capture(request.param)
    return request.param, fed, tail


# --------------------------------------------------------------- over every capture


def test_the_kit_holds_every_capture() -> None:
    for folder, count in RECORDED.items():
        assert len([c for c in CAPTURES if c.parent.name == folder]) == count, folder


def test_no_error_event_unless_codex_reported_one(run: tuple[Path, list[Fed], list[_Core]]) -> None:
    capture, fed, tail = run
    for f in fed:
        errors = [b for b in f.bodies() if isinstance(b, Error)]
        if f.method == "error" and f.params["willRetry"]:
            # a retry notice: Codex retries on its own, the turn goes on
            assert errors == []
            assert [type(b) for b in f.bodies()] == [WarningBody]
        elif f.method == "error":
            assert len(errors) == 1
            assert errors[0].recoverable is False
        elif f.method == "turn/completed" and f.params["turn"]["status"] == "failed":
            # the terminal `error` notification before it already reported it
            assert errors == []
        else:
            assert errors == [], (f.method, errors)
    cut = [e for e in tail if isinstance(e, SessionEvent) and isinstance(e.event.body, Error)]
    assert bool(cut) == ("PARTIAL" in capture.name)


def test_no_session_update_for_a_documented_method(run: tuple[Path, list[Fed], list[_Core]]) -> None:
    capture, fed, _ = run
    seen: set[tuple[str, str]] = set()
    itemized: set[tuple[str, str]] = set()  # (thread, turn) an item named so far
    declined: set[str] = set()  # items completed ``declined`` so far
    for f in fed:
        updates = [e for e in f.out if isinstance(e, SessionUpdate)]
        content = {k: v for k, v in f.params.items() if k not in ("threadId", "turnId")}
        snapshot = json.dumps(content, sort_keys=True)
        first_time = (str(f.method), snapshot) not in seen
        seen.add((str(f.method), snapshot))
        started_by_its_item = f.method == "turn/started" and (f.params["threadId"], f.params["turn"]["id"]) in itemized
        completed_again = f.method == "item/completed" and item_of(f).get("id") in declined
        if f.method in ("item/started", "item/completed"):
            itemized.add((f.params["threadId"], f.params["turnId"]))
            if item_of(f).get("status") == "declined":
                declined.add(item_of(f)["id"])
        if str(f.method).startswith("codex/event/"):
            # the older protocol's copy of a v2 notification: said by that notification
            assert version_of(capture) in DOUBLED, f.method
            assert all(isinstance(e, SessionUpdate) for e in f.out), f.method
        if not updates:
            continue
        carried_by_core_event = any(
            not isinstance(e, (SessionEvent, SessionUpdate)) and type(e).__name__ != "SessionStateChanged"
            for e in f.out
        )
        method = f.method
        if method is None:  # a response: named by the request it answers
            method = updates[0].update.method
        ok = (
            method in KEPT_RAW
            or (f.from_ == "client" and "method" in f.msg and "id" in f.msg)
            or carried_by_core_event
            or (method == "item/started" and item_of(f).get("type") in CONTENTLESS_STARTS)
            # a sub-agent's end is said at its item/started; its item/completed repeats it
            or (method == "item/completed" and item_of(f).get("type") == "subAgentActivity")
            or (method == "item/reasoning/summaryPartAdded" and f.params.get("summaryIndex") == 0)
            or (method in SNAPSHOTS and not first_time)
            or (method == "turn/diff/updated" and f.params.get("diff") in {json.loads(s).get("diff") for _, s in seen})
            # 0.77 to 0.107: every notification said again as a codex/event/* one
            or (str(method).startswith("codex/event/") and version_of(capture) in DOUBLED)
            # 0.107: the prompt's item came first and started the turn this one names
            or (started_by_its_item and version_of(capture) in ITEM_BEFORE_TURN_STARTED)
            # 0.77, 0.87: a declined command's second completion repeats the end already said
            or (completed_again and version_of(capture) in DECLINED_COMPLETED_TWICE)
        )
        assert ok, f"{method} kept as session.update"


def test_every_tool_item_ends_in_exactly_one_terminal_phase(run: tuple[Path, list[Fed], list[_Core]]) -> None:
    _, fed, tail = run
    tool_items = {
        item_of(f)["id"]: item_of(f)["type"]
        for f in fed
        if f.method in ("item/started", "item/completed")
        and (
            item_of(f).get("type") in ("commandExecution", "fileChange", "mcpToolCall", "collabAgentToolCall")
            # multi_agent_v2's spawn: the sub-agent's start is the spawn_agent call
            or (item_of(f).get("type") == "subAgentActivity" and item_of(f).get("kind") == "started")
        )
    }
    envs = envelopes(fed, tail)
    terminal = Counter(
        e.body.call_id for e in envs if isinstance(e.body, ToolCall) and e.body.phase in ("completed", "failed")
    )
    mcp_terminal = Counter(
        e.body.call_id for e in envs if isinstance(e.body, McpTool) and e.body.phase in ("completed", "failed")
    )
    for item_id, kind in tool_items.items():
        assert terminal[item_id] == 1, item_id
        if kind == "mcpToolCall":
            assert mcp_terminal[item_id] == 1, item_id
    assert set(terminal) == set(tool_items)


def test_one_turn_complete_per_native_turn_end(run: tuple[Path, list[Fed], list[_Core]]) -> None:
    capture, fed, tail = run
    for f in fed:
        completes = [b for b in f.bodies() if isinstance(b, TurnComplete)]
        if f.method == "turn/completed":
            turn = f.params["turn"]
            assert len(completes) == 1
            assert completes[0].native_turn_id == turn["id"]
            # only a turn that completed normally is "ok"; a failed one did not
            assert completes[0].reason == ("ok" if turn["status"] == "completed" else "interrupt")
            assert completes[0].stop_reason == turn["status"]
        else:  # only history replayed by thread/resume ends turns elsewhere
            assert all(e.event.origin == "replay" for e in f.out
                       if isinstance(e, SessionEvent) and isinstance(e.event.body, TurnComplete))  # fmt: skip
    announced = {(f.params["threadId"], f.params["turn"]["id"]) for f in fed if f.method == "turn/started"}
    # a turn no turn/started announces (a sub-agent's, 0.87 to 0.107): its first item starts it
    unannounced: dict[tuple[str, str], Fed] = {}
    for f in fed:
        if f.method in ("item/started", "item/completed"):
            turn = (f.params["threadId"], f.params["turnId"])
            if turn not in announced:
                unannounced.setdefault(turn, f)
    assert not unannounced or version_of(capture) in UNANNOUNCED_SUB_AGENT_TURNS
    threads = {f.params["thread"]["id"] for f in fed if f.method == "thread/started"}
    starts = [e for e in envelopes(fed, tail) if isinstance(e.body, TurnStart) and e.origin != "replay"]
    for f in unannounced.values():
        assert f.params["threadId"] not in threads  # a sub-agent's thread
        # (said when the thread's session is known: 0.107's speaks before the spawn names it)
        assert [json.loads(bytes(e.native.payload)) for e in starts].count(f.msg) == 1
    started = sum(1 for f in fed if f.method == "turn/started") + len(unannounced)
    cut_off = [e for e in tail if isinstance(e, SessionEvent) and isinstance(e.event.body, TurnComplete)]
    ended = sum(1 for f in fed if f.method == "turn/completed")
    assert started == ended + len(cut_off)
    for e in cut_off:
        assert isinstance(e.event.body, TurnComplete) and e.event.body.reason == "interrupt"
    assert bool(cut_off) == ("PARTIAL" in capture.name)


def test_approvals_are_resolved_with_the_decision_sent(run: tuple[Path, list[Fed], list[_Core]]) -> None:
    _, fed, _ = run
    asked = {f.msg["id"]: f for f in fed if f.from_ == "agent" and "method" in f.msg and "id" in f.msg}
    for f in fed:
        if f.from_ == "client" and "result" in f.msg and f.msg["id"] in asked:
            (resolved,) = [b for b in f.bodies() if isinstance(b, RequestResolved)]
            assert resolved.request_id == str(f.msg["id"])
            assert resolved.outcome == "answered"
            assert json.loads(bytes(resolved.answer)) == f.msg["result"]
    for f in asked.values():
        (req,) = [b for b in f.bodies() if isinstance(b, PermissionRequest)]
        assert req.tool_call.call_id == f.params["itemId"]


def test_text_and_output_are_never_doubled(run: tuple[Path, list[Fed], list[_Core]]) -> None:
    capture, fed, tail = run
    envs = envelopes(fed, tail)
    deltas: dict[str, str] = {}
    for e in envs:
        if isinstance(e.body, AssistantDelta):
            deltas[e.body.message_id] = deltas.get(e.body.message_id, "") + e.body.text
    messages = [e.body for e in envs if isinstance(e.body, AssistantMessage)]
    assert len({m.message_id for m in messages}) == len(messages)  # one message per id
    for m in messages:
        assert deltas.get(m.message_id, m.text) == m.text
    ended: set[str] = set()
    for f in fed:
        if f.method == "item/completed" and item_of(f).get("type") == "commandExecution":
            item = item_of(f)
            if item["id"] in ended:
                # 0.77, 0.87: a declined command completes again, ``failed`` with "exec command
                # rejected by user": its end, already said by the first, is not said twice
                assert version_of(capture) in DECLINED_COMPLETED_TWICE
                assert f.bodies() == []
                continue
            ended.add(item["id"])
            streamed = any(
                g.method == "item/commandExecution/outputDelta" and g.params["itemId"] == item["id"] for g in fed
            )
            outputs = [b for b in f.bodies() if isinstance(b, CommandOutput)]
            if streamed or not item["aggregatedOutput"]:
                assert outputs == []
            else:
                assert [o.delta for o in outputs] == [item["aggregatedOutput"]]
            (call,) = [b for b in f.bodies() if isinstance(b, ToolCall)]
            assert call.output == item["aggregatedOutput"]
            assert call.exit_code == item["exitCode"]


def test_the_session_record_names_the_thread(run: tuple[Path, list[Fed], list[_Core]]) -> None:
    # a new thread is announced by thread/started, a resumed one by the thread/resume response
    capture, fed, _ = run
    records = [(f, e) for f in fed for e in f.out if isinstance(e, SessionCreated | SessionResumed)]
    if version_of(capture) is None:
        return
    (f, created), *_ = records
    thread = f.params.get("thread") or (f.msg.get("result") or {}).get("thread")
    assert thread is not None
    assert isinstance(created, SessionResumed) == (f.method != "thread/started")
    assert created.record.native_session_id == thread["id"]
    assert created.record.cwd == thread["cwd"]
    # a thread object without one (up to 0.169): the model its opener's response names
    opened = [g.msg["result"] for g in fed if g.method is None and (g.msg.get("result") or {}).get("thread")]
    named = next((r.get("model") for r in opened if r["thread"]["id"] == thread["id"]), None)
    assert created.record.model == (thread.get("model") or named)
    assert created.record.agent_version == version_of(capture)
    assert created.record.agent == "codex"


def test_turn_usage_adds_up_to_the_session_total(run: tuple[Path, list[Fed], list[_Core]]) -> None:
    _, fed, tail = run
    envs = envelopes(fed, tail)
    for sid in {e.session_id for e in envs}:  # each thread (a sub-agent's too) counts its own
        usages = [
            e.body for e in envs if e.session_id == sid and isinstance(e.body, Usage) and e.body.tokens is not None
        ]
        session = [u for u in usages if u.scope == "session"]
        turns = [u for u in usages if u.scope == "turn"]
        if not session:
            continue
        assert session[-1].tokens is not None
        running = session[-1].tokens.total or 0
        total = sum(u.tokens.total or 0 for u in turns if u.tokens)
        if any(f.method == "thread/resume" for f in fed):
            # the thread's running total also counts the turns of the process before the resume
            assert total <= running
        else:
            assert total == running


def test_every_event_carries_its_native_message(run: tuple[Path, list[Fed], list[_Core]]) -> None:
    # Events come out in the order of the messages they carry; events held until the
    # session was announced come out with the announcing message's feed.
    _, fed, _ = run
    position = 0
    for i, f in enumerate(fed):
        for e in f.out:
            if isinstance(e, SessionEvent) and e.event.native.protocol != "core":
                payload = json.loads(bytes(e.event.native.payload))
                while fed[position].msg != payload:
                    position += 1
                    assert position <= i, "an event carries a message not fed yet, or out of order"


# --------------------------------------------------------------- precise mappings


def test_request_ids_colliding_across_directions_are_told_apart() -> None:
    items = translate(
        ("client", {"method": "initialize", "id": 0, "params": {"clientInfo": {"name": "x", "version": "1"}}}),
        (
            "agent",
            {
                "method": "item/commandExecution/requestApproval",
                "id": 0,
                "params": {"threadId": "t", "turnId": "u", "itemId": "call_1", "command": "ls", "cwd": "/p"},
            },
        ),
        ("client", {"id": 0, "result": {"decision": "acceptForSession"}}),
        ("agent", {"id": 0, "result": {"userAgent": "x/9.9.9 (Linux)"}}),
    )
    bodies = bodies_of(items)
    (req,) = [b for b in bodies if isinstance(b, PermissionRequest)]
    assert req.request_id == "0" and req.tool_call.call_id == "call_1"
    assert req.detail is not None and req.detail.command == "ls"
    assert [o.id for o in req.options] == ["accept", "acceptForSession", "decline", "cancel"]
    (res,) = [b for b in bodies if isinstance(b, RequestResolved)]
    assert json.loads(bytes(res.answer)) == {"decision": "acceptForSession"}


def test_a_command_without_deltas_reports_its_output_once() -> None:
    item = {"type": "commandExecution", "id": "c", "command": "ls", "cwd": "/p", "status": "inProgress"}
    done = {**item, "status": "failed", "aggregatedOutput": "boom\n", "exitCode": 2}
    items = translate(
        ("agent", {"method": "item/started", "params": {"item": item, "turnId": "u"}}),
        ("agent", {"method": "item/completed", "params": {"item": done, "turnId": "u"}}),
    )
    # (no turn/started: the item starts its turn, as 0.96's sub-agent threads do)
    bodies: list[Any] = [b for b in bodies_of(items) if isinstance(b, ToolCall | CommandOutput)]
    assert [type(b).__name__ for b in bodies] == ["ToolCall", "CommandOutput", "ToolCall"]
    assert bodies[1] == CommandOutput(call_id="c", stream="merged", delta="boom\n")
    assert bodies[2].phase == "failed" and bodies[2].exit_code == 2 and bodies[2].category == "execute"


def test_an_mcp_call_without_arguments_has_none_and_reads_back_as_written() -> None:
    """Absent arguments are left out, not written as null: a reader of the normalized line
    gets the same line back (it reads a null as absent)."""
    item = {"type": "mcpToolCall", "id": "m", "server": "docs", "tool": "search", "status": "inProgress"}
    done = {**item, "status": "completed", "result": {"content": []}}
    session = Session(CodexAppServerAdapter(), clock=fixed_clock)
    thread = {"method": "thread/started", "params": {"thread": {"id": "th", "cwd": "/p", "cliVersion": VERSION}}}
    out = session.feed(json.dumps(thread).encode())
    for method, msg in (("item/started", item), ("item/completed", done)):
        out += session.feed(json.dumps({"method": method, "params": {"item": msg, "turnId": "u"}}).encode())
    out += session.close()
    calls = [e.event.body for e in out if isinstance(e, SessionEvent) and isinstance(e.event.body, (ToolCall, McpTool))]
    assert [(type(b).__name__, b.phase) for b in calls] == [
        ("ToolCall", "started"),
        ("McpTool", "started"),
        ("ToolCall", "completed"),
        ("McpTool", "completed"),
    ]
    assert [b.input if isinstance(b, ToolCall) else b.arguments for b in calls] == [None] * 4
    for core in out:
        line = normalize.encode(core)
        assert json.loads(normalize.encode(normalize.decode(line))) == json.loads(line)


def test_an_added_file_gives_a_hunk_and_a_declined_patch_fails() -> None:
    change = {"path": "/p/new.txt", "kind": {"type": "add"}, "diff": "a\nb\n"}
    item = {"type": "fileChange", "id": "f", "changes": [change], "status": "inProgress"}
    events = converse(
        ("agent", {"method": "item/started", "params": {"item": item, "turnId": "u"}}),
        ("agent", {"method": "item/completed", "params": {"item": {**item, "status": "declined"}}}),
    )
    bodies = [e.body for e in events]
    diffs = [b for b in bodies if isinstance(b, FileDiff)]
    assert diffs == [FileDiff(call_id="f", path="/p/new.txt", diff="@@ -0,0 +1,2 @@\n+a\n+b\n", change_kind="add")]
    assert [b.phase for b in bodies if isinstance(b, ToolCall)] == ["started", "failed"]


TURN = {"id": "u", "items": [], "status": "inProgress"}
INTERRUPTED = {**TURN, "status": "interrupted"}


def test_calls_in_flight_at_an_interrupt_end_failed_with_what_their_start_said() -> None:
    command = {"type": "commandExecution", "id": "c", "command": "make", "cwd": "/p", "status": "inProgress"}
    mcp = {"type": "mcpToolCall", "id": "m", "server": "fs", "tool": "read", "arguments": {"p": 1}}
    spawn = {"type": "subAgentActivity", "id": "s", "kind": "started", "agentThreadId": "th2", "agentPath": "/a"}
    events = converse(
        ("agent", {"method": "turn/started", "params": {"threadId": "th", "turn": TURN}}),
        *[("agent", {"method": "item/started", "params": {"item": i, "turnId": "u"}}) for i in (command, mcp, spawn)],
        ("agent", {"method": "item/commandExecution/outputDelta", "params": {"itemId": "c", "delta": "cc -c a.c\n"}}),
        ("agent", {"method": "item/agentMessage/delta", "params": {"itemId": "a", "delta": "x"}}),
        ("agent", {"method": "turn/completed", "params": {"threadId": "th", "turn": INTERRUPTED}}),
    )
    ended = [e for e in events if isinstance(e.body, ToolCall) and e.body.phase == "failed"]
    # closed by the adapter from the turn's end (not settled by the core), oldest first
    assert [e.native.method for e in ended] == ["turn/completed"] * 3
    run, read, spawned = (e.body for e in ended)
    assert isinstance(run, ToolCall) and isinstance(read, ToolCall) and isinstance(spawned, ToolCall)
    assert (run.call_id, run.tool, run.title, run.category) == ("c", "exec_command", "make", "execute")
    assert run.input == {"command": "make", "cwd": "/p"}
    assert (read.tool, read.title, read.category) == ("read", "fs.read", "mcp")
    assert json.loads(bytes(read.input)) == {"p": 1}
    assert (spawned.tool, spawned.title, spawned.category) == ("spawnAgent", "/a", "other")
    mcp_ends = [e.body for e in events if isinstance(e.body, McpTool) and e.body.phase == "failed"]
    assert [(b.server, b.tool) for b in mcp_ends] == [("fs", "read")]
    # the streamed output is not repeated, and no call was left for the core to settle: only
    # the sub-agent, whose end the input never says (its thread is not on this connection)
    assert [e.body.delta for e in events if isinstance(e.body, CommandOutput)] == ["cc -c a.c\n"]
    assert [e.body.message for e in events if isinstance(e.body, WarningBody)] == [
        "sub-agent th2: the input ended first, without saying how it ended",
        "task th2 (collab): the input ended first, without saying how it ended",
    ]


def test_a_spawn_said_only_at_its_end_starts_the_sub_agent_and_ends_it_when_told() -> None:
    """0.142 sends a ``subAgentActivity`` only as ``item/completed``: the spawn's call and
    the sub-agent start there, and a later ``completed`` notice ends the sub-agent."""
    spawn = {"type": "subAgentActivity", "id": "s", "kind": "started", "agentThreadId": "th2", "agentPath": "/a"}
    done = {**spawn, "id": "subagent-completed-1", "kind": "completed"}
    events = converse(
        ("agent", {"method": "turn/started", "params": {"threadId": "th", "turn": TURN}}),
        *[("agent", {"method": "item/completed", "params": {"item": i, "turnId": "u"}}) for i in (spawn, done)],
    )
    said = [
        (type(e.body).__name__, e.body.phase)
        for e in events
        if isinstance(e.body, (ToolCall, Subagent, Task)) and e.native.protocol != "core"
    ]
    assert said == [
        ("ToolCall", "started"),
        ("Subagent", "started"),
        ("Task", "started"),
        ("ToolCall", "completed"),
        ("Subagent", "completed"),
        ("Task", "completed"),
    ]
    subs = [e.body for e in events if isinstance(e.body, Subagent)]
    assert {(b.subagent_id, b.call_id, b.name) for b in subs} == {("th2", "s", "/a")}


def _notice(method: str, thread: str, **params: Any) -> bytes:
    return json.dumps({"method": method, "params": {"threadId": thread, **params}}).encode()


def test_a_sub_agent_thread_heard_before_its_spawn_is_linked_to_its_parent() -> None:
    """0.142 sends a sub-agent thread's first notifications before the parent's
    ``item/completed`` that names it: that thread is still linked to its parent (the same
    session id as its own rollout), and what it said first comes out first."""
    conn = Connection(CodexAppServerAdapter, clock=fixed_clock)
    thread = {"id": "th", "cwd": "/p", "cliVersion": "0.142.2"}
    spawn = {"type": "subAgentActivity", "id": "s", "kind": "started", "agentThreadId": "th2", "agentPath": "/a"}
    out: list[_Core] = []
    for msg in (
        json.dumps({"method": "thread/started", "params": {"thread": thread}}).encode(),
        _notice("turn/started", "th", turn=TURN),
        _notice("warning", "th2", message="sub-agent heard first"),
        _notice("item/completed", "th", item=spawn, turnId="u"),
        _notice("turn/started", "th2", turn={**TURN, "id": "u2"}),
    ):
        out += conn.feed(msg)
    out += conn.close()
    created = [e for e in out if isinstance(e, SessionCreated)]
    parent, child = (c.record for c in created)
    assert (child.native_session_id, child.parent_id) == ("th2", parent.id)
    assert child.id == normalize.session_id_for("codex", "th2")
    mine = [e.event for e in out if isinstance(e, SessionEvent) and e.session_id == child.id]
    assert [type(e.body).__name__ for e in mine][:2] == ["Warning", "TurnStart"]
    first_warning = next(i for i, e in enumerate(out) if isinstance(e, SessionEvent) and e.session_id == child.id)
    spawn_start = next(
        i for i, e in enumerate(out) if isinstance(e, SessionEvent) and isinstance(e.event.body, Subagent)
    )
    assert first_warning < spawn_start, "the thread's first words come out in the order they were said"


def _sub_agent_ends(
    version: str | None, child_turn: str, *, said: bool, handshake: str | None = None
) -> tuple[list[_Core], list[EventEnvelope]]:
    """A thread (Codex ``version`` in its object, or ``handshake`` in ``initialize``'s
    userAgent) spawns sub-agent ``th2``, whose turn ends ``child_turn``; Codex's own notice
    of its completion follows if ``said``.  Every event, and the parent's sub-agent ends."""
    conn = Connection(CodexAppServerAdapter, clock=fixed_clock)
    thread: dict[str, Any] = {"id": "th", "cwd": "/p"} | ({"cliVersion": version} if version else {})
    spawn = {"type": "subAgentActivity", "id": "s", "kind": "started", "agentThreadId": "th2", "agentPath": "/a"}
    done = {**spawn, "id": "subagent-completed-u2", "kind": "completed"}
    messages: list[tuple[Direction, bytes]] = []
    if handshake is not None:
        user_agent = f"client/{handshake} (Debian 12; x86_64)"
        messages += [
            ("client", json.dumps({"method": "initialize", "id": 0, "params": {}}).encode()),
            ("agent", json.dumps({"id": 0, "result": {"userAgent": user_agent}}).encode()),
        ]
    messages += [
        ("agent", json.dumps({"method": "thread/started", "params": {"thread": thread}}).encode()),
        ("agent", _notice("turn/started", "th", turn=TURN)),
        ("agent", _notice("item/started", "th", item=spawn, turnId="u")),
        ("agent", _notice("item/completed", "th", item=spawn, turnId="u")),
        ("agent", _notice("turn/started", "th2", turn={**TURN, "id": "u2"})),
        ("agent", _notice("turn/completed", "th2", turn={**TURN, "id": "u2", "status": child_turn})),
    ]
    if said:
        messages += [
            ("agent", _notice("item/started", "th", item=done, turnId="u")),
            ("agent", _notice("item/completed", "th", item=done, turnId="u")),
        ]
    messages.append(("agent", _notice("turn/completed", "th", turn={**TURN, "status": "completed"})))
    out: list[_Core] = []
    for from_, msg in messages:
        out += conn.feed(msg, from_)
    out += conn.close()
    parent = next(e.session_id for e in out if isinstance(e, SessionCreated))
    ends = [
        e.event
        for e in out
        if isinstance(e, SessionEvent)
        and e.session_id == parent
        and isinstance(e.event.body, Subagent)
        and e.event.body.phase != "started"
    ]
    return out, ends


@pytest.mark.parametrize(
    ("version", "child_turn", "phase"),
    [
        ("0.142.2", "completed", "completed"),
        ("0.142.2", "failed", "failed"),
        ("0.142.2", "interrupted", "cancelled"),
        ("0.96.0", "completed", "completed"),
        ("0.155.0", "failed", "failed"),  # Codex says only a completion
        ("0.150.0", "interrupted", "cancelled"),
    ],
)
def test_a_sub_agent_ends_in_its_parent_when_its_thread_ends_a_turn_codex_says_nothing_of(
    version: str, child_turn: str, phase: str
) -> None:
    """Before 0.150 Codex never tells the parent thread that a sub-agent is done (unless a
    ``wait`` reports its state), and from 0.150 on only that it completed: the end it leaves
    unsaid is said in the parent's stream right after the sub-agent thread's turn end (as
    0.150 says a completion), synthetic, naming the spawning call, and inside the parent's
    turn."""
    out, ends = _sub_agent_ends(version, child_turn, said=False)
    (end,) = ends
    assert isinstance(end.body, Subagent)
    assert (end.body.subagent_id, end.body.phase, end.body.call_id) == ("th2", phase, "s")
    assert end.native.protocol == "core" and end.turn_id == "turn:1"
    tasks = [e.event.body for e in out if isinstance(e, SessionEvent) and isinstance(e.event.body, Task)]
    assert [(t.task_id, t.phase) for t in tasks] == [("th2", "started"), ("th2", phase)]
    child_end = next(
        i for i, e in enumerate(out) if isinstance(e, SessionEvent) and isinstance(e.event.body, TurnComplete)
    )
    at = out.index(next(e for e in out if isinstance(e, SessionEvent) and e.event is end))
    # right after the sub-agent's turn end: nothing of the parent's comes between
    assert child_end < at and {e.session_id for e in out[child_end:at]} == {out[child_end].session_id}


@pytest.mark.parametrize(
    ("version", "handshake"),
    [("0.155.0", None), ("0.150.0", None), (None, "0.171.0"), ("0.142.2", "0.155.0"), (None, None)],
    ids=["thread-0.155", "thread-0.150", "userAgent-0.171", "resumed-0.142-on-0.155", "no-version"],
)
def test_a_sub_agent_completion_codex_says_is_said_once(version: str | None, handshake: str | None) -> None:
    """From 0.150 on Codex's own ``completed`` notice is the end (the running server's
    version, from ``initialize``, before the version that made the thread); with no version
    known, the end inferred first and Codex's notice after it are one end."""
    _, ends = _sub_agent_ends(version, "completed", said=True, handshake=handshake)
    (end,) = ends
    assert isinstance(end.body, Subagent) and (end.body.phase, end.body.call_id) == ("completed", "s")
    inferred = version is None and handshake is None
    assert end.native.protocol == ("core" if inferred else "codex-app-server")


@pytest.mark.parametrize("version", ["0.142.2", "0.155.0"])
def test_a_sub_agent_cut_off_with_the_connection_fails_in_its_parent(version: str) -> None:
    """The connection ends while the sub-agent's thread is in its turn: that thread is cut
    off (closed first), and its parent says the sub-agent failed, before its own cut-off."""
    conn = Connection(CodexAppServerAdapter, clock=fixed_clock)
    spawn = {"type": "subAgentActivity", "id": "s", "kind": "started", "agentThreadId": "th2", "agentPath": "/a"}
    thread = {"id": "th", "cwd": "/p", "cliVersion": version}
    out: list[_Core] = []
    for msg in (
        json.dumps({"method": "thread/started", "params": {"thread": thread}}).encode(),
        _notice("turn/started", "th", turn=TURN),
        _notice("item/started", "th", item=spawn, turnId="u"),
        _notice("item/completed", "th", item=spawn, turnId="u"),
        _notice("turn/started", "th2", turn={**TURN, "id": "u2"}),
    ):
        out += conn.feed(msg, "agent")
    closing = conn.close()
    parent = next(e.session_id for e in out if isinstance(e, SessionCreated))
    said = [
        (e.session_id == parent, type(e.event.body).__name__, getattr(e.event.body, "phase", None))
        for e in closing
        if isinstance(e, SessionEvent)
    ]
    assert said == [
        (False, "Error", None),  # the sub-agent's thread, cut off
        (False, "TurnComplete", None),
        (True, "Subagent", "failed"),  # its parent says so
        (True, "Task", "failed"),
        (True, "Error", None),  # then the parent is cut off
        (True, "TurnComplete", None),
    ]
    ends = [e.event for e in closing if isinstance(e, SessionEvent) and isinstance(e.event.body, Subagent)]
    assert ends[0].body == Subagent(subagent_id="th2", phase="failed", call_id="s")
    assert ends[0].native.protocol == "core" and ends[0].turn_id == "turn:1"
    # nothing is left for a warning: the parent's sub-agent ended
    assert not [e for e in closing if isinstance(e, SessionEvent) and isinstance(e.event.body, WarningBody)]


def _follow_up(version: str, *, connection: bool) -> list[tuple[str, str, str | None]]:
    """A thread (Codex ``version``) spawns sub-agent ``th2``, whose turn completes; the parent
    then sends it a follow-up (``followup_task``: a ``subAgentActivity`` of kind
    ``interacted``, 0.143 on) and the sub-agent runs a second turn.  From 0.150 on Codex
    says each run's completion.  Fed through a Connection, or the parent's messages alone to
    one Session; the parent's sub-agent and task events: kind, phase, native method."""
    spawn = {"type": "subAgentActivity", "id": "s", "kind": "started", "agentThreadId": "th2", "agentPath": "/a"}
    follow = {**spawn, "id": "f", "kind": "interacted"}
    said = version >= "0.150"

    def done(turn: str) -> list[tuple[str, bytes]]:
        item = {**spawn, "id": f"subagent-completed-{turn}", "kind": "completed"}
        notices = [_notice(m, "th", item=item, turnId="u") for m in ("item/started", "item/completed")]
        return [("th", n) for n in notices] if said else []

    def child_turn(turn: str) -> list[tuple[str, bytes]]:
        return [
            ("th2", _notice("turn/started", "th2", turn={**TURN, "id": turn})),
            ("th2", _notice("turn/completed", "th2", turn={**TURN, "id": turn, "status": "completed"})),
        ]

    thread = {"id": "th", "cwd": "/p", "cliVersion": version}
    messages = [
        ("th", json.dumps({"method": "thread/started", "params": {"thread": thread}}).encode()),
        ("th", _notice("turn/started", "th", turn=TURN)),
        ("th", _notice("item/started", "th", item=spawn, turnId="u")),
        ("th", _notice("item/completed", "th", item=spawn, turnId="u")),
        *child_turn("u2"),
        *done("u2"),
        ("th", _notice("item/started", "th", item=follow, turnId="u")),
        ("th", _notice("item/completed", "th", item=follow, turnId="u")),
        *child_turn("u3"),
        *done("u3"),
        ("th", _notice("turn/completed", "th", turn={**TURN, "status": "completed"})),
    ]
    feeder: Connection | Session = (
        Connection(CodexAppServerAdapter, clock=fixed_clock)
        if connection
        else Session(CodexAppServerAdapter(), clock=fixed_clock)
    )
    out: list[_Core] = []
    for owner, msg in messages:
        if connection or owner == "th":
            out += feeder.feed(msg, "agent")
    out += feeder.close()
    parent = next(e.session_id for e in out if isinstance(e, SessionCreated))
    return [
        (type(e.event.body).__name__, e.event.body.phase, e.event.native.method)
        for e in out
        if isinstance(e, SessionEvent) and e.session_id == parent and isinstance(e.event.body, Subagent | Task)
    ]


@pytest.mark.parametrize("version", ["0.142.2", "0.149.1", "0.155.0"])
def test_a_sub_agent_run_again_by_a_follow_up_resumes_and_ends_once_more(version: str) -> None:
    """A follow-up runs a sub-agent that ended again: its parent says ``resumed`` when the
    sub-agent's thread starts the turn (synthetic: Codex says nothing then), and its end once
    more, the sub-agent's alone (the spawn's task ended with the first run): said by Codex
    from 0.150 on, else inferred at the thread's turn end."""
    said = "item/started" if version >= "0.150" else None
    assert _follow_up(version, connection=True) == [
        ("Subagent", "started", "item/started"),
        ("Task", "started", "item/started"),
        ("Subagent", "completed", said),
        ("Task", "completed", said),
        ("Subagent", "progress", "item/started"),  # the follow-up: activity "interacted"
        ("Subagent", "resumed", None),
        ("Subagent", "completed", said),
    ]


def test_a_later_run_codex_says_ended_without_its_thread_resumed_the_sub_agent() -> None:
    """The parent's thread alone (no connection carries the sub-agent's): Codex's notice of a
    later run's completion says that the sub-agent ran again, before its end."""
    assert _follow_up("0.155.0", connection=False) == [
        ("Subagent", "started", "item/started"),
        ("Task", "started", "item/started"),
        ("Subagent", "completed", "item/started"),
        ("Task", "completed", "item/started"),
        ("Subagent", "progress", "item/started"),
        ("Subagent", "resumed", "item/started"),
        ("Subagent", "completed", "item/started"),
    ]


@pytest.mark.parametrize("version", ["0.149.1", "0.150.0"])
def test_a_recorded_follow_up_resumes_the_sub_agent_when_its_thread_runs_again(version: str) -> None:
    """The real ``i_collab_followup`` runs (``followup_task`` after a first run): the parent
    says the sub-agent ``resumed`` right after the sub-agent thread's second ``turn/started``,
    and its end again right after (0.149.1, inferred) or at (0.150.0) that turn's end."""
    capture = ADAPTERS / f"codex-app-server/captures/codex-{version}/i_collab_followup.tap.jsonl"
    out = [e for e in convert_capture(capture) if isinstance(e, SessionEvent)]
    parent = out[0].session_id
    said = [
        (type(e.event.body).__name__, e.event.body.phase, e.event.native.protocol)
        for e in out
        if e.session_id == parent and isinstance(e.event.body, Subagent | Task)
    ]
    native = "core" if version < "0.150" else "codex-app-server"
    assert said == [
        ("Subagent", "started", "codex-app-server"),
        ("Task", "started", "codex-app-server"),
        ("Subagent", "completed", native),
        ("Task", "completed", native),
        ("Subagent", "progress", "codex-app-server"),  # the follow-up: interacted
        ("Subagent", "resumed", "core"),
        ("Subagent", "completed", native),
    ]
    child_starts = [i for i, e in enumerate(out) if e.session_id != parent and isinstance(e.event.body, TurnStart)]
    resumed = next(
        i for i, e in enumerate(out) if isinstance(e.event.body, Subagent) and e.event.body.phase == "resumed"
    )
    assert resumed == child_starts[1] + 1


def test_an_item_of_a_turn_never_announced_starts_it() -> None:
    """0.96 sends no ``turn/started`` for a sub-agent thread's turns: its first item names
    the turn and starts it, so its messages and calls are inside a turn; an item of the turn
    just completed, arriving late, starts none."""
    user = {"type": "userMessage", "id": "m1", "content": [{"type": "text", "text": "SUBTASK"}]}
    cmd = {"type": "commandExecution", "id": "c1", "command": "ls", "cwd": "/p", "status": "inProgress"}
    done = {**cmd, "status": "completed", "aggregatedOutput": "a\n", "exitCode": 0}
    events = converse(
        ("agent", {"method": "item/started", "params": {"threadId": "th", "turnId": "0", "item": user}}),
        ("agent", {"method": "item/completed", "params": {"threadId": "th", "turnId": "0", "item": user}}),
        ("agent", {"method": "item/started", "params": {"threadId": "th", "turnId": "0", "item": cmd}}),
        ("agent", {"method": "item/completed", "params": {"threadId": "th", "turnId": "0", "item": done}}),
        (
            "agent",
            {
                "method": "turn/completed",
                "params": {"threadId": "th", "turn": {**TURN, "id": "0", "status": "completed"}},
            },
        ),
        ("agent", {"method": "item/completed", "params": {"threadId": "th", "turnId": "0", "item": done}}),
    )
    kinds = [(type(e.body).__name__, e.turn_id) for e in events]
    assert kinds[0] == ("TurnStart", "turn:1")
    assert [k for k, _ in kinds].count("TurnStart") == 1
    assert all(t == "turn:1" for k, t in kinds if k in ("UserMessage", "ToolCall", "TurnComplete"))


def test_a_turn_whose_first_item_comes_before_its_turn_started_is_one_turn() -> None:
    """0.107 may send the prompt's ``item/started`` and ``item/completed`` before the
    ``turn/started`` of the same turn: the item starts the turn, and that ``turn/started``
    starts no second one (nor ends the first as cut off)."""
    user = {"type": "userMessage", "id": "m1", "content": [{"type": "text", "text": "hello"}]}
    answer = {"type": "agentMessage", "id": "a1", "text": "hi"}
    item = {"threadId": "th", "turnId": "u"}
    events = converse(
        ("agent", {"method": "item/started", "params": {**item, "item": user}}),
        ("agent", {"method": "item/completed", "params": {**item, "item": user}}),
        ("agent", {"method": "turn/started", "params": {"threadId": "th", "turn": TURN}}),
        ("agent", {"method": "item/completed", "params": {**item, "item": answer}}),
        ("agent", {"method": "turn/completed", "params": {"threadId": "th", "turn": {**TURN, "status": "completed"}}}),
    )
    kinds = [(type(e.body).__name__, e.turn_id) for e in events]
    assert [k for k, _ in kinds if k in ("TurnStart", "TurnComplete")] == ["TurnStart", "TurnComplete"]
    assert all(t == "turn:1" for k, t in kinds if k in ("UserMessage", "AssistantMessage", "TurnComplete"))
    (end,) = [e.body for e in events if isinstance(e.body, TurnComplete)]
    assert (end.reason, end.native_turn_id) == ("ok", "u")


def test_a_sub_agent_spawned_by_a_collab_tool_call_is_linked_to_its_parent() -> None:
    """0.96 (the ``collab`` tools) says a spawn only as a ``collabAgentToolCall`` ``spawnAgent``
    whose ``receiverThreadIds`` names the new thread, which no ``thread/started`` announces:
    that thread is a session of its own, linked to its parent."""
    conn = Connection(CodexAppServerAdapter, clock=fixed_clock)
    thread = {"id": "th", "cwd": "/p", "cliVersion": "0.96.0"}
    spawn = {
        "type": "collabAgentToolCall",
        "id": "s",
        "tool": "spawnAgent",
        "status": "completed",
        "senderThreadId": "th",
        "receiverThreadIds": ["th2"],
        "prompt": "SUBTASK",
        "agentsStates": {},
    }
    user = {"type": "userMessage", "id": "m1", "content": [{"type": "text", "text": "SUBTASK"}]}
    out: list[_Core] = []
    for msg in (
        json.dumps({"method": "thread/started", "params": {"thread": thread}}).encode(),
        _notice("turn/started", "th", turn=TURN),
        _notice("item/started", "th", item={**spawn, "status": "inProgress", "receiverThreadIds": []}, turnId="u"),
        _notice("item/completed", "th", item=spawn, turnId="u"),
        _notice("item/started", "th2", item=user, turnId="0"),
        _notice("item/completed", "th2", item=user, turnId="0"),
    ):
        out += conn.feed(msg)
    out += conn.close()
    parent, child = (c.record for c in out if isinstance(c, SessionCreated))
    assert (child.native_session_id, child.parent_id) == ("th2", parent.id)
    assert child.id == normalize.session_id_for("codex", "th2")


def test_a_dynamic_tool_call_answered_by_the_client_ends_named_by_its_start() -> None:
    params = {"threadId": "th", "turnId": "u", "callId": "d1", "tool": "lookup", "arguments": {"q": "x"}}
    events = converse(
        ("agent", {"method": "turn/started", "params": {"threadId": "th", "turn": TURN}}),
        ("agent", {"method": "item/tool/call", "id": 5, "params": params}),
        ("client", {"id": 5, "result": {"contentItems": [{"type": "inputText", "text": "y"}], "success": True}}),
        ("agent", {"method": "item/tool/call", "id": 6, "params": {**params, "callId": "d2"}}),
        ("client", {"id": 6, "error": {"code": -1, "message": "no such tool"}}),
    )
    calls = [e.body for e in events if isinstance(e.body, ToolCall)]
    assert [(c.call_id, c.tool, c.phase, c.category) for c in calls] == [
        ("d1", "lookup", "started", "other"),
        ("d1", "lookup", "completed", "other"),
        ("d2", "lookup", "started", "other"),
        ("d2", "lookup", "failed", "other"),
    ]


def test_a_request_resolved_without_an_answer_is_cancelled() -> None:
    bodies = bodies_of(
        translate(
            ("agent", {"method": "item/fileChange/requestApproval", "id": 3, "params": {"itemId": "f"}}),
            ("agent", {"method": "serverRequest/resolved", "params": {"threadId": "t", "requestId": 3}}),
        )
    )
    assert bodies[-1] == RequestResolved(request_id="3", outcome="cancelled")


def test_resumed_history_is_replayed() -> None:
    turn = {
        "id": "turn-a",
        "status": "completed",
        "items": [
            {"type": "userMessage", "id": "u1", "content": [{"type": "text", "text": "hi", "text_elements": []}]},
            {"type": "agentMessage", "id": "m1", "text": "hello"},
        ],
    }
    thread = {"id": "th", "cwd": "/p", "model": "gpt", "cliVersion": VERSION, "turns": [turn]}
    items = translate(
        ("client", {"method": "thread/resume", "id": 1, "params": {"threadId": "th"}}),
        ("agent", {"id": 1, "result": {"thread": thread, "approvalPolicy": "never", "sandbox": {"type": "readOnly"}}}),
    )
    (resumed,) = [i for i in items if isinstance(i, SessionResumed)]
    assert resumed.record.native_session_id == "th" and resumed.record.agent_version == VERSION
    replayed = [i for i in items if isinstance(i, Emit)]
    assert [i.origin for i in replayed] == ["replay"] * 4
    assert [type(i.body) for i in replayed] == [TurnStart, UserMessage, AssistantMessage, TurnComplete]
    assert replayed[-1].body == TurnComplete(reason="ok", stop_reason="completed", native_turn_id="turn-a")


def test_every_started_thread_has_the_model_its_start_response_names(
    run: tuple[Path, list[Fed], list[_Core]],
) -> None:
    """Up to 0.169 the thread object has no ``model``; thread/start's response (before thread/started) does."""
    _, fed, tail = run
    asked = {f.msg["id"] for f in fed if f.from_ == "client" and f.method == "thread/start"}
    if not asked:
        pytest.skip("no thread/start: a resumed thread (its own test below)")
    said = {
        f.msg["result"]["thread"]["id"]: f.msg["result"].get("model") or f.msg["result"]["thread"].get("model")
        for f in fed
        if f.from_ == "agent" and f.method is None and f.msg.get("id") in asked and "result" in f.msg
    }
    created = {
        c.record.native_session_id: c.record.model
        for f in fed
        for c in [*f.out, *tail]
        if isinstance(c, SessionCreated) and c.record.native_session_id in said
    }
    assert said and created == said


RESUMED = sorted(KIT.glob("codex-*/g_resume.tap.jsonl"))


@pytest.mark.parametrize("capture", RESUMED, ids=[c.parent.name for c in RESUMED])
def test_a_resumed_turn_counts_only_its_own_requests(capture: Path) -> None:
    """After thread/resume, Codex says the thread's totals again: 0.142 and later before the
    turn, 0.87, 0.96, 0.107 and 0.120 inside it before the model answers, 0.125 both before
    the turn and inside it, 0.77 not at all (its totals start over).
    The resumed turn's usage is what its own model request used (its last update's ``last``:
    one request), never the turns of the process before."""
    assert {c.parent.name for c in RESUMED} >= {
        "codex-0.77.0",
        "codex-0.87.0",
        "codex-0.96.0",
        "codex-0.107.0",
        "codex-0.120.0",
        "codex-0.125.0",
        "codex-0.142.2",
        "codex-0.171.0",
    }
    fed, tail = feed_capture(capture)
    updates = [f.params["tokenUsage"] for f in fed if f.method == "thread/tokenUsage/updated"]
    turns = [b for e in envelopes(fed, tail) if isinstance(b := e.body, Usage) and b.scope == "turn"]
    (turn,) = turns
    assert turn.tokens is not None and turn.tokens.total == updates[-1]["last"]["totalTokens"]


def test_a_resumed_thread_without_a_model_takes_the_one_its_response_names() -> None:
    """Up to 0.142 the thread object has no ``model``; the thread/resume response does."""
    thread = {"id": "th", "cwd": "/p", "cliVersion": "0.142.2", "turns": []}
    items = translate(
        ("client", {"method": "thread/resume", "id": 1, "params": {"threadId": "th"}}),
        ("agent", {"id": 1, "result": {"thread": thread, "model": "gpt-5.5", "approvalPolicy": "never"}}),
    )
    (resumed,) = [i for i in items if isinstance(i, SessionResumed)]
    assert resumed.record.model == "gpt-5.5"


def test_a_retry_notice_is_a_warning_and_a_terminal_error_an_error() -> None:
    err = {"message": "Reconnecting... 1/1", "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": None}}}
    (body,) = bodies_of(translate(("agent", {"method": "error", "params": {"error": err, "willRetry": True}})))
    assert body == WarningBody(message="Reconnecting... 1/1", source="codex")
    err = {"message": "stream closed", "codexErrorInfo": "other"}
    (body,) = bodies_of(translate(("agent", {"method": "error", "params": {"error": err, "willRetry": False}})))
    assert body == Error(message="stream closed", error_type="other", recoverable=False)


def test_a_failed_turn_ends_interrupt_with_stop_reason_failed() -> None:
    turn = {"id": "t1", "items": [], "status": "failed", "error": {"message": "quota", "codexErrorInfo": "other"}}
    bodies = bodies_of(translate(("agent", {"method": "turn/completed", "params": {"threadId": "th", "turn": turn}})))
    assert bodies == [
        Error(message="quota", error_type="other", recoverable=False),
        TurnComplete(reason="interrupt", stop_reason="failed", native_turn_id="t1"),
    ]


def test_bad_input_is_a_malformed_message() -> None:
    adapter = CodexAppServerAdapter()
    for bad in (b"not json", b"[1, 2]", b'{"\x80":1}', b'{"jsonrpc":"2.0"}'):
        with pytest.raises(MalformedMessage):
            adapter.feed(bad)


def test_detects_app_server_traffic_only() -> None:
    sample = [
        (c, "client") for c in (b'{"method":"initialize","id":0,"params":{}}', b'{"method":"thread/start","id":1}')
    ]
    assert CodexAppServerAdapter.detect(sample) > 0.5  # type: ignore[arg-type]
    acp = [(b'{"jsonrpc":"2.0","method":"session/new","id":1,"params":{}}', "client")]
    assert CodexAppServerAdapter.detect(acp) == 0.0  # type: ignore[arg-type]

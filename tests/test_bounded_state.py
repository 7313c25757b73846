"""Bounded state and hostile input.

A stream that opens tool calls and never finishes them keeps an adapter's memory flat, and
every entry forgotten on the way is reported as a warning naming it.  The suite feeds
200,000 unfinished calls to each live agent's adapter and 100,000 to the others (a few
seconds each) and compares the process's resident memory once every table is full with the
memory at the end; set NORMALIZE_BOUNDED_N=1000000 to run the million by hand
(docs/reliability.md has the numbers).

Lines over the reader's bound, repeated tool-call phases, and the edge-case captures kept
in adapters/<protocol>/captures/edge-cases/ (the fuzzers' findings among them) are checked here too.
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

import normalize
from helpers import ROOT, capture_files, protocol_of
from normalize import Message, Session, SessionEvent, SessionUpdate, ToolCall
from normalize import Warning as WarningBody
from normalize.adapters import _limits
from scripted import ScriptedAdapter

N = int(os.environ.get("NORMALIZE_BOUNDED_N", "200000"))

#: One message opening a tool call, per protocol; ``%d`` is the call's number.
OPEN_CALL = {
    "claude-stream-json": b'{"type":"assistant","message":{"id":"msg_%d","type":"message","role":"assistant",'
    b'"model":"m","content":[{"type":"tool_use","id":"toolu_%d","name":"Bash","input":{"command":"ls"}}],'
    b'"stop_reason":null},"parent_tool_use_id":null,"session_id":"s1"}',
    "codex-app-server": b'{"method":"item/started","params":{"item":{"type":"commandExecution","id":"call_%d",'
    b'"command":"ls","cwd":"/w","status":"inProgress","commandActions":[]},"threadId":"t1","turnId":"u1"}}',
    "acp": b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":'
    b'"tool_call","toolCallId":"call_%d","title":"ls","kind":"execute","status":"pending"}}}',
    "hm-json": b'{"v":1,"type":"tool_call","session":"s1","tool":"shell","call_id":"c%d","summary":"ls",'
    b'"input":{"command":"ls"}}',
    "claude-transcript": b'{"parentUuid":"p%d","isSidechain":false,"message":{"id":"msg_%d","type":"message",'
    b'"role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_%d","name":"Bash","input":'
    b'{"command":"ls"}}],"stop_reason":"tool_use"},"type":"assistant","uuid":"u%d","sessionId":"s1"}',
    "codex-exec-json": b'{"type":"item.started","item":{"id":"item_%d","type":"command_execution","command":"ls",'
    b'"aggregated_output":"","status":"in_progress"}}',
    "codex-rollout": b'{"timestamp":"2026-01-01T00:00:00.000Z","type":"response_item","payload":{"type":'
    b'"function_call","name":"exec_command","arguments":"{}","call_id":"call_%d"}}',
    "antigravity-stream-json": b'{"event":"step_update","step_update":{"conversation_id":"c1","step_index":%d,'
    b'"state":"ACTIVE","step_type":"tool","tool_name":"run_command","tool_info":{"name":"run_command",'
    b'"parameters":{"CommandLine":"ls"}}}}',
}

#: RSS an adapter's process may grow by between the checkpoint (every table full and turned
#: over) and the end.  Unbounded, 160,000 more open calls take 40 MiB or more.
SLACK = 8 * 1024 * 1024
CHECKPOINT = 40_000


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _lines(protocol: str, start: int, stop: int) -> Iterator[bytes]:
    template = OPEN_CALL[protocol]
    k = template.count(b"%d")
    for i in range(start, stop):
        yield template % ((i,) * k)


#: The four adapters of live agents get the full flood; the others half of it (suite time).
LIVE = {"claude-stream-json", "codex-app-server", "acp", "hm-json"}


def _session_warnings(session: Session, lines: Iterator[bytes]) -> int:
    return sum(
        isinstance(e, SessionEvent) and isinstance(e.event.body, WarningBody) and "forgotten" in e.event.body.message
        for line in lines
        for e in session.feed(line)
    )


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="RSS is read from /proc")
@pytest.mark.parametrize("protocol", sorted(OPEN_CALL))
def test_a_flood_of_unfinished_calls_keeps_memory_flat(protocol: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # finished ids are remembered up to SEEN_IDS (100,000); lowered here so that every
    # table, those included, is full and turning over before the checkpoint
    monkeypatch.setattr(_limits, "SEEN_IDS", 2 * _limits.OPEN_CALLS)
    assert CHECKPOINT >= 2 * _limits.OPEN_CALLS
    n = N if protocol in LIVE else N // 2
    # every adapter's open calls are the core's table (Adapter.calls), kept by its Session
    adapter = normalize.adapter_class(protocol)()
    assert adapter.calls.limit == _limits.OPEN_CALLS
    adapter.calls.seen = 2 * _limits.OPEN_CALLS
    session = Session(adapter, clock=lambda: 0.0)
    warnings = _session_warnings(session, _lines(protocol, 0, CHECKPOINT))
    base = _rss()
    warnings += _session_warnings(session, _lines(protocol, CHECKPOINT, n))
    grown = _rss() - base
    assert grown < SLACK, f"{protocol}: RSS grew {grown} bytes over {n - CHECKPOINT} more open calls"
    # every call beyond the limit pushed an older one out, and said so
    assert warnings == n - _limits.OPEN_CALLS
    # the calls still open are the core's to settle at close: one warning each, no other
    warned = [
        e.event.body.message
        for e in session.close()
        if isinstance(e, SessionEvent) and isinstance(e.event.body, WarningBody)
    ]
    assert len(warned) == _limits.OPEN_CALLS
    assert all("never finished" in m for m in warned)


@pytest.mark.parametrize("protocol", sorted(OPEN_CALL))
def test_an_evicted_call_is_named_in_a_synthesized_warning(protocol: str) -> None:
    adapter = normalize.adapter_class(protocol)()
    adapter.calls.limit = 3
    session = Session(adapter, clock=lambda: 0.0)
    events = [e.event for line in _lines(protocol, 0, 5) for e in session.feed(line) if isinstance(e, SessionEvent)]
    events += [e.event for e in session.close() if isinstance(e, SessionEvent)]
    evicted = [e for e in events if isinstance(e.body, WarningBody) and "forgotten" in e.body.message]
    assert len(evicted) == 2
    started = [e.body.call_id for e in events if isinstance(e.body, ToolCall) and e.body.phase == "started"]
    for n, event in enumerate(evicted):
        body = event.body
        assert isinstance(body, WarningBody)
        assert body.source == "normalize"
        assert event.native.protocol == "core"
        named = f"tool call {started[n]}"
        assert body.message.startswith(f"{named} forgotten: more than 3 open at once")
    never = [e for e in events if isinstance(e.body, WarningBody) and "never finished" in e.body.message]
    assert len(never) == 3  # forgotten calls are no longer open: the three left are settled at close


def test_bounded_table_keeps_the_newest_and_queues_what_it_evicts() -> None:
    table: _limits.Bounded[str, int] = _limits.Bounded("tool call", 2)
    table["a"] = 1
    table["b"] = 2
    table["a"] = 10  # an update is not an insertion: nothing evicted
    assert table.outbox == []
    table["c"] = 3
    assert list(table) == ["b", "c"]
    assert table.outbox == [(table, "a")]
    (warning,) = _limits.evictions(table.outbox)
    assert isinstance(warning, normalize.Emit)
    assert warning.synthetic
    assert isinstance(warning.body, WarningBody)
    assert warning.body.message.startswith("tool call a forgotten: more than 2 open at once")
    assert table.outbox == []
    assert _limits.evictions(table.outbox) == []


def _can_use_tool(n: int) -> bytes:
    return (
        b'{"type":"control_request","request_id":"r%d","request":{"subtype":"can_use_tool",'
        b'"tool_name":"Bash","input":{"command":"ls"},"tool_use_id":"toolu_%d"}}' % (n, n)
    )


def test_the_session_reports_what_an_adapters_table_forgot_after_the_message() -> None:
    adapter = normalize.adapter_class("claude-stream-json")()
    session = Session(adapter, clock=lambda: 0.0)
    adapter._asked.limit = 2  # type: ignore[attr-defined]  # requests waiting for the client's answer
    session.feed(b'{"type":"system","subtype":"init","session_id":"s1"}')
    per_line = [[e.event.body for e in session.feed(_can_use_tool(n)) if isinstance(e, SessionEvent)] for n in range(4)]
    assert [len([b for b in bodies if isinstance(b, WarningBody)]) for bodies in per_line] == [0, 0, 1, 1]
    for n, bodies in ((0, per_line[2]), (1, per_line[3])):
        last = bodies[-1]  # after the request that pushed it out
        assert isinstance(last, WarningBody)
        assert last.source == "normalize"
        assert last.message.startswith(f"control request r{n} forgotten: more than 2 open at once")


def test_an_inner_adapter_made_later_reports_its_evictions_too() -> None:
    # codex-exec-json's older shape is translated by a rollout adapter made at its first line
    adapter = normalize.adapter_class("codex-exec-json")()
    session = Session(adapter, clock=lambda: 0.0)
    session.feed(b'{"model":"m","workdir":"/w"}')
    inner = adapter._legacy.rollout._subagents  # type: ignore[attr-defined]
    inner.limit = 1
    inner["t1"] = "call_1"
    inner["t2"] = "call_2"  # forgets t1
    events = session.feed(b'{"prompt":"hi"}')
    warned = [
        e.event.body.message for e in events if isinstance(e, SessionEvent) and isinstance(e.event.body, WarningBody)
    ]
    assert len(warned) == 1
    assert warned[0].startswith("sub-agent t1 forgotten: more than 1 open at once")


class _Keeper(ScriptedAdapter):
    """An adapter whose table is made with it, before any Session."""

    def __init__(self) -> None:
        super().__init__()
        self.kept: _limits.Bounded[str, None] = _limits.table(self, "entry", 1)


class _Holder(ScriptedAdapter):
    """An adapter that translates with another one it holds from the start."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = _Keeper()

    def feed(self, message: bytes, from_: normalize.Direction = "agent") -> list[normalize.Item]:
        self.inner.kept[message.decode()] = None
        return super().feed(message, from_)


def test_an_inner_adapter_held_from_the_start_reports_its_evictions_too() -> None:
    """The Session links the tables of the adapters its adapter holds (``_limits.link``):
    an entry the inner one forgets is a warning, not a silent loss."""
    session = Session(_Holder(), clock=lambda: 0.0)
    warned: list[list[str]] = []
    for line in (b'{"method":"a"}', b'{"method":"b"}'):
        events = session.feed(line)
        bodies = [e.event.body for e in events if isinstance(e, SessionEvent)]
        warned.append([b.message for b in bodies if isinstance(b, WarningBody)])
    assert warned[0] == []
    assert len(warned[1]) == 1
    assert warned[1][0].startswith('entry {"method":"a"} forgotten: more than 1 open at once')


def test_an_adapter_fed_without_a_session_queues_a_bounded_number_of_evictions() -> None:
    table: _limits.Bounded[int, None] = _limits.Bounded("tool call", 3)
    for key in range(100):
        table[key] = None
    assert len(table) == 3
    assert table.outbox == [(table, 0), (table, 1), (table, 2)]  # the first ones; nobody emptied it


def test_recent_ids_forget_the_oldest_silently() -> None:
    seen: _limits.Recent = _limits.Recent(2)
    for key in ("a", "b", "a", "c"):
        seen.add(key)
    assert "a" not in seen
    assert list(seen) == ["b", "c"]
    seen.discard("b")
    seen.discard("zz")
    assert list(seen) == ["c"]


def test_a_duplicated_line_is_an_error_event_by_default_and_raises_in_strict_mode() -> None:
    line = OPEN_CALL["claude-stream-json"] % (1, 1)
    session = Session(normalize.adapter_class("claude-stream-json")(), clock=lambda: 0.0)
    bodies = [e.event.body for e in session.feed(line) + session.feed(line) if isinstance(e, SessionEvent)]
    assert [type(b).__name__ for b in bodies] == ["ToolCall", "Error"]
    strict = Session(normalize.adapter_class("claude-stream-json")(), clock=lambda: 0.0, strict=True)
    strict.feed(line)
    with pytest.raises(normalize.ProtocolViolation, match="already started"):
        strict.feed(line)


# ------------------------------------------------------------ lines over the bound

#: A bound far below the default 16 MiB, so real captures have lines over it (a golden at
#: the default would need a 16 MiB file).
SMALL_LINE = 400


def _capture_with_long_lines(protocol: str) -> Path:
    for capture in capture_files():
        if protocol_of(capture) != protocol or capture.parent.name == "edge-cases":
            continue
        lengths = [len(line) for line in capture.read_bytes().splitlines() if line.strip()]
        first_long = next((i for i, n in enumerate(lengths) if n > SMALL_LINE), None)
        if first_long is not None and any(n <= SMALL_LINE for n in lengths[first_long:]):
            return capture  # a line within the bound follows one over it
    raise LookupError(protocol)


@pytest.mark.parametrize("protocol", sorted(OPEN_CALL))
def test_a_line_over_the_bound_is_an_error_and_the_stream_goes_on(protocol: str) -> None:
    capture = _capture_with_long_lines(protocol)
    lines = [line for line in capture.read_bytes().splitlines() if line.strip()]
    over = [i for i, line in enumerate(lines) if len(line) > SMALL_LINE]
    out = list(normalize.events(normalize.read_records([capture], max_line=SMALL_LINE), protocol=protocol))
    events = [e.event for e in out if isinstance(e, SessionEvent)]
    too_long = [e for e in events if isinstance(e.body, normalize.Error) and e.body.error_type == "line-too-long"]
    assert len(too_long) == len(over)
    assert all(e.body.recoverable for e in too_long)  # type: ignore[union-attr]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    # every message within the bound, before and after the long lines, is still there
    messages = {r.data for r in normalize.read_records([capture], max_line=SMALL_LINE) if isinstance(r, Message)}
    natives = [e.event.native for e in out if isinstance(e, SessionEvent)]
    natives += [e.update for e in out if isinstance(e, SessionUpdate)]
    assert {bytes(n.payload) for n in natives if isinstance(n.payload, msgspec.Raw)} == messages
    first = next(i for i, e in enumerate(out) if isinstance(e, SessionEvent) and e.event is too_long[0])
    later = [
        e.update if isinstance(e, SessionUpdate) else e.event.native
        for e in out[first + 1 :]
        if isinstance(e, SessionUpdate | SessionEvent)
    ]
    assert any(n.protocol == protocol for n in later), "the stream goes on after a line over the bound"
    # strict mode raises the library's own error for the first long line
    with pytest.raises(normalize.LineTooLong):
        list(normalize.events(normalize.read_records([capture], max_line=SMALL_LINE), protocol=protocol, strict=True))


# ------------------------------------------------------------ the edge cases outside the kits

EDGE_CASES = sorted((ROOT / "adapters").glob("*/captures/edge-cases/*.jsonl"))

#: errorType each edge case must report (at least once), by the start of its file name.
EXPECTED_ERROR = {
    "invalid-utf8": "malformed",
    "deeply-nested-json": "malformed",
    "truncated-last-line": "truncated",
}


def _edge_id(p: Path) -> str:
    return f"{p.parents[2].name}/{p.name}"


@pytest.mark.parametrize("capture", EDGE_CASES, ids=_edge_id)
def test_an_edge_case_never_raises_and_reports_what_it_breaks(capture: Path) -> None:
    protocol = capture.parents[2].name  # adapters/<protocol>/captures/edge-cases/<case>
    out = list(normalize.events(normalize.read_records([capture]), protocol=protocol, clock=lambda: 0.0))
    events = [e.event for e in out if isinstance(e, SessionEvent)]
    for sid in {e.session_id for e in events}:  # each session has its own seq from 1
        seqs = [e.seq for e in events if e.session_id == sid]
        assert seqs == list(range(1, len(seqs) + 1))
    errors = [e.body.error_type for e in events if isinstance(e.body, normalize.Error)]
    name = capture.name.split(".")[0]
    if name in EXPECTED_ERROR:
        assert EXPECTED_ERROR[name] in errors
    if name in ("blank-crlf-bom", "timestamps-backwards", "fuzz-emitted-at-out-of-range"):
        assert errors == []
    # one start and one end per call, whatever the input repeats (ACP's tool_call is an upsert;
    # a rollout's output before its call is kept raw and the call ends at the turn's end)
    if (name == "duplicate-ids" and protocol != "acp") or (
        name == "tool-result-before-call" and protocol not in ("acp", "codex-rollout")
    ):
        assert "protocol" in errors
    # every message is kept: translated, kept raw, or carried by its error
    messages = [r for r in normalize.read_records([capture]) if isinstance(r, Message)]
    assert len([e for e in events if e.native.protocol == protocol]) + sum(
        isinstance(e, SessionUpdate) for e in out
    ) >= len(messages)
    # strict mode: only the library's own errors
    with contextlib.suppress(normalize.NormalizeError):
        list(normalize.events(normalize.read_records([capture]), protocol=protocol, strict=True))


def test_a_timestamp_no_calendar_holds_falls_back_to_the_capture_time() -> None:
    capture = (
        ROOT / "adapters" / "codex-app-server" / "captures" / "edge-cases" / "fuzz-emitted-at-out-of-range.tap.jsonl"
    )
    records = [r for r in normalize.read_records([capture]) if isinstance(r, Message)]
    odd = [r for r in records if b'"emittedAtMs":155555' in r.data or b'"emittedAtMs":-1' in r.data]
    assert len(odd) == 2
    out = list(normalize.events(iter(records), protocol="codex-app-server", clock=lambda: 0.0))
    for record in odd:
        stamped = [
            e.event.ts
            for e in out
            if isinstance(e, SessionEvent) and isinstance(e.event.native.payload, msgspec.Raw)
            if bytes(e.event.native.payload) == record.data
        ]
        assert stamped
        assert set(stamped) == {record.t}


def _stream_event(e: bytes) -> bytes:
    return b'{"type":"stream_event","event":%s,"parent_tool_use_id":null,"session_id":"s1"}' % e


def _input_piece(text: bytes) -> bytes:
    delta = b'{"type":"input_json_delta","partial_json":"%s"}' % text.replace(b'"', b'\\"')
    return _stream_event(b'{"type":"content_block_delta","index":0,"delta":%s}' % delta)


def _tool_inputs(items: list[normalize.Item]) -> list[object]:
    bodies = [i.body if isinstance(i, normalize.Emit) else i for i in items]  # an Emit or a bare body
    return [b.input for b in bodies if isinstance(b, normalize.ToolCall)]


def test_a_large_streamed_tool_input_is_read_in_linear_time() -> None:
    adapter = normalize.adapter_class("claude-stream-json")()
    adapter.feed(_stream_event(b'{"type":"message_start","message":{"id":"m1"}}'))
    block = b'{"type":"tool_use","id":"t1","name":"Bash","input":{}}'
    adapter.feed(_stream_event(b'{"type":"content_block_start","index":0,"content_block":%s}' % block))
    # a small input is reported as it grows, once it parses
    assert _tool_inputs(adapter.feed(_input_piece(b'{"command":'))) == [None]
    assert _tool_inputs(adapter.feed(_input_piece(b'"ls"}'))) == [{"command": "ls"}]
    # a large one: re-reading 1.2 million characters whole after each of 60,000 pieces would
    # take minutes; past PARTIAL_INPUT the pieces are only counted
    started = time.perf_counter()
    inputs = [x for _ in range(60_000) for x in _tool_inputs(adapter.feed(_input_piece(b"a" * 20)))]
    assert time.perf_counter() - started < 15
    assert inputs == [None] * 60_000


# ------------------------------------------------------------ eviction in constant time


def _evictions_cost(fill: object, evict: object, limit: int, n: int = 120_000) -> float:
    """Seconds per insertion that evicts, in a table already holding ``limit`` entries (best of 3 rounds)."""
    table = fill(limit)  # type: ignore[operator]
    best = float("inf")
    for r in range(3):
        started = time.perf_counter()
        evict(table, limit + r * n, n)  # type: ignore[operator]
        best = min(best, time.perf_counter() - started)
    return best / n


def _fill_bounded(limit: int) -> _limits.Bounded[int, None]:
    table: _limits.Bounded[int, None] = _limits.Bounded("tool call", limit)
    for i in range(limit):
        table[i] = None
    return table


def _evict_bounded(table: _limits.Bounded[int, None], start: int, n: int) -> None:
    outbox = table.outbox
    for i in range(start, start + n):
        table[i] = None
        outbox.clear()  # as a Session empties it after each message (it keeps at most ``limit``)


def _fill_recent(limit: int) -> _limits.Recent:
    seen: _limits.Recent = _limits.Recent(limit)
    for i in range(limit):
        seen.add(i)
    return seen


def _evict_recent(seen: _limits.Recent, start: int, n: int) -> None:
    for i in range(start, start + n):
        seen.add(i)


class _Asks(normalize.Adapter):
    """Every message is a permission request that is never answered."""

    protocol = "test-asks"
    agent = "test-agent"

    def feed(self, message: bytes, from_: normalize.Direction = "agent") -> list[normalize.Item]:
        ref = normalize.ToolCallRef(call_id="c", tool="Bash", title="ls")
        return [normalize.PermissionRequest(request_id=message.decode(), tool_call=ref, options=[])]

    def close(self) -> list[normalize.Item]:
        return []


def _fill_pending(limit: int) -> Session:
    import normalize._session as session_module

    session_module.MAX_PENDING = limit  # restored by the test's monkeypatch
    session = Session(_Asks(), session_id="s1", clock=lambda: 0.0)
    for i in range(limit):
        session.feed(b"%d" % i)
    return session


def _evict_pending(session: Session, start: int, n: int) -> None:
    for i in range(start, start + n):
        session.feed(b"%d" % i)


@pytest.mark.parametrize(
    ("fill", "evict", "large"),
    [
        (_fill_bounded, _evict_bounded, 200_000),
        (_fill_recent, _evict_recent, 200_000),
        (_fill_pending, _evict_pending, 200_000),
    ],
    ids=["Bounded", "Recent", "Session-pending-requests"],
)
def test_evicting_the_oldest_costs_as_much_in_a_full_large_table_as_in_a_small_one(
    fill: object, evict: object, large: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Scanning from the start of a dict for its oldest key walks past every key deleted
    # before it: once full, each message cost O(limit) (1M open calls took 357 s instead
    # of about 20 s).  Evicting is constant time: the cost per message does not depend on
    # the size of the table (a ratio within one process; the bug gave 30 to 200 times).
    import normalize._session as session_module

    monkeypatch.setattr(session_module, "MAX_PENDING", session_module.MAX_PENDING)
    small = _evictions_cost(fill, evict, 1_000)
    big = _evictions_cost(fill, evict, large)
    assert big < 5 * small, f"{big / small:.1f} times slower per eviction with {large} entries than with 1,000"


@pytest.mark.parametrize("protocol", normalize.available())
def test_every_table_of_an_adapter_reports_to_its_session(protocol: str) -> None:
    """Each bounded table an adapter holds queues its evictions where its Session looks,
    wherever the table is kept (an instance's ``__dict__``, or a compiled class's own slots:
    the tables are found here through the garbage collector's view of the adapter)."""
    adapter = normalize.adapter_class(protocol)()
    session = Session(adapter)
    held = [*gc.get_referents(adapter), *gc.get_referents(getattr(adapter, "__dict__", {}))]
    tables = [value for value in held if type(value) is _limits.Bounded]
    # they keep none, or make each at its first entry (below)
    assert tables or protocol in ("gemini-stream-json", "opencode-db", "opencode-json", *_MADE_WHEN_NEEDED)
    assert all(table.outbox is session._forgotten for table in tables), protocol


#: the adapters that hold ``NO_TABLE`` until a table gets its first entry, and put it back once
#: the table is empty again (a connection keeps every session, most of them idle)
_MADE_WHEN_NEEDED = {
    "acp": "acp/captures/claude-agent-acp-0.101.0/claude-b-shell-allow.tap.jsonl",
    "codex-app-server": "codex-app-server/captures/codex-0.171.0/b_command_approval_accept.tap.jsonl",
}


def _tables(adapter: object) -> list[_limits.Bounded[object, object]]:
    held = [*gc.get_referents(adapter), *gc.get_referents(getattr(adapter, "__dict__", {}))]
    return [value for value in held if isinstance(value, _limits.Bounded)]


@pytest.mark.parametrize("protocol", sorted(_MADE_WHEN_NEEDED))
def test_a_table_made_at_its_first_entry_reports_to_the_session_and_goes_when_empty(protocol: str) -> None:
    """A table made while the session runs queues its evictions where the Session looks, as
    one made with the adapter does; once empty it is given back for the shared NO_TABLE."""
    adapter = normalize.adapter_class(protocol)()
    session = Session(adapter)
    made: set[int] = set()
    for line in (ROOT / "adapters" / _MADE_WHEN_NEEDED[protocol]).read_bytes().splitlines():
        record = msgspec.json.decode(line)
        session.feed(msgspec.json.encode(record["msg"]), record["from"])
        for table in _tables(adapter):
            if table is not _limits.NO_TABLE:
                assert type(table) is _limits.Bounded
                assert table, "an empty table is given back"
                assert table.outbox is session._forgotten
                made.add(id(table))
    assert made  # requests were pending, items open
    assert all(table is _limits.NO_TABLE for table in _tables(adapter))  # all answered and ended


#: captures that fill a set an idle session holds as the shared ``NO_RECENT``: ACP's loads not
#: yet answered, Codex app-server's answers not yet resolved by the server
_SETS_MADE_WHEN_NEEDED = [
    ("acp", "acp/captures/claude-agent-acp-0.101.0/claude-f-load.tap.jsonl", "_loads"),
    ("codex-app-server", "codex-app-server/captures/codex-0.171.0/b_command_approval_accept.tap.jsonl", "_answered"),
]


@pytest.mark.parametrize(("protocol", "capture", "name"), _SETS_MADE_WHEN_NEEDED)
def test_a_set_made_at_its_first_key_goes_when_empty(protocol: str, capture: str, name: str) -> None:
    """The set is the shared NO_RECENT until a key comes, a set of its own while it holds
    one, and NO_RECENT again once emptied (a connection keeps every session, most idle)."""
    adapter = normalize.adapter_class(protocol)()
    session = Session(adapter)
    assert getattr(adapter, name) is _limits.NO_RECENT
    held = 0
    for line in (ROOT / "adapters" / capture).read_bytes().splitlines():
        record = msgspec.json.decode(line)
        session.feed(msgspec.json.encode(record["msg"]), record["from"])
        keys = getattr(adapter, name)
        if keys is not _limits.NO_RECENT:
            assert type(keys) is _limits.Recent and keys, "an empty set is given back"
            held += 1
    assert held  # a load was waiting, an answer was not yet resolved
    assert getattr(adapter, name) is _limits.NO_RECENT


def test_the_shared_empty_set_is_never_written() -> None:
    with pytest.raises(TypeError, match="never written"):
        _limits.NO_RECENT.add("key")
    assert not _limits.NO_RECENT and "key" not in _limits.NO_RECENT
    assert _limits.recent(_limits.NO_RECENT) is not _limits.NO_RECENT
    made = _limits.Recent()
    assert _limits.recent(made) is made


def test_the_shared_empty_table_is_never_written() -> None:
    with pytest.raises(TypeError, match="never written"):
        _limits.NO_TABLE["key"] = "value"
    with pytest.raises(TypeError, match="never written"):
        _limits.NO_TABLE.setdefault("key", "value")
    with pytest.raises(TypeError, match="never written"):
        _limits.put(_limits.NO_TABLE, "key", "value")  # the adapters' way to set an entry
    assert not _limits.NO_TABLE


def test_put_is_the_bounded_assignment() -> None:
    """``put`` (what adapters call in place of ``table[key] = value``) evicts the oldest
    entry of a full table and queues it, as the assignment does."""
    by_put: _limits.Bounded[str, int] = _limits.Bounded("call", 2)
    by_item: _limits.Bounded[str, int] = _limits.Bounded("call", 2)
    for n, key in enumerate(["a", "b", "a", "c", "d"]):
        _limits.put(by_put, key, n)
        by_item[key] = n
    assert list(by_put.items()) == list(by_item.items()) == [("c", 3), ("d", 4)]
    assert [k for _, k in by_put.outbox] == [k for _, k in by_item.outbox] == ["a", "b"]

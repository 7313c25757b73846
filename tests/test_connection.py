"""Several native sessions on one connection: each comes out as if converted alone.

The multiplexed captures are built from real ones: the second session's lines, after
its own handshake, are interleaved line by line with the first's, its JSON-RPC ids
moved out of the first's range (ids are per connection).
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from helpers import ADAPTERS, convert_records, fixed_clock, native_payloads, records_of
from normalize import (
    CaptureParser,
    Connection,
    Direction,
    Message,
    RequestResolved,
    SessionCreated,
    SessionEvent,
    SessionResumed,
    SessionUpdate,
    adapter_class,
    encode,
)
from normalize._connection import HANDSHAKE, _at, _View, _walk

SHIFT = 1000

PAIRS = [
    (
        "acp",
        "acp/captures/claude-agent-acp-0.101.0/claude-b-shell-allow.tap.jsonl",
        "acp/captures/claude-agent-acp-0.101.0/claude-c-shell-reject.tap.jsonl",
        "session/new",
    ),
    (
        "acp",
        "acp/captures/codex-acp-2.6.0/codex-a-text-reasoning.tap.jsonl",
        "acp/captures/codex-acp-2.6.0/codex-b-shell-allow.tap.jsonl",
        "session/new",
    ),
    (
        "codex-app-server",
        "codex-app-server/captures/codex-0.171.0/b_command_approval_accept.tap.jsonl",
        "codex-app-server/captures/codex-0.171.0/e_two_turns.tap.jsonl",
        "thread/start",
    ),
]


def _lines(rel: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (ADAPTERS / rel).read_text().splitlines() if line.strip()]


def _shift(line: dict[str, Any]) -> dict[str, Any]:
    msg = dict(line["msg"])
    if isinstance(msg.get("id"), int):
        msg["id"] += SHIFT
    return {**line, "msg": msg}


def multiplexed(first: str, second: str, opener: str) -> bytes:
    """``first`` whole, with ``second`` (from its opener on) interleaved into it after its own opener."""
    a, b = _lines(first), _lines(second)
    b_start = next(i for i, line in enumerate(b) if line["msg"].get("method") == opener)
    a_start = next(i for i, line in enumerate(a) if line["msg"].get("method") == opener)
    rest_a, rest_b = a[a_start:], [_shift(line) for line in b[b_start:]]
    out = a[:a_start]
    while rest_a or rest_b:
        if rest_a:
            out.append(rest_a.pop(0))
        if rest_b:
            out.append(rest_b.pop(0))
    return b"".join(json.dumps(line).encode() + b"\n" for line in out)


def _names_no_session(ev: SessionEvent | SessionUpdate) -> bool:
    data = json.loads(encode(ev))
    payload = data["event"]["native"].get("payload") if isinstance(ev, SessionEvent) else data["update"]["payload"]
    if not isinstance(payload, dict) or "method" not in payload:
        return False  # a response: routed by its request
    params = payload.get("params")
    return not (isinstance(params, dict) and ("sessionId" in params or "threadId" in params or "thread" in params))


def _project(events: list[Any], *, shifted: bool) -> list[Any]:
    """What a session says, without the parts that name the connection (times, seq, ids on the wire).

    A notification that names no session (``_auth/status_update``, Codex rate limits) is
    about the connection: it lands in whichever session was last addressed.  It is left
    out here (and with it ``seq``, which it moves), and counted by the test that nothing
    is lost; seq itself is checked by the envelope tests.
    """
    out: list[Any] = []
    for ev in events:
        if isinstance(ev, SessionEvent | SessionUpdate) and _names_no_session(ev):
            continue
        if isinstance(ev, SessionEvent):
            env = json.loads(encode(ev))["event"]
            for name in ("ts", "native", "seq"):
                env.pop(name)
            if shifted:  # ids derived from wire ids (``5``, ``prompt-5``) as they were before the shift
                for name in ("requestId", "messageId"):
                    if isinstance(env.get(name), str):
                        env[name] = re.sub(r"^(prompt-)?(\d+)$", _unshift, env[name])
            out.append(env)
        elif isinstance(ev, SessionCreated):
            out.append(("created", ev.record.native_session_id, ev.record.agent))
        else:
            out.append(type(ev).__name__)
    return out


def _unshift(m: re.Match[str]) -> str:
    return f"{m[1] or ''}{int(m[2]) - SHIFT}"


def _alone(rel: str, protocol: str) -> list[Any]:
    return convert_records(records_of([ADAPTERS / rel]), protocol)


@pytest.mark.parametrize(("protocol", "first", "second", "opener"), PAIRS, ids=[p[1].split("/")[-1] for p in PAIRS])
def test_each_multiplexed_session_equals_the_session_converted_alone(
    protocol: str, first: str, second: str, opener: str
) -> None:
    parser = CaptureParser()
    records = [*parser.feed(multiplexed(first, second, opener)), *parser.close()]
    mux = convert_records(records, protocol)
    ids = list(dict.fromkeys(e.session_id for e in mux))
    assert len(ids) == 2, ids
    by_id = {sid: [e for e in mux if e.session_id == sid] for sid in ids}
    alone_a, alone_b = _alone(first, protocol), _alone(second, protocol)
    assert {e.session_id for e in alone_a} == {ids[0]}  # the same identity as alone
    assert {e.session_id for e in alone_b} == {ids[1]}
    assert _project(by_id[ids[0]], shifted=False) == _project(alone_a, shifted=False)
    # the second session gets the first's handshake (the same agent said the same)
    assert _project(by_id[ids[1]], shifted=True) == _project(alone_b, shifted=False)
    # nothing lost: every line of the multiplexed capture is the native payload of an event
    payloads = {_payload(e) for e in mux if isinstance(e, SessionEvent | SessionUpdate)}
    assert {_canon(r.data) for r in records if isinstance(r, Message)} <= payloads


def _canon(data: bytes) -> str:
    return json.dumps(json.loads(data), sort_keys=True)


def _payload(ev: SessionEvent | SessionUpdate) -> str:
    native = (
        json.loads(encode(ev))["event"]["native"] if isinstance(ev, SessionEvent) else json.loads(encode(ev))["update"]
    )
    return json.dumps(native.get("payload"), sort_keys=True)


def test_a_single_session_stream_is_one_session() -> None:
    rel = "acp/captures/claude-agent-acp-0.101.0/claude-f-load.tap.jsonl"
    assert len({e.session_id for e in _alone(rel, "acp")}) >= 1
    connection = Connection(adapter_class("acp"))
    for line in _lines("acp/captures/acp-handwritten/a_initialize_new_prompt_streaming.tap.jsonl"):
        connection.feed(json.dumps(line["msg"]).encode(), line["from"])
    connection.close()
    assert len(connection.sessions) == 1


def test_a_response_goes_to_the_session_its_request_went_to() -> None:
    connection = Connection(adapter_class("acp"))
    perm = {"toolCall": {"toolCallId": "t1"}, "options": [{"optionId": "ok", "name": "OK", "kind": "allow_once"}]}
    wire: list[tuple[dict[str, Any], Direction]] = [
        ({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}, "client"),
        ({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}}, "agent"),
        ({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/a"}}, "client"),
        ({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/b"}}, "client"),
        ({"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "B"}}, "agent"),  # answered out of order
        ({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "A"}}, "agent"),
        # the agent asks in session B with id 1: ids collide across directions
        (
            {"jsonrpc": "2.0", "id": 1, "method": "session/request_permission", "params": {"sessionId": "B", **perm}},
            "agent",
        ),
        ({"jsonrpc": "2.0", "id": 1, "result": {"outcome": {"outcome": "selected", "optionId": "ok"}}}, "client"),
    ]
    out: list[Any] = []
    for msg, side in wire:
        out += connection.feed(json.dumps(msg).encode(), side)
    out += connection.close()
    records = {e.session_id: e.record for e in out if isinstance(e, SessionCreated)}
    assert sorted((r.native_session_id, r.cwd) for r in records.values()) == [("A", "/a"), ("B", "/b")]
    resolved = [
        (records[e.session_id].native_session_id, e.event.body.decision)
        for e in out
        if isinstance(e, SessionEvent) and isinstance(e.event.body, RequestResolved)
    ]
    assert resolved == [("B", "allow")]
    assert all(s.closed for s in connection.sessions)


@pytest.mark.parametrize("opened", [False, True])
def test_sessions_no_message_announces_get_ids_of_their_own(opened: bool) -> None:
    """Two sessions of one connection that nothing announces (a capture begun after they were
    opened, or openers never answered) begin with the same handshake: each still gets an id
    of its own, and keeps it."""
    connection = Connection(adapter_class("acp"))
    wire: list[tuple[dict[str, Any], Direction]] = [
        ({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}, "client"),
        ({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}}, "agent"),
    ]
    for n, sid in enumerate("AB"):
        if opened:  # a session/new never answered: its session is opened, and not named
            wire.append(({"jsonrpc": "2.0", "id": n + 1, "method": "session/new", "params": {"cwd": "/"}}, "client"))
        else:  # updates of sessions opened before the capture began
            chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": sid}}
            update = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": chunk}}
            wire.append((update, "agent"))
    out: list[Any] = []
    for msg, side in wire:
        out += connection.feed(json.dumps(msg).encode(), side)
    out += connection.close()
    assert len(connection.sessions) == 2
    created = [e.session_id for e in out if isinstance(e, SessionCreated)]
    assert len(created) == 2 and len(set(created)) == 2
    assert {s.session_id for s in connection.sessions} == set(created)


def test_convert_into_a_folder_writes_one_file_per_session(tmp_path: Path) -> None:
    from normalize._cli import main

    capture = ADAPTERS / "acp/captures/edge-cases/second-session-start.tap.jsonl"
    assert main(["convert", str(capture), "-o", f"{tmp_path}/"]) == 0
    files = sorted(tmp_path.rglob("*.normalized.jsonl"))
    assert [f.name.startswith("second-session-start.") for f in files] == [True, True]
    ids: list[str] = []
    for f in files:
        lines = [json.loads(line) for line in f.read_text().splitlines()]
        assert lines[0]["type"] == "stream.header"  # each file a stream of its own
        sids = {line["sessionId"] for line in lines[1:]}
        assert len(sids) == 1
        ids += sids
    alone = convert_records(records_of([capture]), "acp")
    assert sorted(ids) == sorted({e.session_id for e in alone})


# ------------------------------------------------------------ a string read at a path of a message

_keys = st.sampled_from(["a", "b", "sessionId"])
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=12,
)


def _generic_at(raw: bytes, path: tuple[str, ...]) -> str | None:
    """The string at ``path``, read from the whole value decoded as dicts and lists."""
    try:
        value: Any = json.loads(raw)
    except ValueError:
        return None
    for name in path:
        if not isinstance(value, dict):
            return None
        value = value.get(name)
    return value if isinstance(value, str) and value else None


@settings(max_examples=400, deadline=None)
@example(value={"a": ""}, path=("a",), cut=False)  # an empty name names nothing
@example(value={"a": 7}, path=("a",), cut=False)
@example(value={"a": {"b": "s-1"}, "sessionId": [1]}, path=("a", "b"), cut=False)
@example(value={"a": None}, path=("a", "b"), cut=False)
@example(value={"a": ["s-1"]}, path=("a", "b"), cut=False)
@example(value=["s-1"], path=("a",), cut=False)
@example(value={"a": {"b": "s-1"}}, path=("a", "b"), cut=True)
@given(
    value=_json,
    path=st.lists(_keys, min_size=1, max_size=3).map(tuple),
    cut=st.booleans(),
)
def test_the_string_at_a_path_is_what_the_whole_decoded_value_holds_there(
    value: Any, path: tuple[str, ...], cut: bool
) -> None:
    """A response names its session at a path (``result.sessionId``); only that path is read."""
    raw = json.dumps(value).encode()
    if cut:
        raw = raw[: len(raw) // 2]  # not JSON: nothing is read
    assert _at(raw, path) == _generic_at(raw, path)


def _kind_fits(message: dict[str, Any], path: tuple[str, ...]) -> bool:
    """Whether every value along ``path`` is of the kind a routing view reads there: an
    object (or null, or absent) on the way, a string (or null, or absent) at its end."""
    value: Any = message
    for name in path:
        if value is None:
            return True
        if not isinstance(value, dict):
            return False
        if name not in value:
            return True
        value = value[name]
    return value is None or isinstance(value, str)


_paths_of = st.lists(st.lists(_keys, min_size=1, max_size=3).map(tuple), min_size=1, max_size=3)


@settings(max_examples=400, deadline=None)
@example(params={"a": {"b": "s-1"}}, result={"b": "s-2"}, named=[("a", "b")], opened=[("b",)])
@example(params={"a": "s-1"}, result=None, named=[("a", "b")], opened=[("a",)])  # a string on the way
@example(params={"a": {"b": 7}}, result=None, named=[("a", "b")], opened=[("a",)])  # a number at the end
@example(params={"a": "s-1"}, result=None, named=[("a",), ("a", "b")], opened=[("a",)])  # paths that do not fit
@given(params=_json, result=_json, named=_paths_of, opened=_paths_of)
def test_the_routing_view_reads_each_path_as_the_whole_decoded_message_holds_it(
    params: Any, result: Any, named: list[tuple[str, ...]], opened: list[tuple[str, ...]]
) -> None:
    """A connection reads the paths of its routing tables (``named_in`` in ``params``,
    ``opened_by`` in ``result``) in its one decode of a message: each string read is what
    the whole decoded message holds there.  A message with a value of another kind on a path
    fails that decode (and only such a message): the connection then reads it without the
    paths, and reads the path apart, as before."""
    paths = tuple(("params", *p) for p in named) + tuple(("result", *p) for p in opened)
    view = _View("sessionId", tuple(dict.fromkeys(paths)))
    message = {"id": 1, "params": params, "result": result}
    raw = json.dumps(message).encode()
    if not view.paths:  # a path runs through another one's string: no view holds both
        assert view.decoder is view.plain
        return
    fits = all(_kind_fits(message, p) for p in (*paths, ("params", "sessionId")))
    try:
        read = view.decoder.decode(raw)
    except msgspec.ValidationError:
        assert not fits
        return
    assert fits
    for path in paths:
        assert _walk(read, view.paths[path]) == _generic_at(raw, path)
    key = getattr(read.params, view.key) if read.params is not None else None
    assert key == (params.get("sessionId") if isinstance(params, dict) else None)


def _acp_connection_stream() -> list[Message]:
    """Every ACP capture's messages one after another on one connection (a session per
    capture, as the benchmark's generated stream has), as the agents wrote them (compact
    JSON), with a few lines the adapter's one-pass view does not take."""
    messages: list[Message] = []
    for path in sorted((ADAPTERS / "acp" / "captures").rglob("*.tap.jsonl")):
        messages += _without_handshake(path) if messages else _messages(path)
    update = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%s","update":%s}}'
    chunk = b'{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"%s"}}'
    head = update[:42]  # {"jsonrpc":"2.0","method":"session/update"
    sid = next(json.loads(m.data)["params"]["sessionId"] for m in messages if m.data.startswith(head)).encode()
    odd = [
        # not UTF-8 in a member the view skips: peeked at, then reported by the Session, and
        # the adapter not fed (its view is never used)
        update % (sid, (chunk[:-1] + b',"extra":"\xff"}') % b"not UTF-8"),
        update % (sid, b'{"sessionUpdate":"a_variant_not_known_yet"}'),  # not the one-pass view's
        update % (sid, chunk % b"after the bad line"),
        update.replace(b'"params"', b'"id":null,"params"') % (sid, chunk % b"an id"),
        update % (b"no-such-session", chunk % b"a session named first here"),
        update % (sid, chunk % b"and back"),
    ]
    return messages + [Message(data=line, from_="agent", t="2026-01-01T00:00:00.000Z") for line in odd]


def test_a_notification_the_adapter_peeks_at_gives_what_one_decoded_twice_gives() -> None:
    """A Connection routes an ACP ``session/update`` with the adapter's own decode (``peek``)
    and hands the view to the session's adapter: the events are those of the Connection
    that decodes every message itself, over every ACP capture on one connection."""
    messages = _acp_connection_stream()
    peeked: list[bytes] = []

    def run(peek: bool) -> list[bytes]:
        connection = Connection(adapter_class("acp"), clock=fixed_clock)
        own = connection._peek
        assert own is not None  # the ACP adapter peeks
        if peek:

            def counted(message: bytes) -> tuple[str, str | None, object] | None:
                view = own(message)
                if view is not None:
                    peeked.append(message)
                return view

            connection._peek = counted
        else:
            connection._peek = None
        out: list[Any] = []
        for m in messages:
            out += connection.feed(m.data, m.from_, t=m.t)
        out += connection.close()
        assert len(connection.sessions) > 20
        return [encode(e) for e in out]

    assert run(peek=True) == run(peek=False)
    updates = [m.data for m in messages if m.data.startswith(b'{"jsonrpc":"2.0","method":"session/update"')]
    assert len(peeked) > len(updates) // 2  # most of them, once the connection holds several sessions
    assert b"\xff" in b"".join(peeked)  # the line the Session rejects was peeked at, its view never used


def _codex_streams() -> list[list[Message]]:
    """Every Codex app-server capture's messages (a connection each), and lines of the last
    one's threads that the one-pass views do not take or that are not as the agent writes
    them: the same output is asked of them, errors included."""
    streams = [_messages(path) for path in sorted((ADAPTERS / "codex-app-server" / "captures").rglob("*.tap.jsonl"))]
    last = streams[-1]
    thread = next(
        json.loads(m.data)["params"]["threadId"] for m in last if b'"method":"item/started"' in m.data[:40]
    ).encode()
    note = b'{"method":"%s","params":{"threadId":"' + thread + b'"%s},"emittedAtMs":%s}'
    odd = [
        note % (b"item/started", b"", b"1780000000000"),  # no item: reported
        note % (b"item/agentMessage/delta", b',"itemId":"m1","delta":7', b"1780000000001"),  # a number
        note % (b"item/completed", b',"item":{"type":"aNewKind","id":"x1"}', b"1780000000002"),
        note % (b"item/started", b',"item":{"type":"agentMessage"}', b"1780000000005"),  # no id: reported
        note % (b"thread/status/changed", b',"status":{"type":"idle"}', b'"later"'),  # a time not a number
        note % (b"thread/status/changed", b',"status":"\xff"', b"1780000000003"),  # not UTF-8
        note % (b"thread/tokenUsage/updated", b',"tokenUsage":{"total":{}}', b"null"),
        note.replace(b'"params"', b'"id":null,"params"') % (b"turn/completed", b',"turn":{"id":"t9"}', b"1"),
        b'{"method":"remoteControl/status/changed","params":5,"emittedAtMs":1780000000004}',
    ]
    at = "2026-01-01T00:00:00.000Z"
    return [*streams, last + [Message(data=line, from_="agent", t=at) for line in odd]]


def test_a_notification_whose_method_its_adapter_is_handed_gives_what_two_decodes_give() -> None:
    """A Connection hands the Codex app-server adapter the method of each notification it
    read to route it (``takes_methods``), and the adapter decodes the most frequent ones
    whole in one pass: the events are those of the envelope then the params, over every
    capture and lines that view does not take."""

    def run(messages: list[Message], hand: bool) -> list[bytes]:
        connection = Connection(adapter_class("codex-app-server"), clock=fixed_clock)
        assert connection._hands_methods
        connection._hands_methods = hand
        out: list[Any] = []
        for m in messages:
            out += connection.feed(m.data, m.from_, t=m.t)
        out += connection.close()
        return [encode(e) for e in out]

    for messages in _codex_streams():
        assert run(messages, hand=True) == run(messages, hand=False)


# ------------------------------------------------------------ connections one after another on one input


def _handshake_ids(messages: list[Message]) -> tuple[int | str | None, bool]:
    """The id of the first message's request if it is the client's ``initialize``, and
    whether the agent answered it with a result."""
    first = _json_object(messages[0]) if messages else {}
    if messages[0].from_ != "client" or first.get("method") != "initialize":
        return None, False
    for m in messages[1:]:
        msg = _json_object(m)
        if m.from_ == "agent" and "method" not in msg and msg.get("id") == first.get("id"):
            return first.get("id"), "result" in msg
    return first.get("id"), False


def _json_object(m: Message) -> dict[str, Any]:
    """The message as a JSON object; {} for a line that is not one (the edge cases have such)."""
    try:
        value = json.loads(m.data)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _messages(path: Path) -> list[Message]:
    return [r for r in records_of([path]) if isinstance(r, Message)]


def _without_handshake(path: Path) -> list[Message]:
    """A capture's messages less its ``initialize`` and the answer: its sessions, as they
    would go on a connection begun before."""
    messages = _messages(path)
    rid, _ = _handshake_ids(messages)

    def handshake(m: Message) -> bool:
        msg = _json_object(m)
        return bool(msg) and msg.get("id") == rid and msg.get("method") in (None, "initialize")

    return [m for m in messages if rid is None or not handshake(m)]


def _greeted(protocol: str) -> list[Path]:
    """The captures of ``protocol`` that begin with an ``initialize`` the agent accepted."""
    return [
        path
        for path in sorted((ADAPTERS / protocol / "captures").rglob("*.tap.jsonl"))
        if _handshake_ids(_messages(path))[1]
    ]


END_TO_END = [
    (protocol, a, b)
    for protocol in ("acp", "codex-app-server")
    for paths in [_greeted(protocol)]
    for a, b in zip(paths, paths[1:] + paths[:1], strict=True)
]


@pytest.mark.parametrize(
    ("protocol", "first", "second"),
    END_TO_END,
    ids=[f"{a.parent.name}/{a.name}+{b.parent.name}/{b.name}" for _, a, b in END_TO_END],
)
def test_recordings_put_end_to_end_convert_as_each_alone(protocol: str, first: Path, second: Path) -> None:
    """Two recordings on one input (an agent started again, or files concatenated): the
    second's accepted ``initialize`` begins a new connection, so the events are those of
    each recording converted alone, one after the other: every session has its own
    handshake, and those of the first end where its connection ended."""
    both = convert_records([*records_of([first]), *records_of([second])], protocol)
    alone = convert_records(records_of([first]), protocol) + convert_records(records_of([second]), protocol)
    assert [encode(e) for e in both] == [encode(e) for e in alone]


def _pipelined(records: list[Any]) -> list[Any] | None:
    """A recording as a client that does not wait would send it: the client's messages that
    follow the answer to its ``initialize`` (up to the agent's next message) sent before that
    answer.  None unless the answer is the recording's second record and such messages follow."""
    rid, accepted = _handshake_ids([r for r in records if isinstance(r, Message)])
    answer = records[1] if len(records) > 1 else None
    if not accepted or not isinstance(answer, Message) or answer.from_ != "agent":
        return None
    if _json_object(answer).get("id") != rid or "method" in _json_object(answer):
        return None
    end = 2
    while end < len(records) and isinstance(records[end], Message) and records[end].from_ == "client":
        end += 1
    return [records[0], *records[2:end], answer, *records[end:]] if end > 2 else None


#: one recording put after another per kit (its version's folder), sent by a client that
#: does not wait for the answer to its ``initialize``
PIPELINED = list(
    {
        (protocol, b.parent): (protocol, a, b)
        for protocol, a, b in reversed(END_TO_END)
        if _pipelined(list(records_of([b]))) is not None
    }.values()
)


@pytest.mark.parametrize(
    ("protocol", "first", "second"),
    PIPELINED,
    ids=[f"{a.parent.name}/{a.name}+{b.parent.name}/{b.name}" for _, a, b in PIPELINED],
)
def test_a_client_that_does_not_wait_for_the_answer_to_initialize(protocol: str, first: Path, second: Path) -> None:
    """The client's messages sent between the repeated ``initialize`` and its answer (the
    client's ``initialized``, its first ``session/new`` or ``thread/start``) belong to the
    connection that answer begins: the events are those of each recording alone."""
    late = _pipelined(list(records_of([second])))
    assert late is not None
    both = convert_records([*records_of([first]), *late], protocol)
    alone = convert_records(records_of([first]), protocol) + convert_records(records_of([second]), protocol)
    assert [encode(e) for e in both] == [encode(e) for e in alone]


def test_a_connection_begun_again_names_each_session_with_its_own_agent_version() -> None:
    kit = ADAPTERS / "codex-app-server" / "captures"
    first, second = kit / "codex-0.142.2/a_simple_text.tap.jsonl", kit / "codex-0.155.0/e_two_turns.tap.jsonl"
    connection = Connection(adapter_class("codex-app-server"), clock=fixed_clock)
    out: list[Any] = []
    for m in [*_messages(first), *_messages(second)]:
        out += connection.feed(m.data, m.from_, t=m.t)
    assert len(connection.sessions) == 1  # the sessions of the first connection were let go
    out += connection.close()
    versions = [e.record.agent_version for e in out if isinstance(e, SessionCreated)]
    assert versions == ["0.142.2", "0.155.0"]
    handshakes = [
        (e.session_id, json.loads(encode(e))["update"]["payload"]["result"]["userAgent"].split(" ")[0])
        for e in out
        if isinstance(e, SessionUpdate) and b'"userAgent"' in encode(e)
    ]
    sids = list(dict.fromkeys(e.session_id for e in out))
    assert handshakes == [(sids[0], "normalize_record/0.142.2"), (sids[1], "normalize_record/0.155.0")]


def _acp(msg: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **msg}).encode()


#: an ACP connection whose one session, A, is in a turn
_IN_A_TURN: list[tuple[dict[str, Any], Direction]] = [
    ({"id": 0, "method": "initialize", "params": {"protocolVersion": 1}}, "client"),
    ({"id": 0, "result": {"protocolVersion": 1}}, "agent"),
    ({"id": 1, "method": "session/new", "params": {"cwd": "/a"}}, "client"),
    ({"id": 1, "result": {"sessionId": "A"}}, "agent"),
    ({"id": 2, "method": "session/prompt", "params": {"sessionId": "A", "prompt": []}}, "client"),
]


def _one_session(
    *,
    again: dict[str, Any] | None,
    then: list[tuple[dict[str, Any], Direction]],
    before: list[tuple[dict[str, Any], Direction]] = [],  # noqa: B006 (never changed)
) -> list[Any]:
    """An ACP connection with one session in a turn, then ``initialize`` sent again, then
    ``before``, then the answer ``again`` (None: not answered), then ``then``; its events."""
    wire = [*_IN_A_TURN, ({"id": 3, "method": "initialize", "params": {"protocolVersion": 1}}, "client"), *before]
    if again is not None:
        wire.append(({"id": 3, **again}, "agent"))
    wire += then
    connection = Connection(adapter_class("acp"), clock=fixed_clock)
    out: list[Any] = []
    for msg, side in wire:
        out += connection.feed(_acp(msg), side)
    return out + connection.close()


def _story(out: list[Any]) -> list[tuple[str, str]]:
    """(native session, what) for each record, state and turn end."""
    names = {e.session_id: e.record.native_session_id for e in out if isinstance(e, SessionCreated)}
    story: list[tuple[str, str]] = []
    for e in out:
        data = json.loads(encode(e))
        if data["type"] == "session.stateChanged":
            story.append((names.get(e.session_id) or "?", data["state"]))
        elif data["type"] == "session.event" and data["event"]["kind"] == "turn-complete":
            story.append((names.get(e.session_id) or "?", "turn " + data["event"]["reason"]))
    return story


def test_an_initialize_sent_again_and_accepted_ends_the_sessions_of_the_connection_before() -> None:
    end: list[tuple[dict[str, Any], Direction]] = [
        ({"id": 2, "result": {"stopReason": "end_turn"}}, "agent"),  # the old connection's: answered by no one now
        ({"id": 4, "method": "session/new", "params": {"cwd": "/b"}}, "client"),
        ({"id": 4, "result": {"sessionId": "B"}}, "agent"),
    ]
    story = _story(_one_session(again={"result": {"protocolVersion": 1}}, then=end))
    assert ("A", "turn interrupt") in story and ("A", "failed") in story  # cut off where its agent went away
    assert story.index(("A", "failed")) < story.index(("B", "ended"))
    assert [s for s in story if s[0] == "B"] == [("B", "ended")]  # a session of its own, no turn


def test_a_session_opened_before_the_answer_to_initialize_is_on_the_new_connection() -> None:
    """A client that does not wait: ``session/new`` sent right after the repeated
    ``initialize``, before its answer, opens its session on the connection that answer begins."""
    end: list[tuple[dict[str, Any], Direction]] = [({"id": 4, "result": {"sessionId": "B"}}, "agent")]
    out = _one_session(
        again={"result": {"protocolVersion": 1}},
        then=end,
        before=[({"id": 4, "method": "session/new", "params": {"cwd": "/b"}}, "client")],
    )
    story = _story(out)
    assert story.index(("A", "failed")) < story.index(("B", "ended"))
    assert [s for s in story if s[0] == "B"] == [("B", "ended")]
    assert not [s for s in story if s[0] == "?"]  # no session left without its native id
    created = [e for e in out if isinstance(e, SessionCreated)]
    b = next(e.session_id for e in created if e.record.native_session_id == "B")
    b_said = [_payload(e) for e in out if isinstance(e, SessionEvent | SessionUpdate) and e.session_id == b]
    assert any('"/b"' in p for p in b_said)  # its own request is in its stream
    assert sum('"method": "initialize"' in p for p in b_said) == 1  # with the handshake that began it


def test_a_permission_answered_after_initialize_is_sent_again_is_the_earlier_agent_s() -> None:
    """The client answers the agent's request after sending ``initialize`` again: that answer
    is not held with it (the request was the earlier agent's), so it resolves the request in
    its session before the new connection begins."""
    wire: list[tuple[dict[str, Any], Direction]] = [
        *_IN_A_TURN,
        (
            {
                "id": 7,
                "method": "session/request_permission",
                "params": {
                    "sessionId": "A",
                    "toolCall": {"toolCallId": "t1", "title": "ls", "kind": "execute"},
                    "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}],
                },
            },
            "agent",
        ),
        ({"id": 3, "method": "initialize", "params": {"protocolVersion": 1}}, "client"),
        ({"id": 7, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}, "client"),
        ({"id": 3, "result": {"protocolVersion": 1}}, "agent"),
    ]
    connection = Connection(adapter_class("acp"), clock=fixed_clock)
    out: list[Any] = []
    for msg, side in wire:
        out += connection.feed(_acp(msg), side)
    out += connection.close()
    a = next(e.session_id for e in out if isinstance(e, SessionCreated) and e.record.native_session_id == "A")
    resolved = [
        (e.session_id, e.event.body.outcome, e.event.body.option_id)
        for e in out
        if isinstance(e, SessionEvent) and isinstance(e.event.body, RequestResolved)
    ]
    assert resolved == [(a, "answered", "allow")]  # by the client's answer, before its agent went away


def test_a_client_s_messages_held_past_the_bound_go_on_in_their_order() -> None:
    """``initialize`` sent again and never answered: the client's messages after it are held
    with it up to :data:`HANDSHAKE`; past that (or at the end of the input) they all go on,
    in their order, as messages of the connection they were sent on.  None is lost."""
    for count in (3, HANDSHAKE + 5):
        notes: list[tuple[dict[str, Any], Direction]] = [
            ({"method": "_note", "params": {"n": n}}, "client") for n in range(count)
        ]
        out = _one_session(again=None, then=[], before=notes)
        said = [json.loads(_payload(e)) for e in out if isinstance(e, SessionEvent | SessionUpdate)]
        numbers = [p["params"]["n"] for p in said if p and p.get("method") == "_note"]
        assert numbers == list(range(count))
        assert sum(bool(p) and p.get("method") == "initialize" for p in said) == 2
        assert len({e.session_id for e in out if isinstance(e, SessionEvent | SessionUpdate)}) == 1


def test_an_initialize_the_agent_refuses_changes_nothing() -> None:
    """Sent again on a live connection, ``initialize`` is refused: the connection and its
    session go on (the prompt's answer still ends the turn)."""
    end: list[tuple[dict[str, Any], Direction]] = [({"id": 2, "result": {"stopReason": "end_turn"}}, "agent")]
    story = _story(_one_session(again={"error": {"code": -32600, "message": "already initialized"}}, then=end))
    assert story[-2:] == [("A", "idle"), ("A", "ended")]
    assert ("A", "failed") not in story
    # and one never answered goes on as a message of the connection it was sent on
    out = _one_session(again=None, then=end)
    assert _story(out)[-2:] == [("A", "idle"), ("A", "ended")]
    payloads = [_payload(e) for e in out if isinstance(e, SessionEvent | SessionUpdate)]
    assert sum('"method": "initialize"' in p for p in payloads) == 2  # both requests, each kept once


# ------------------------------------------------------------ any order of handshakes, nothing lost


@cache
def _wire(protocol: str) -> list[Message]:
    """Every message of the protocol's captures, in capture order."""
    return [m for path in sorted((ADAPTERS / protocol / "captures").rglob("*.tap.jsonl")) for m in _messages(path)]


def _init(rid: int, protocol: str) -> bytes:
    body: dict[str, Any] = {"id": rid, "method": "initialize", "params": {"protocolVersion": 1}}
    return json.dumps({"jsonrpc": "2.0", **body} if protocol == "acp" else body).encode()


def _answer(rid: int, protocol: str, accepted: bool) -> bytes:
    said: dict[str, Any] = {"result": {"protocolVersion": 1}} if accepted else {"error": {"code": -1, "message": "no"}}
    body = {"id": rid, **said}
    return json.dumps({"jsonrpc": "2.0", **body} if protocol == "acp" else body).encode()


@st.composite
def _handshakes(draw: st.DrawFn, protocol: str) -> list[tuple[bytes, Direction]]:
    """A run of real messages with ``initialize`` sent again at random places, answered (a
    result or an error) later, or never, and lines cut short among them."""
    wire = _wire(protocol)
    start = draw(st.integers(0, len(wire) - 1))
    picked = [wire[(start + i) % len(wire)] for i in range(draw(st.integers(1, 60)))]
    out: list[tuple[bytes, Direction]] = [
        (_init(900_000, protocol), "client"),
        (_answer(900_000, protocol, True), "agent"),
    ]
    waiting: list[int] = []
    for n, m in enumerate(picked):
        data = m.data[: draw(st.integers(1, len(m.data)))] if draw(st.integers(0, 15)) == 0 else m.data
        out.append((data, m.from_))
        what = draw(st.integers(0, 9))
        if what == 0:
            waiting.append(900_001 + n)
            out.append((_init(waiting[-1], protocol), "client"))
        elif what == 1 and waiting:
            out.append(
                (_answer(waiting.pop(draw(st.integers(0, len(waiting) - 1))), protocol, draw(st.booleans())), "agent")
            )
    return out


@pytest.mark.parametrize("protocol", ["acp", "codex-app-server"])
def test_any_order_of_handshakes_and_answers_loses_no_message(protocol: str) -> None:
    """However ``initialize`` is sent again and answered (a new connection, a refusal, no
    answer), every message comes out in the events, and only those; each session's seq runs
    from 1 without a gap."""

    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_handshakes(protocol))
    def check(wire: list[tuple[bytes, Direction]]) -> None:
        connection = Connection(adapter_class(protocol), clock=fixed_clock)
        out: list[Any] = []
        for data, side in wire:
            out += connection.feed(data, side)
        out += connection.close()
        sent = {data for data, _ in wire}
        said = set(native_payloads(out))
        assert said <= sent | {d.decode("utf-8", "replace").encode() for d in sent}
        assert all(data in said or data.decode("utf-8", "replace").encode() in said for data in sent)
        # seq goes on by one per session; a record (created, or resumed) lets it start again at 1
        last: dict[str, int] = {}
        recorded: set[str] = set()
        for e in out:
            if isinstance(e, SessionCreated | SessionResumed):
                recorded.add(e.session_id)
            elif isinstance(e, SessionEvent):
                seq = e.event.seq
                assert seq == last.get(e.session_id, 0) + 1 or (seq == 1 and e.session_id in recorded)
                last[e.session_id] = seq
                recorded.discard(e.session_id)

    check()

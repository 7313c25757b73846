"""The envelope rules of docs/events.md, one test each, then properties over arbitrary adapter output."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import normalize
from normalize import (
    AssistantDelta,
    PermissionRequest,
    RequestResolved,
    Session,
    SessionEvent,
    ToolCallRef,
    TurnComplete,
    TurnStart,
    format_ts,
)
from normalize._model import _Core
from normalize.adapters._times import ms_time, s_time
from scripted import ScriptedAdapter, msg
from strategies import bodies

NOW = 1767225600.0


def session(**kw: Any) -> Session:
    return Session(ScriptedAdapter(), clock=lambda: NOW, **kw)


def run(messages: list[bytes], **kw: Any) -> list[_Core]:
    s = session(**kw)
    out: list[_Core] = []
    for m in messages:
        out += s.feed(m)
    return out + s.close()


def evs(out: list[_Core]) -> list[normalize.EventEnvelope]:
    return [e.event for e in out if isinstance(e, SessionEvent)]


def delta(text: str = "x") -> AssistantDelta:
    return AssistantDelta(message_id="m", text=text)


# -- seq ---------------------------------------------------------------------------------------


def test_seq_starts_at_1_and_counts_every_session_event_without_gaps() -> None:
    out = run([msg(TurnStart(), delta()), msg(delta(), delta(), sub="a1"), msg(TurnComplete(reason="ok"))])
    assert [e.seq for e in evs(out)] == [1, 2, 3, 4, 5]


def test_subagent_events_share_the_parent_seq_space() -> None:
    out = run([msg(delta()), msg(delta(), sub="sub-1"), msg(delta())])
    assert [(e.seq, e.subagent_id) for e in evs(out)] == [(1, None), (2, "sub-1"), (3, None)]


def test_a_subagent_body_carries_only_its_own_subagent_id() -> None:
    (ev,) = evs(session().feed(msg(normalize.Subagent(subagent_id="child", phase="started"), sub="parent")))
    assert ev.subagent_id is None
    plain = msgspec.structs.replace(ev, native=normalize.Native(protocol="p", payload=None))
    assert normalize.encode(normalize.SessionEvent(session_id="s", event=plain)).count(b'"subagentId"') == 1


# -- turnId ------------------------------------------------------------------------------------


def test_turn_ids_cover_turn_start_to_turn_complete_inclusive_and_nothing_outside() -> None:
    out = run([msg(delta()), msg(TurnStart()), msg(delta()), msg(TurnComplete(reason="ok")), msg(delta()),
               msg(TurnStart(), TurnComplete(reason="interrupt"))])  # fmt: skip
    assert [(e.kind, e.turn_id) for e in evs(out)] == [
        ("assistant-delta", None),
        ("turn-start", "turn:1"),
        ("assistant-delta", "turn:1"),
        ("turn-complete", "turn:1"),
        ("assistant-delta", None),
        ("turn-start", "turn:2"),
        ("turn-complete", "turn:2"),
    ]


def test_a_turn_start_inside_an_open_turn_closes_it_first() -> None:
    got = evs(run([msg(TurnStart()), msg(TurnStart()), msg(TurnComplete(reason="ok"))]))
    assert [(e.kind, e.turn_id, e.native.protocol) for e in got] == [
        ("turn-start", "turn:1", "scripted"),
        ("turn-complete", "turn:1", "core"),
        ("turn-start", "turn:2", "scripted"),
        ("turn-complete", "turn:2", "scripted"),
    ]
    assert isinstance(got[1].body, TurnComplete) and got[1].body.reason == "interrupt"


def test_a_turn_complete_without_a_start_gets_a_synthesized_start() -> None:
    got = evs(run([msg(TurnComplete(reason="ok"))]))
    assert [(e.kind, e.turn_id, e.native.protocol) for e in got] == [
        ("turn-start", "turn:1", "core"),
        ("turn-complete", "turn:1", "scripted"),
    ]


def test_a_turn_open_at_close_is_reported_cut_off_and_the_session_fails() -> None:
    out = run([msg(TurnStart(), delta())])
    got = evs(out)
    assert [(e.kind, e.turn_id, e.native.protocol) for e in got[-2:]] == [
        ("error", "turn:1", "core"),
        ("turn-complete", "turn:1", "core"),
    ]
    assert isinstance(got[-2].body, normalize.Error) and got[-2].body.error_type == "cut-off"
    assert isinstance(out[-2], normalize.SessionFailed)
    assert out[-1] == normalize.SessionStateChanged(session_id=out[-1].session_id, state="failed")


# -- origin ------------------------------------------------------------------------------------


def test_origin_is_live_by_default_replay_for_stored_formats_and_per_event_when_the_adapter_says() -> None:
    assert {e.origin for e in evs(run([msg(delta())]))} == {"live"}
    assert {e.origin for e in evs(run([msg(delta())], origin="replay"))} == {"replay"}
    got = evs(run([msg(delta(), origin="replay"), msg(delta())]))
    assert [(e.seq, e.origin) for e in got] == [(1, "replay"), (2, "live")]

    class Stored(ScriptedAdapter):
        stored = True

    s = Session(Stored(), clock=lambda: NOW)
    assert {e.origin for e in evs(s.feed(msg(delta())))} == {"replay"}


# -- ts ----------------------------------------------------------------------------------------


def test_ts_is_native_then_capture_time_then_clock() -> None:
    s = session()
    native = evs(s.feed(msg(delta(), ts="2025-05-05T05:05:05Z"), t="2026-02-02T00:00:00.000Z"))
    capture = evs(s.feed(msg(delta()), t="2026-02-02T00:00:00.000Z"))
    clock = evs(s.feed(msg(delta())))
    assert [native[0].ts, capture[0].ts, clock[0].ts] == [
        "2025-05-05T05:05:05Z",
        "2026-02-02T00:00:00.000Z",
        "2026-01-01T00:00:00.000Z",
    ]


def test_a_made_up_event_in_stored_history_takes_the_nearest_native_time_not_the_clock() -> None:
    s = session(origin="replay")
    s.feed(msg(TurnStart(), delta(), ts="2025-05-05T05:05:05Z"))
    got = evs(s.feed(msg(delta())) + s.close())  # a message without time, then the cut-off at close
    assert [(e.kind, e.native.protocol, e.ts) for e in got] == [
        ("assistant-delta", "scripted", "2026-01-01T00:00:00.000Z"),  # a real message: the clock
        ("error", "core", "2025-05-05T05:05:05Z"),
        ("turn-complete", "core", "2025-05-05T05:05:05Z"),
    ]


def test_a_made_up_event_live_takes_the_nearest_native_time_too() -> None:
    # a live stream and the conversion of its recording say the same: the time of the
    # last line, not the clock of whoever converts (normalize.drive compares them)
    live = session()
    live.feed(msg(TurnStart(), delta(), ts="2025-05-05T05:05:05Z"))
    assert {e.ts for e in evs(live.close())} == {"2025-05-05T05:05:05Z"}
    recorded = session()
    recorded.feed(msg(TurnStart(), delta()), t="2026-02-02T00:00:00.000Z")
    assert {e.ts for e in evs(recorded.close())} == {"2026-02-02T00:00:00.000Z"}


def test_a_made_up_event_before_any_time_takes_the_clock() -> None:
    stored = session(origin="replay")
    stored.feed(msg(TurnStart()))
    assert {e.ts for e in evs(stored.close())} == {"2026-01-01T00:00:00.000Z"}


# -- native ------------------------------------------------------------------------------------


def test_native_carries_the_message_unchanged_and_core_marks_synthesized_events() -> None:
    m = msg(delta(), method="text_delta")
    (ev,) = evs(session().feed(m))
    assert ev.native.protocol == "scripted"
    assert ev.native.method == "text_delta"
    assert bytes(ev.native.payload) == m
    cut = evs(run([msg(TurnStart())]))
    assert cut[-1].native == normalize.Native(protocol="core", method="close", payload=None)


# -- nothing is lost ---------------------------------------------------------------------------


def test_an_untranslated_message_becomes_session_update() -> None:
    out = session().feed(b'{"something": "else"}')
    assert [type(e).__name__ for e in out] == ["SessionCreated", "SessionUpdate"]
    upd = out[-1]
    assert isinstance(upd, normalize.SessionUpdate)
    assert bytes(upd.update.payload) == b'{"something": "else"}'


def test_bad_input_is_an_error_event_and_the_stream_goes_on() -> None:
    s = session()
    bad = evs(s.feed(b"{not json"))
    assert bad[0].kind == "error"
    assert isinstance(bad[0].body, normalize.Error)
    assert bad[0].body.error_type == "malformed" and bad[0].body.recoverable is True
    assert bad[0].native.payload == "{not json"  # what could be kept, as text
    assert evs(s.feed(msg(delta())))[0].seq == 2


def test_strict_mode_raises_typed_input_errors() -> None:
    s = session(strict=True)
    with pytest.raises(normalize.MalformedMessage):
        s.feed(b"{not json")
    with pytest.raises(normalize.ProtocolViolation):
        s.feed(msg(bad=True))
    assert issubclass(normalize.MalformedMessage, normalize.InputError)
    assert not issubclass(normalize.UsageError, normalize.InputError)


def test_misuse_raises_usage_error() -> None:
    s = session()
    s.feed(msg(delta()))
    s.close()
    with pytest.raises(normalize.UsageError):
        s.feed(msg(delta()))
    with pytest.raises(normalize.UsageError):
        s.close()
    adapter = ScriptedAdapter()
    adapter.close()
    with pytest.raises(normalize.UsageError):
        adapter.feed(msg())


# -- session lifecycle -------------------------------------------------------------------------


def test_session_created_comes_first_and_states_follow_turns_and_requests() -> None:
    req = PermissionRequest(request_id="r1", tool_call=ToolCallRef(call_id="c", tool="Bash", title="ls"), options=[])
    out = run([msg(TurnStart()), msg(req), msg(RequestResolved(request_id="r1", outcome="answered")),
               msg(TurnComplete(reason="ok"))])  # fmt: skip
    assert isinstance(out[0], normalize.SessionCreated)
    assert out[0].record.agent == "scripted-agent" and out[0].record.protocol == "scripted"
    states = [e.state for e in out if isinstance(e, normalize.SessionStateChanged)]
    assert states == ["running", "waiting", "running", "idle", "ended"]


def test_determinism_same_input_and_clock_give_identical_bytes() -> None:
    messages = [msg(TurnStart(), delta("a")), b"junk", msg(TurnComplete(reason="ok"))]
    one = b"\n".join(normalize.encode(e) for e in run(messages))
    two = b"\n".join(normalize.encode(e) for e in run(messages))
    assert one == two


# -- properties over arbitrary adapter outputs -------------------------------------------------

scripts = st.lists(
    st.one_of(
        st.lists(bodies, max_size=4).map(lambda bs: msg(*bs)),
        st.lists(bodies, min_size=1, max_size=3).map(lambda bs: msg(*bs, sub="sub-a")),
        st.binary(max_size=20),
        st.just(b'{"unknown": true}'),
    ),
    max_size=25,
)


@settings(max_examples=200, deadline=None)
@given(scripts)
def test_properties_hold_for_any_adapter_output(messages: list[bytes]) -> None:
    s = session()
    out: list[_Core] = []
    for m in messages:
        got = s.feed(m)
        out += got
        # no loss: the message is carried by what it produced, and nothing else is
        carried = [e.event.native.payload for e in got if isinstance(e, SessionEvent)
                   and e.event.native.protocol != "core"]  # fmt: skip
        carried += [e.update.payload for e in got if isinstance(e, normalize.SessionUpdate)]
        as_bytes = {p.encode() if isinstance(p, str) else bytes(p) for p in carried}
        assert carried, m
        assert as_bytes == {m if _is_json(m) else m.decode("utf-8", "replace").encode()}
    out += s.close()
    envs = evs(out)
    assert [e.seq for e in envs] == list(range(1, len(envs) + 1))
    open_turn: str | None = None
    n = 0
    for e in envs:
        if e.kind == "turn-start":
            assert open_turn is None
            n += 1
            open_turn = f"turn:{n}"
        assert e.turn_id == open_turn
        if e.kind == "turn-complete":
            open_turn = None
    assert open_turn is None  # close() settles every turn


def _is_json(m: bytes) -> bool:
    try:
        msgspec.json.decode(m)
    except msgspec.DecodeError:
        return False
    return True


def test_json_nested_deeper_than_the_decoder_goes_is_an_error_event_not_a_crash() -> None:
    deep = b'{"do":[' + b"[" * 100_000 + b"]" * 100_000 + b"]}"
    (ev,) = evs(session().feed(deep))
    assert isinstance(ev.body, normalize.Error)
    assert ev.body.error_type == "malformed" and "nested too deeply" in ev.body.message
    with pytest.raises(normalize.MalformedMessage):
        session(strict=True).feed(deep)


def test_a_line_that_never_became_a_message_keeps_what_could_be_kept() -> None:
    s = session()
    s.feed(msg(delta()))
    problem = normalize.LineTooLong("line 2 is longer than 10 bytes", kept='{"x":"yyyy')
    (ev,) = evs(s.feed_problem(problem, t="2026-01-01T00:00:01.000Z"))
    assert isinstance(ev.body, normalize.Error) and ev.body.error_type == "line-too-long"
    assert ev.native.payload == '{"x":"yyyy'
    assert ev.native.protocol == "scripted" and ev.ts == "2026-01-01T00:00:01.000Z"


def test_bad_input_inside_replayed_history_is_marked_replay() -> None:
    s = session()
    item = normalize.Problem(error=normalize.ProtocolViolation("a call ended twice"), origin="replay")
    s.adapter.feed = lambda message, from_="agent": [item]  # type: ignore[method-assign]
    (ev,) = evs(s.feed(b'{"x": 1}'))
    assert ev.kind == "error" and ev.origin == "replay"


def test_a_bad_line_under_the_bound_is_kept_whole_as_text() -> None:
    # a 51 KB tool result with one Latin-1 byte: its end is kept, the byte becomes U+FFFD
    line = b'{"result": "caf\xe9 ' + b"x" * 51_000 + b' the end"}'
    (ev,) = evs(session().feed(line))
    assert isinstance(ev.body, normalize.Error) and ev.body.error_type == "malformed"
    assert ev.native.payload == line.decode("utf-8", errors="replace")
    assert ev.native.payload.endswith(' the end"}')
    # and a line that is not JSON at all
    text = b"not json " + b"y" * 10_000
    (ev,) = evs(session().feed(text))
    assert ev.native.payload == text.decode()


# Where a line stops being UTF-8: the bytes Python's decoder refuses (a stray continuation
# byte, an overlong form, a surrogate, past U+10FFFF, a sequence cut short by ASCII or by
# the end), among characters of every length, at any offset from a long run of ASCII, in
# a line that is JSON but for them.
_utf8_pieces = st.one_of(
    st.text(st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters='"\\'), min_size=1, max_size=3).map(
        lambda t: t.encode()
    ),
    st.sampled_from(
        [
            b"\x80",
            b"\xbf",
            b"\xc0\x80",
            b"\xc1\xbf",
            b"\xe0\x80\x80",
            b"\xed\xa0\x80",
            b"\xed\xbf\xbf",
            b"\xf0\x80\x80\x80",
            b"\xf4\x90\x80\x80",
            b"\xf5\x80\x80\x80",
            b"\xff",
            b"\xc3",
            b"\xe2\x86",
            b"\xf0\x9f\x98",
            b"\xe2(\x92",
            b"\xe2\x86\x92",
            b"\xf4\x8f\xbf\xbf",
        ]
    ),
    st.lists(st.integers(0x80, 0xFF), min_size=1, max_size=4).map(bytes),
)


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 70), st.lists(_utf8_pieces, max_size=6), st.integers(0, 40))
def test_a_line_is_an_error_exactly_when_it_is_not_utf8(pad: int, pieces: list[bytes], tail: int) -> None:
    """The check before any adapter (a scan in the compiled build, a decode in the pure one)
    refuses what Python's decoder refuses, and says where, in the decoder's words."""
    line = b'{"text": "' + b"a" * pad + b"".join(pieces) + b"z" * tail + b'"}'
    out = session().feed(line)
    errors = [e.body.message for e in evs(out) if isinstance(e.body, normalize.Error)]
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        refused: UnicodeDecodeError | None = exc
    else:
        refused = None
    if refused is not None:
        assert errors == [f"not UTF-8: {refused.reason} at byte {refused.start}"]
        (ev,) = evs(out)
        assert ev.native.payload == line.decode("utf-8", errors="replace")  # kept as text
    else:
        assert errors == []  # the adapter saw it: kept untranslated, unchanged
        assert [bytes(e.update.payload) for e in out if isinstance(e, normalize.SessionUpdate)] == [line]


def _datetime_text(seconds: float) -> str:
    dt = datetime.fromtimestamp(seconds, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


@given(st.floats(min_value=-1e9, max_value=4e9, allow_nan=False) | st.sampled_from([0.0, 0.9999995, 1.0004995, -0.5]))
def test_a_clock_time_is_written_as_datetime_writes_it(seconds: float) -> None:
    assert format_ts(seconds) == _datetime_text(seconds)


@given(
    st.floats(min_value=0, max_value=4e9, allow_nan=False),
    st.lists(
        st.floats(min_value=-2e-3, max_value=2e-3, allow_nan=False) | st.sampled_from([0.5e-6, -0.5e-6, 1e-3]),
        max_size=20,
    ),
)
def test_times_close_together_are_written_as_datetime_writes_each(start: float, steps: list[float]) -> None:
    """Times a few microseconds apart, as a fast conversion's clock gives them, across and
    next to the edges of a millisecond: each as if formatted alone (the last millisecond's
    text is kept)."""
    seconds = start
    for step in [0.0, *steps]:
        seconds = max(0.0, seconds + step)
        assert format_ts(seconds) == _datetime_text(seconds)


@given(st.integers(min_value=-(10**12), max_value=253402300799999))
def test_an_epoch_number_is_written_as_datetime_writes_it(ms: int) -> None:
    assert ms_time(ms) == _datetime_text(ms // 1000)[:-4] + f"{ms % 1000:03d}Z"


@given(
    st.integers(min_value=-(10**12), max_value=253402300799999 - 10**6),
    st.lists(st.integers(min_value=-2500, max_value=2500), max_size=20),
)
def test_epoch_numbers_close_together_are_each_written_as_datetime_writes_it(start: int, steps: list[int]) -> None:
    """Consecutive messages' times, most in the same second as the one before, some across
    its edge or back in time: each as if written alone (the last second's text is kept)."""
    ms = start
    for step in [0, *steps]:
        ms += step
        assert ms_time(ms) == _datetime_text(ms // 1000)[:-4] + f"{ms % 1000:03d}Z"
    assert ms_time(99999999999999999) is None  # and the second kept is not one without a date
    assert ms_time(ms) == _datetime_text(ms // 1000)[:-4] + f"{ms % 1000:03d}Z"


def test_an_epoch_number_no_calendar_holds_is_no_time() -> None:
    assert ms_time(99999999999999999) is None and s_time(10**12) is None
    assert s_time(0) == "1970-01-01T00:00:00.000Z"

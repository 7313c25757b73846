"""Every adapter, any input: never raises in default mode, only normalize's errors in strict
mode, seq and turn rules hold, and every native message is accounted for.

Inputs are drawn from the adapter's own captures: real messages, then mutated (bytes
flipped, cut short, types renamed, fields added), reordered and duplicated.
"""

from __future__ import annotations

import contextlib
import json
import re
from functools import cache
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import normalize
from helpers import capture_files, native_payloads, protocol_of, records_of
from normalize import Message, NormalizeError, Session, SessionEvent, UsageError
from normalize._model import _Core

# failing examples are whole native lines; their size is expected
pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")

PROTOCOLS = sorted({protocol_of(c) for c in capture_files()})


@cache
def pool(protocol: str) -> list[tuple[bytes, str]]:
    """The native messages of every capture of a protocol, with their direction."""
    out: list[tuple[bytes, str]] = []
    for cap in capture_files():
        if protocol_of(cap) == protocol:
            out += [(r.data, r.from_) for r in records_of([cap]) if isinstance(r, Message)]
    return out


def _mutate(data: bytes, how: int, pos: int, junk: bytes) -> bytes:
    if how == 0 or not data:
        return data
    pos %= len(data)
    if how == 1:  # cut short
        return data[:pos]
    if how == 2:  # flip bytes
        return data[:pos] + junk + data[pos + len(junk) :]
    if how == 3:  # an unknown field
        return b'{"zz_unknown_field":[1,{"x":null}],' + data[1:] if data.startswith(b"{") else data
    if how == 4:  # an unknown type / method
        return data.replace(b'"type":"', b'"type":"zz_', 1).replace(b'"method":"', b'"method":"zz/', 1)
    if how == 5:  # a time (or any long number) no calendar holds
        return _LONG_NUMBER.sub(b"99999999999999999", data, count=1)
    if how == 6:  # a value of another kind somewhere, a JSON text held in a string included
        return _retyped(data, pos)
    return data  # pragma: no cover


#: what a value is replaced with (``how == 6``): each kind JSON has
_OTHER_KINDS: list[object] = [0, -1, 1.5, 10**30, None, True, "", "x", [], [1, None], {}, {"a": None}, '{"a":1}']


def _places(value: object, path: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Every place in a JSON value (a string that holds a JSON object or array is one more
    level, marked ``...``: a model's tool arguments are such a string)."""
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _places(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _places(v, (*path, i))
    elif isinstance(value, str) and value[:1] in ("{", "["):
        with contextlib.suppress(msgspec.DecodeError):
            out += _places(msgspec.json.decode(value), (*path, ...))
    return out


def _put(value: Any, path: tuple[object, ...], new: object) -> Any:
    if not path:
        return new
    step, rest = path[0], path[1:]
    if step is ...:
        return msgspec.json.encode(_put(msgspec.json.decode(value), rest, new)).decode()
    value = value.copy()
    value[step] = _put(value[step], rest, new)
    return value


def _retyped(data: bytes, pos: int) -> bytes:
    try:
        value = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return data
    places = _places(value)
    new = _OTHER_KINDS[pos % len(_OTHER_KINDS)]
    return msgspec.json.encode(_put(value, places[pos // len(_OTHER_KINDS) % len(places)], new))


_LONG_NUMBER = re.compile(rb"(?<![\d.\w])\d{10,}(?![\d.])")


@st.composite
def inputs(draw: st.DrawFn, protocol: str) -> list[tuple[bytes, str]]:
    messages = pool(protocol)
    n = draw(st.integers(1, 40))
    start = draw(st.integers(0, max(0, len(messages) - 1)))
    picked = [messages[(start + i) % len(messages)] for i in range(n)]  # a real run of lines ...
    if draw(st.booleans()):
        picked = draw(st.permutations(picked))  # ... reordered
    out = []
    for data, from_ in picked:
        how = draw(st.sampled_from([0, 0, 0, 1, 2, 3, 4, 5, 6, 6]))
        data = _mutate(data, how, draw(st.integers(0, 10**6)), draw(st.binary(min_size=1, max_size=4)))
        out.append((data, from_))
        if draw(st.integers(0, 9)) == 0:
            out.append((data, from_))  # duplicated
    return out


def run(protocol: str, messages: list[tuple[bytes, str]], strict: bool) -> list[_Core]:
    session = Session(normalize.adapter_class(protocol)(), clock=lambda: 0.0, strict=strict)
    out: list[_Core] = []
    for data, from_ in messages:
        out += session.feed(data, from_)  # type: ignore[arg-type]
    out += session.close()
    check_no_loss([m for m, _ in messages], out)
    return out


def _dedupe(items: list[bytes]) -> list[bytes]:
    return [x for i, x in enumerate(items) if i == 0 or x != items[i - 1]]


def check_no_loss(messages: list[bytes], out: list[_Core]) -> None:
    """The native payloads, deduplicated in order, give back the input messages (DESIGN.md)."""
    got, want = _dedupe(native_payloads(out)), _dedupe(messages)
    assert len(got) == len(want), f"{len(want)} messages in, {len(got)} accounted for"
    for p, m in zip(got, want, strict=True):  # a message that was not JSON is kept whole, as text
        assert p in (m, m.decode("utf-8", "replace").encode()), (p[:100], m[:100])


def check_envelopes(out: list[_Core]) -> None:
    every = [e.event for e in out if isinstance(e, SessionEvent)]
    for sid in {e.session_id for e in every}:  # each session of the input (a fork is one) on its own
        envs = [e for e in every if e.session_id == sid]
        assert [e.seq for e in envs] == list(range(1, len(envs) + 1))
        open_turn: str | None = None
        turns = 0
        for e in envs:
            if e.kind == "turn-start":
                turns += 1
                open_turn = f"turn:{turns}"
            assert e.turn_id == open_turn, (e.seq, e.kind)
            if e.kind == "turn-complete":
                open_turn = None
        assert open_turn is None
    for core in out:  # every event encodes to JSON that decodes back to the same JSON
        line = normalize.encode(core)
        again = normalize.encode(normalize.decode(line))
        # compared by the standard library's reader: msgspec refuses numbers beyond a float's
        # range (1e400), which JSON allows and a native message may hold
        assert json.loads(again) == json.loads(line), (line[:2000], again[:2000])


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_default_mode_never_raises_and_keeps_every_message(protocol: str) -> None:
    @SETTINGS
    @given(inputs(protocol))
    def check(messages: list[tuple[bytes, str]]) -> None:
        check_envelopes(run(protocol, messages, strict=False))

    check()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_strict_mode_raises_only_normalize_errors(protocol: str) -> None:
    @SETTINGS
    @given(inputs(protocol))
    def check(messages: list[tuple[bytes, str]]) -> None:
        # the library's own errors are the only ones allowed out
        with contextlib.suppress(NormalizeError):
            check_envelopes(run(protocol, messages, strict=True))

    check()


@pytest.mark.parametrize("protocol", PROTOCOLS)
@given(junk=st.binary(max_size=200))
@settings(max_examples=100, deadline=None)
def test_random_bytes_never_raise_in_default_mode(protocol: str, junk: bytes) -> None:
    check_envelopes(run(protocol, [(junk, "agent"), (junk, "client")], strict=False))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_adapter_fed_after_close_raises_usage_error(protocol: str) -> None:
    """Feeding a closed adapter is a caller's mistake: ``UsageError``, not a translation."""
    adapter = normalize.adapter_class(protocol)()
    adapter.close()
    with pytest.raises(UsageError, match=r"\.feed\(\) after close\(\)"):
        adapter.feed(pool(protocol)[0][0])


_RAW = msgspec.json.Decoder(msgspec.Raw)


@pytest.mark.parametrize("protocol", [p for p in PROTOCOLS if normalize.adapter_class(p).decodes_whole])
def test_an_adapter_that_decodes_whole_returns_only_for_json(protocol: str) -> None:
    """``decodes_whole``: the Session keeps such an adapter's untranslated messages without
    checking they are JSON, so every message its feed returns for must be."""

    @SETTINGS
    @given(inputs(protocol))
    def check(messages: list[tuple[bytes, str]]) -> None:
        adapter = normalize.adapter_class(protocol)()
        for data, from_ in messages:
            try:
                data.decode()
            except UnicodeDecodeError:
                continue  # the Session reports it: adapters only ever see UTF-8
            try:
                adapter.feed(data, from_)  # type: ignore[arg-type]
            except (NormalizeError, RecursionError):
                continue  # reported by the Session
            _RAW.decode(data)  # raises if it was not JSON

    check()

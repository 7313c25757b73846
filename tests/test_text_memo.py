"""A long text that recurs whole across sessions (a release's system prompt) is read as
one ``str``: reused, it is neither decoded nor encoded again (adapters/_base.TextMemo)."""

from __future__ import annotations

import msgspec
import pytest
from msgspec import Raw

from normalize import ContextUpdated, ErrorBody, Session, SessionEvent
from normalize.adapters._base import TextMemo
from normalize.adapters.codex_rollout import CodexRolloutAdapter


def _raw(text: str | None) -> Raw:
    # a fresh Raw over a fresh buffer each time, as decoding a new line gives
    return Raw(bytearray(msgspec.json.encode(text)).decode().encode())


def test_the_same_text_again_is_the_same_str() -> None:
    memo = TextMemo()
    first = memo.text(_raw("régime " * 100))
    again = memo.text(_raw("régime " * 100))
    assert first == "régime " * 100
    assert again is first


def test_a_different_text_of_the_same_length_is_read_for_itself() -> None:
    memo = TextMemo()
    assert memo.text(_raw("abcd")) == "abcd"
    assert memo.text(_raw("wxyz")) == "wxyz"
    assert memo.text(_raw("abcd")) == "abcd"


def test_null_is_none_and_anything_else_is_a_decode_error() -> None:
    memo = TextMemo()
    assert memo.text(_raw(None)) is None
    with pytest.raises(msgspec.DecodeError):
        memo.text(Raw(b"12345"))
    with pytest.raises(msgspec.DecodeError):
        memo.text(Raw(b'{"text": "x"}'))


def test_past_its_size_the_oldest_text_is_forgotten() -> None:
    memo = TextMemo(size=2)
    a = memo.text(_raw("a"))
    memo.text(_raw("bb"))
    memo.text(_raw("ccc"))  # a is forgotten
    assert memo.text(_raw("bb")) == "bb"
    again = memo.text(_raw("a"))
    assert again == "a"
    assert again is not a or len(a) == 1  # a one-character str may be interned by Python itself


def test_it_keeps_a_copy_not_the_line_it_was_read_from() -> None:
    memo = TextMemo()
    line = bytearray(b'{"text": "kept"}')
    memo.text(Raw(memoryview(line)[9:15]))
    line[10:14] = b"gone"  # the line's buffer is reused for the next line
    assert memo.text(_raw("kept")) == "kept"
    assert memo.text(_raw("gone")) == "gone"


_META = (
    '{"timestamp":"2025-01-01T00:00:00Z","type":"session_meta","payload":{"id":"%s",'
    '"timestamp":"2025-01-01T00:00:00Z","cwd":"/w","cli_version":"0.66.0","base_instructions":%s}}'
)


def _details(native_id: str, instructions: str) -> list[str | None]:
    s = Session(CodexRolloutAdapter())
    events = s.feed((_META % (native_id, instructions)).encode()) + s.close()
    return [a.detail for ev in events if isinstance(ev, ContextUpdated) for a in ev.applied]  # type: ignore[union-attr]


def test_sessions_sharing_instructions_each_say_them_in_full() -> None:
    text = "Tu es Codex — un agent de code. " * 50
    body = msgspec.json.encode({"text": text}).decode()
    assert _details("a", body) == [text]
    assert _details("b", body) == [text]
    other = msgspec.json.encode({"text": text.upper()}).decode()  # as long, not the same
    assert _details("c", other) == [text.upper()]


def test_instructions_that_are_not_text_are_an_error_and_the_session_goes_on() -> None:
    s = Session(CodexRolloutAdapter())
    events = s.feed((_META % ("a", '{"text": 42}')).encode())
    events += s.feed((_META % ("a", '{"text": "fine"}')).encode())
    events += s.close()
    bodies = [ev.event.body for ev in events if isinstance(ev, SessionEvent)]
    assert [type(b) for b in bodies] == [ErrorBody]
    assert isinstance(bodies[0], ErrorBody)
    assert bodies[0].message == (
        "not a codex rollout line: Expected `str | null`, got `int` - at `$.base_instructions.text`"
    )
    assert [a.detail for ev in events if isinstance(ev, ContextUpdated) for a in ev.applied] == ["fine"]  # type: ignore[union-attr]

"""Reading captures: each oddity of real files has one defined result, whatever the chunking."""

from __future__ import annotations

import errno
import gc
import io
import itertools
from pathlib import Path
from typing import cast

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import normalize
from normalize import CaptureParser, LineProblem, LineSplitter, LineTooLong, Message, TruncatedLine
from scripted import ScriptedAdapter, msg


def parse(data: bytes, max_line: int = 1 << 20, cuts: list[int] | None = None) -> list[normalize.Record]:
    p = CaptureParser(max_line)
    out: list[normalize.Record] = []
    prev = 0
    for c in sorted(set(cuts or [])):
        out += p.feed(data[prev:c])
        prev = c
    out += p.feed(data[prev:])
    return out + p.close()


def norm(records: list[normalize.Record]) -> list[tuple[object, ...]]:
    return [
        (r.data, r.from_, r.t, r.line) if isinstance(r, Message)
        else (type(r.error).__name__, r.error.message, r.error.kept, r.line)
        for r in records
    ]  # fmt: skip


def datas(records: list[normalize.Record]) -> list[bytes]:
    return [r.data for r in records if isinstance(r, Message)]


def test_crlf_bom_and_blank_lines() -> None:
    data = b'\xef\xbb\xbf{"a":1}\r\n\r\n   \n{"b":2}\n\n'
    assert datas(parse(data)) == [b'{"a":1}', b'{"b":2}']
    assert [r.line for r in parse(data)] == [1, 4]


def test_a_complete_last_line_without_newline_is_a_message_and_a_cut_one_is_truncated() -> None:
    assert datas(parse(b'{"a":1}\n{"b":2}')) == [b'{"a":1}', b'{"b":2}']
    got = parse(b'{"a":1}\n{"b":')
    assert datas(got) == [b'{"a":1}']
    assert isinstance(got[-1], LineProblem) and isinstance(got[-1].error, TruncatedLine)
    assert got[-1].error.kept == '{"b":' and got[-1].line == 2


def test_invalid_utf8_is_reported_by_the_adapter_and_the_stream_goes_on() -> None:
    s = normalize.Session(ScriptedAdapter(), clock=lambda: 0.0)
    out = []
    for rec in parse(b'{"do":[],"method":"\xff\xfe"}\n' + msg(normalize.TurnStart()) + b"\n"):
        assert isinstance(rec, Message)
        out += s.feed(rec.data)
    kinds = [e.event.kind for e in out if isinstance(e, normalize.SessionEvent)]
    assert kinds == ["error", "turn-start"]
    err = next(e.event.body for e in out if isinstance(e, normalize.SessionEvent))
    assert isinstance(err, normalize.Error) and err.error_type == "malformed"


@pytest.mark.parametrize("chunk", [1, 7, 100, 10_000])
def test_a_line_over_the_bound_is_reported_with_its_head_and_skipped(chunk: int) -> None:
    long = b'{"x":"' + b"y" * 5000 + b'"}'
    data = b'{"a":1}\n' + long + b'\n{"b":2}\n'
    got = parse(data, max_line=1000, cuts=list(range(chunk, len(data), chunk)))
    assert datas(got) == [b'{"a":1}', b'{"b":2}']
    (problem,) = [r for r in got if isinstance(r, LineProblem)]
    assert isinstance(problem.error, LineTooLong)
    assert problem.line == 2
    assert problem.error.kept is not None and problem.error.kept.startswith('{"x":"yyy')
    assert [r.line for r in got] == [1, 2, 3]


def test_memory_is_bounded_by_the_line_limit() -> None:
    sp = LineSplitter(max_line=1000)
    for _ in range(1000):
        sp.feed(b"z" * 999)  # one endless line, 1 MB in all
        assert len(sp._buf) <= 1000 + 999
    assert sp.feed(b"\n{}\n") == [(2, b"{}")]


def test_tap_files_give_direction_and_receive_time_and_keep_the_wire_bytes() -> None:
    data = (
        b'{"t":"2026-11-29T19:05:39.123Z","from":"client","msg":{"id": 1}}\n'
        b'{"t":"2026-11-29T19:05:39.124Z","from":"agent","msg":{"id":1,"result":{}}}\n'
        b'{"t":"2026-11-29T19:05:39.125Z","from":"nobody","msg":{}}\n'
    )
    got = parse(data)
    assert got[:2] == [
        Message(b'{"id": 1}', "client", "2026-11-29T19:05:39.123Z", 1),
        Message(b'{"id":1,"result":{}}', "agent", "2026-11-29T19:05:39.124Z", 2),
    ]
    assert isinstance(got[2], LineProblem) and got[2].line == 3


_taps = st.lists(
    st.one_of(
        st.tuples(
            st.sampled_from(["agent", "client"]),
            st.dictionaries(st.text(max_size=5), st.integers(), max_size=3).map(msgspec.json.encode),
        ),
        st.sampled_from([b'{"t":"x","from":"nobody","msg":{}}', b'{"t":"x","from":"agent"}', b"not json", b"{"]),
    ),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(_taps, st.lists(st.integers(0, 3000), max_size=20))
def test_a_tap_file_gives_each_record_s_message_or_its_problem_at_its_line_whatever_the_chunking(
    taps: list[tuple[str, bytes] | bytes], cuts: list[int]
) -> None:
    first = b'{"t":"2026-11-29T19:05:39.000Z","from":"client","msg":{"id":0}}'  # the format is a tap's
    made = [
        t
        if isinstance(t, bytes)
        else b'{"t":"2026-11-29T19:05:40.%03dZ","from":"%s","msg":%s}' % (i, t[0].encode(), t[1])
        for i, t in enumerate(taps)
    ]
    data = b"\n".join([first, *made]) + b"\n"
    got = parse(data, cuts=[c % (len(data) + 1) for c in cuts])
    assert got[0] == Message(b'{"id":0}', "client", "2026-11-29T19:05:39.000Z", 1)
    assert len(got) == len(taps) + 1
    for i, (t, rec) in enumerate(zip(taps, got[1:], strict=True)):
        if isinstance(t, bytes):
            assert isinstance(rec, LineProblem) and rec.line == i + 2
        else:
            assert rec == Message(t[1], t[0], f"2026-11-29T19:05:40.{i:03d}Z", i + 2)  # type: ignore[arg-type]


lines = st.lists(
    st.one_of(
        st.dictionaries(st.text(max_size=5), st.integers(), max_size=3).map(msgspec.json.encode),
        st.just(b""),
        st.just(b"   "),
        st.binary(max_size=30).filter(lambda b: b"\n" not in b),
    ),
    max_size=20,
)


@settings(max_examples=300, deadline=None)
@given(lines, st.lists(st.integers(0, 2000), max_size=30), st.booleans(), st.booleans())
def test_any_chunking_gives_the_same_records(ls: list[bytes], cuts: list[int], crlf: bool, tail: bool) -> None:
    eol = b"\r\n" if crlf else b"\n"
    data = eol.join(ls) + (eol if tail else b"")
    whole = norm(parse(data, max_line=64))
    assert norm(parse(data, max_line=64, cuts=[c % (len(data) + 1) for c in cuts])) == whole
    assert norm(parse(data, max_line=64, cuts=list(range(len(data))))) == whole


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=6).filter(lambda b: b"\n" not in b and b"\r" not in b), min_size=1, max_size=20))
def test_a_line_is_skipped_exactly_when_it_is_blank(ls: list[bytes]) -> None:
    """Blank means what ``bytes.strip`` strips (ASCII whitespace only), wherever a line
    begins; every line keeps its number, skipped ones counted."""
    sp = LineSplitter()
    assert sp.feed(b"{}\n") == [(1, b"{}")]  # (past the first line: the rest are numbered in one pass)
    got = sp.feed(b"\n".join(ls) + b"\n")
    assert got == [(n, line) for n, line in enumerate(ls, 2) if line.strip()]


def test_a_cut_last_line_is_kept_whole() -> None:
    cut = b'{"type":"result","text":"' + b"z" * 5000
    (rec,) = parse(cut)
    assert isinstance(rec, LineProblem) and isinstance(rec.error, TruncatedLine)
    assert rec.error.kept == cut.decode()


long_lines = st.lists(
    st.one_of(
        st.integers(0, 3000).map(lambda n: b'{"x":"' + b"y" * n + b'"}'),
        st.just(b""),
        st.just(b"   "),
    ),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(long_lines, st.integers(1, 9000), st.booleans(), st.booleans())
def test_long_lines_in_chunks_of_any_size_give_the_same_records(
    ls: list[bytes], size: int, crlf: bool, tail: bool
) -> None:
    """Chunks of long lines are split another way than chunks of short ones (memchr): the
    records are the same either way, a line over the bound included."""
    eol = b"\r\n" if crlf else b"\n"
    data = eol.join(ls) + (eol if tail else b"")
    cuts = list(range(size, len(data), size))
    for max_line in (1 << 20, 2000):
        assert norm(parse(data, max_line=max_line, cuts=cuts)) == norm(parse(data, max_line=max_line))


def test_a_chunk_after_one_of_long_lines_is_split_the_same() -> None:
    sp = LineSplitter()
    long = b'{"x":"' + b"y" * 1000 + b'"}'
    assert sp.feed(long + b"\n" + long + b"\n{") == [(1, long), (2, long)]
    assert sp._long  # the next chunk goes the memchr way
    assert sp.feed(b'"a":1}\r\n\n' + long + b"\r\n" + long[:10]) == [(3, b'{"a":1}'), (5, long)]
    assert sp.feed(long[10:] + b"\n") == [(6, long)]
    assert sp.close() == []


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
).map(msgspec.json.encode)
_times = st.one_of(
    st.just("2026-11-29T19:05:39.123Z"),
    st.text(max_size=12),  # escapes, control and non-ASCII characters, quotes
)


@settings(max_examples=400, deadline=None)
@given(_times, st.sampled_from(["agent", "client"]), _json_values, st.sampled_from(["exact", "spaced", "reordered"]))
def test_a_tap_record_gives_the_message_its_decoded_members_give_however_it_is_written(
    t: str, from_: str, msg: bytes, form: str
) -> None:
    """A tap record written exactly as normalize writes it is cut apart where its members
    begin and end, any other read by decoding it: both give what decoding gives."""
    head = b'"t":%s,"from":"%s"' % (msgspec.json.encode(t), from_.encode())
    line = {
        "exact": b'{%s,"msg":%s}' % (head, msg),
        "spaced": b'{ %s, "msg": %s }' % (head, msg),
        "reordered": b'{"msg":%s,%s}' % (msg, head),
    }[form]
    first = b'{"t":"2026-11-29T19:05:39.000Z","from":"client","msg":{"id":0}}\n'  # the format is a tap's
    # read to detect the format (the first line: a tap's begins as normalize writes one), or after
    for data in (line + b"\n", first + line + b"\n") if form == "exact" else (first + line + b"\n",):
        got = parse(data)[-1]
        assert got == Message(msg, from_, t, data.count(b"\n"))  # type: ignore[arg-type]


def test_a_tap_record_whose_message_is_not_json_is_reported_by_the_session_and_the_stream_goes_on() -> None:
    """The message of a record written as normalize writes one is the rest of its line,
    decoded by the adapter: a message that is not JSON is an error event (with the line's
    message as written), and the next record is read."""
    good = b'{"t":"2026-11-29T19:05:39.000Z","from":"agent","msg":%s}\n'
    said = [msg(normalize.AssistantMessage(message_id=f"m{n}", text=t)) for n, t in enumerate(("before", "after"))]
    data = good % said[0] + good % b"{not json" + good % said[1]
    records = parse(data)
    assert [r.data for r in records if isinstance(r, Message)][1] == b"{not json"
    session = normalize.Session(ScriptedAdapter(), clock=lambda: 0.0)
    events = [e for r in records if isinstance(r, Message) for e in session.feed(r.data, r.from_, t=r.t)]
    events += session.close()
    bodies = [e.event.body for e in events if isinstance(e, normalize.SessionEvent)]
    errors = [b for b in bodies if isinstance(b, normalize.Error)]
    assert len(errors) == 1 and errors[0].error_type == "malformed"
    assert [b.text for b in bodies if isinstance(b, normalize.AssistantMessage)] == ["before", "after"]


def test_several_files_are_read_one_after_the_other_each_opened_when_reached(tmp_path: Path) -> None:
    first, missing = tmp_path / "a.jsonl", tmp_path / "gone.jsonl"
    first.write_bytes(b'{"a":1}\n{"a":2}\n')
    records = normalize.read_records([first, missing])  # nothing opened yet: no error here
    assert [r.data for r in itertools.islice(records, 2) if isinstance(r, Message)] == [b'{"a":1}', b'{"a":2}']
    with pytest.raises(FileNotFoundError) as caught:
        next(records)
    assert caught.value.filename == str(missing)


class _FailingDisk:
    """A file whose second read fails as a device does: an ``OSError`` that names no file."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return self.name

    def open(self, mode: str) -> io.BytesIO:
        stream = io.BytesIO(b'{"a":1}\n{"a":2}\n')
        reads = iter([stream.read(8)])

        def read(size: int = -1) -> bytes:
            try:
                return next(reads)
            except StopIteration:
                raise OSError(errno.EIO, "Input/output error") from None

        stream.read = read  # type: ignore[method-assign,assignment]
        return stream


def test_an_error_while_reading_a_file_names_the_file(tmp_path: Path) -> None:
    disk = str(tmp_path / "disk.jsonl")
    records = normalize.read_records([cast(Path, _FailingDisk(disk))])
    first = next(records)
    assert isinstance(first, Message) and first.data == b'{"a":1}'
    with pytest.raises(OSError, match="Input/output error") as caught:
        next(records)
    assert caught.value.filename == disk


def test_a_file_whose_records_are_dropped_before_the_end_is_closed(tmp_path: Path) -> None:
    # (detection reads a file's first records only): left open, the file would be reported
    # as a ResourceWarning when collected, which this suite's settings make an error
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"a":1}\n' * 10)
    records = normalize.read_records([path])
    assert isinstance(next(records), Message)
    del records
    gc.collect()

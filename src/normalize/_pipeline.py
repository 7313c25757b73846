"""The loops that run once per native line or per event of a conversion: records into
a session a batch at a time, and events into JSON lines.

Their own module so that the compiled build compiles them (docs/performance.md, "The
compiled build"): interpreted, a loop's bytecode costs a few hundred instructions a line
around the translation it drives.  No msgspec Struct is defined here (the wire structs
are :mod:`normalize._codec`'s, the records :mod:`normalize._lines`').
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

from msgspec.structs import astuple

from ._codec import _EVENT_HEAD, _encoder, _EnvelopeOut
from ._model import SessionEvent, _Core

__all__ = [
    "batches",
    "encode_lines",
    "plain_messages",
    "records_of",
    "tap_cut",
    "tap_messages",
    "tap_record",
]


def encode_lines(events: Iterable[_Core], buf: bytearray | None = None) -> bytearray:
    """Events as JSON lines, each ending in a newline: :func:`~normalize.encode` of each,
    written into one buffer.

    The same bytes as ``b"".join(encode(e) + b"\\n" for e in events)``, without a
    bytes object per line (msgspec writes each part in place); appended to ``buf``
    when one is given (and returned), else to a new buffer.
    """
    if buf is None:
        buf = bytearray()
    into = _encoder.encode_into
    # (the names read per event bound here: compiled, a module's global, and any name it
    # imports, is a dictionary lookup at each use)
    event_type: Any = SessionEvent
    out_type: Any = _EnvelopeOut
    fields = astuple
    # the line's head up to its event, the same for every event of a session: encoded
    # once per run of events of one session; a session event's line is ended ("}\n") with
    # what follows it, in one append: the next one's head (``joint``), else below
    sid: str | None = None
    head = joint = b""
    ended = True
    for ev in events:
        if type(ev) is event_type:
            event: Any = ev
            env = event.event
            if event.session_id is not sid:
                sid = event.session_id
                head = _EVENT_HEAD + _encoder.encode(sid) + b',"event":'
                joint = b"}\n" + head
            buf += head if ended else joint
            ended = False
            # the envelope's fields in one call (astuple: the struct's field order, below),
            # the wire's made from them by position
            f: tuple[Any, ...] = fields(env)
            wire = out_type(f[0], f[1], f[2], f[3], f[7], f[4], f[5], f[8])
            into(wire, buf, -1)  # (-1: at the end, without an int object for the offset)
            end = len(buf) - 1  # the envelope's closing brace: the body's fields follow it
            into(f[6], buf, end)
            buf[end] = 44  # "," in place of the body's opening brace
        else:
            if not ended:
                buf += b"}\n"
                ended = True
            into(ev, buf, -1)
            buf += b"\n"
    if not ended:
        buf += b"}\n"
    return buf


def records_of(stream: Any, parser: Any, size: int) -> Iterator[Any]:
    """The records ``parser`` (a :class:`~normalize._lines.CaptureParser`) makes of
    ``stream``, read ``size`` bytes at a time.

    Compiled, a record is handed on for less than through a Python generator's ``yield
    from``, which it cost once per level (a file of a session went through three).
    """
    read = stream.read
    feed = parser.feed
    records: list[Any]
    while chunk := read(size):
        records = feed(chunk)
        for rec in records:  # (not ``yield from``: compiled, a loop over a list costs less)
            yield rec
    records = parser.close()
    for rec in records:
        yield rec


def batches(
    session: Any, records: Iterator[Any], message_type: type, batch: int, batch_bytes: int
) -> Iterator[list[_Core]]:
    """The events of ``batch`` records at a time (or of ``batch_bytes`` of input), the
    close's events with the last.  ``session`` is a Session or a Connection, ``records``
    :class:`~normalize._lines.Message` (``message_type``) and LineProblem records."""
    feed = session.feed
    out: list[_Core] = []
    n = size = 0
    rec: Any
    for rec in records:
        kind: object = type(rec)  # (compared as an object: the test does not narrow ``rec``)
        if kind is message_type:
            data = rec.data
            out += feed(data, rec.from_, t=rec.t)
            size += len(data)
        else:
            out += session.feed_problem(rec.error, t=rec.t)
        n += 1
        if n == batch or size >= batch_bytes:
            yield out
            out = []
            n = size = 0
    out += session.close()
    yield out


def numbered(lines: list[bytes], first: int) -> list[tuple[int, bytes]]:
    """The lines that are not blank (``bytes.strip``), each with its number, ``first`` the
    first line's."""
    out: list[tuple[int, bytes]] = []
    n = first
    for line in lines:
        # (a line whose first byte is above a space is not blank: whitespace is at most 32,
        # and most lines are told apart by that byte, not by a call of strip)
        if line and (line[0] > 32 or line.strip()):
            out.append((n, line))
        n += 1
    return out


def plain_messages(lines: list[Any], message_type: Any) -> list[Any]:
    """A plain capture's numbered lines (``(lineno, line)``; a LineProblem as it is) as
    messages from the agent."""
    # (a type test: an isinstance that fails costs ten times more, once per line)
    return [message_type(i[1], "agent", None, i[0]) if type(i) is tuple else i for i in lines]


def _tap_scan() -> Callable[[bytes], tuple[str, str, bytes] | None] | None:
    """The compiled build's cut of a tap record (src/normalize/_scan.c): what
    :func:`tap_record` gives of a line whose time is printable ASCII, in one call; None in
    the pure-Python build."""
    try:
        from ._scan import tap_split
    except ImportError:
        return None
    return tap_split


_TAP_SPLIT: Final = _tap_scan()

#: the head of a tap record as normalize writes it (docs/live.md, "The recording"), up to
#: its time; the rest up to ``msg``'s value, by direction
_TAP_HEAD: Final = b'{"t":"'
_TAP_AGENT: Final = b'","from":"agent","msg":'
_TAP_CLIENT: Final = b'","from":"client","msg":'


def tap_messages(lines: list[Any], message_type: Any, decode: Any) -> list[Any]:
    """A tap capture's numbered lines as messages (:func:`tap_record`, else each decoded by
    ``decode``, the tap record's view); ``msgspec.DecodeError`` (or ``RecursionError``)
    for a line that is not a tap record."""
    out: list[Any] = []
    for i in lines:
        if type(i) is not tuple:
            out.append(i)
            continue
        made = tap_record(i[1], i[0], message_type)
        if made is None:
            tap = decode(i[1])
            made = message_type(bytes(tap.msg), tap.from_, tap.t, i[0])
        out.append(made)
    return out


def tap_record(line: bytes, lineno: int, message_type: Any) -> Any | None:
    """The message of a tap record written exactly as normalize writes one, or None.

    ``{"t":"<time>","from":"agent"|"client","msg":<line>}`` (no space, ``msg`` last, a
    time without escapes) is cut apart where its parts begin and end: ``msg`` is the rest
    of the line but its closing brace, left to the adapter to decode (every built-in
    adapter decodes each message whole, and reports one that is not JSON).  Any other
    line (members in another order, spaced, escaped) is for the caller to decode."""
    split = _TAP_SPLIT
    if split is not None:
        cut = split(line)
        if cut is not None:
            return message_type(cut[2], cut[1], cut[0], lineno)
        # else not such a record, or one whose time is not printable ASCII: read below
    return tap_cut(line, lineno, message_type)


def tap_cut(line: bytes, lineno: int, message_type: Any) -> Any | None:
    """:func:`tap_record` in Python (the pure-Python build's, and the compiled build's for
    a line its C cut does not take)."""
    n = len(line)
    if n < 31 or line[n - 1] != 125 or line[:6] != _TAP_HEAD:  # 125: "}"
        return None
    # (slices and comparisons, not bytes methods: compiled, those are calls by name)
    end = 30 if line[30] == 34 else line.find(b'"', 6)  # 34: '"' after a time of 24 characters
    if end <= 6:
        return None
    if line[end : end + len(_TAP_AGENT)] == _TAP_AGENT:
        start, from_ = end + len(_TAP_AGENT), "agent"
    elif line[end : end + len(_TAP_CLIENT)] == _TAP_CLIENT:
        start, from_ = end + len(_TAP_CLIENT), "client"
    else:
        return None
    if start >= n - 1:
        return None
    try:
        text = line[6:end].decode()
    except UnicodeDecodeError:
        return None
    # the time's string ends at its first quote and holds no escape nor control character
    if '"' in text or "\\" in text or not text.isprintable():
        return None
    return message_type(line[start : n - 1], from_, text, lineno)

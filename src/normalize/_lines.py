"""Reading captures: bytes in, native messages (or problems) out.  No I/O here.

Three capture formats:

* plain native JSONL: one message per line, all written by the agent;
* tap files: ``{"t": <RFC 3339>, "from": "agent"|"client", "msg": <the wire line>}``
  per line;
* a JSON document: one object written over several lines (its first non-blank line is a
  lone ``{``, which no JSONL line is), as Gemini CLI before 0.39 stores a chat.  It is
  read whole at the end (bounded by ``max_line``, like one line) and gives one record
  per message: its fields but ``messages`` (in their order), then each element of its
  ``messages`` array, each compacted to one line; a document without a ``messages``
  array is one record.  Records are numbered in that order.

The format is decided once, from the first non-blank line.

Each oddity has one defined result:

* ``\\r\\n`` line ends: the ``\\r`` is dropped;
* a UTF-8 byte order mark at the start: dropped;
* blank (or all-whitespace) lines: skipped, they carry no message;
* a line longer than ``max_line`` bytes: a :class:`~normalize.LineTooLong`
  problem keeping its first :data:`KEEP_BYTES` bytes; the rest of that line is
  skipped as it arrives, so memory stays bounded by ``max_line``;
* a last line without a newline: a message if it is complete JSON, otherwise a
  :class:`~normalize.TruncatedLine` problem keeping the line whole as text;
* invalid UTF-8 or JSON: left to the adapter, whose decoder reports it as a
  :class:`~normalize.MalformedMessage` (a tap line that cannot be read is
  reported here).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Literal, Union, cast

import msgspec
from msgspec import Raw, Struct, field

from ._contract import Direction
from ._errors import InputError, LineTooLong, MalformedMessage, TruncatedLine
from ._pipeline import numbered, plain_messages, tap_messages, tap_record

__all__ = [
    "DEFAULT_MAX_LINE",
    "KEEP_BYTES",
    "CaptureParser",
    "LineProblem",
    "LineSplitter",
    "Message",
    "Record",
]

#: Default bound on one line: 16 MiB.  Real agent lines reach a few MiB (a tool
#: result holding a large file, an image in base64); a line beyond this bound is
#: far more likely a runaway writer than a message, and the bound is what keeps
#: a reader's memory finite.
DEFAULT_MAX_LINE = 16 * 1024 * 1024

#: How much of a bad line is kept in its error event.
KEEP_BYTES = 1024

_BOM = b"\xef\xbb\xbf"
#: Lines this long on average (bytes) are split faster by memchr than by ``bytes.split``,
#: which compares every byte.  Reading the harness's sessions (``benchmarks/``), us per
#: line: the same at 125 to 180 bytes a line, 0.37 -> 0.35 at 300, 0.60 -> 0.45 at 830
#: (Claude stream-json), 1.70 -> 0.86 at 3.8 KB (Claude transcripts).
_LONG = 256

try:  # the compiled build's split (src/normalize/_scan.c): memchr, each line copied once
    from ._scan import split_lines as _split_scan
except ImportError:  # the pure-Python build: bytes.split, or readlines for long lines
    _split_lines: Callable[[bytes], list[bytes]] | None = None
else:
    _split_lines = _split_scan


class Message(Struct, frozen=True, gc=False):
    """One native message: the wire bytes, who wrote them, when they were received.

    Not tracked by the cycle collector: it holds bytes and strings only (one per line read).
    """

    data: bytes
    from_: Direction = "agent"
    t: str | None = None
    line: int = 0


class LineProblem(Struct, frozen=True):
    """A line that could not become a message."""

    error: InputError
    line: int = 0
    t: str | None = None


Record = Union[Message, LineProblem]


def _kept(data: bytes) -> str:
    return data[:KEEP_BYTES].decode("utf-8", errors="replace")


def _whole(line: bytes) -> str:
    """A line under the bound that could not become a message, kept whole as text (U+FFFD for bad UTF-8)."""
    return line.decode("utf-8", errors="replace")


class LineSplitter:
    """Splits a byte stream into lines, whatever the chunking, with bounded memory."""

    def __init__(self, max_line: int = DEFAULT_MAX_LINE) -> None:
        if max_line < 1:
            raise ValueError("max_line must be positive")
        self.max_line = max_line
        self._buf = bytearray()
        self._lineno = 0
        self._discarding = False
        self._started = False
        self._closed = False
        #: the last chunk's lines were long (:data:`_LONG` bytes on average): split the next one by memchr
        self._long = False

    def feed(self, data: bytes) -> list[tuple[int, bytes] | LineProblem]:
        """Complete lines in ``data`` (with earlier leftovers), numbered from 1."""
        out: list[tuple[int, bytes] | LineProblem] = []
        buf = self._buf
        if b"\n" not in data:
            buf += data
        else:
            if _split_lines is not None:
                lines = _split_lines(data)
            elif self._long:
                # readlines finds each newline with memchr, then each line is copied
                # without its newline: for long lines, faster than a split (see _LONG)
                lines = io.BytesIO(data).readlines()
                rest = lines.pop() if not lines[-1].endswith(b"\n") else b""
                lines = [line[:-1] for line in lines]
                lines.append(rest)
            else:
                # one split per chunk: each line is copied once, straight into its bytes object
                lines = bytes(data).split(b"\n")
            self._long = len(data) >= _LONG * len(lines)
            if buf:  # the start of the first line came with an earlier chunk
                lines[0] = b"".join((buf, lines[0]))  # (one copy of each part)
                buf.clear()
            buf += lines.pop()
            if self._discarding and lines:  # the end of a line already reported as too long
                self._discarding = False
                del lines[0]
            if (
                self._started
                and b"\r" not in data
                and not (lines and lines[0].endswith(b"\r"))  # a "\r" left at the end of the last chunk
                and (
                    # every line but the first is part of ``data``; the first may begin in the
                    # buffer: both short enough, no line is too long (one test, not one a line)
                    (not lines or (len(data) <= self.max_line and len(lines[0]) <= self.max_line))
                    or max(map(len, lines)) <= self.max_line
                )
            ):
                # the common chunk: no line needs _emit's checks; numbered in one pass
                first = self._lineno + 1
                self._lineno += len(lines)
                out += numbered(lines, first)
            else:
                for line in lines:
                    self._lineno += 1
                    self._emit(out, line)
        # A line that cannot fit any more is reported now, so memory stays bounded; the
        # allowance of one byte is for a "\r" that would be dropped at its end.
        bom = 3 if not self._started and buf.startswith(_BOM) else 0
        if len(buf) - bom > self.max_line + 1:
            if not self._discarding:
                self._lineno += 1
                self._started = True
                out.append(self._too_long(bytes(buf[bom : bom + KEEP_BYTES])))
                self._discarding = True
            buf.clear()
        return out

    def close(self) -> list[tuple[int, bytes] | LineProblem]:
        """The stream ended; a last line without a newline is returned (flagged by the parser)."""
        out: list[tuple[int, bytes] | LineProblem] = []
        if self._buf and not self._discarding:
            self._lineno += 1
            self._emit(out, bytes(self._buf))
        self._buf.clear()
        self._discarding = False
        self._closed = True
        return out

    @property
    def lineno(self) -> int:
        return self._lineno

    def _too_long(self, head: bytes) -> LineProblem:
        head = head[: min(KEEP_BYTES, self.max_line)]
        return LineProblem(
            LineTooLong(f"line {self._lineno} is longer than {self.max_line} bytes", kept=_kept(head)),
            line=self._lineno,
        )

    def _emit(self, out: list[tuple[int, bytes] | LineProblem], line: bytes) -> None:
        if not self._started:
            self._started = True
            if line.startswith(_BOM):
                line = line[3:]
        if line.endswith(b"\r"):
            line = line[:-1]
        if len(line) > self.max_line:
            out.append(self._too_long(line))
        elif line.strip():
            out.append((self._lineno, line))


class _TapLine(Struct, frozen=True, gc=False):
    t: str
    from_: Literal["agent", "client"] = field(name="from")
    msg: Raw


_tap_decoder = msgspec.json.Decoder(_TapLine)
_any_decoder = msgspec.json.Decoder()


def is_tap_line(line: bytes) -> bool:
    """Whether a line is a tap record (``{"t":...,"from":...,"msg":...}``)."""
    if not line.startswith(b'{"t"'):
        return False
    try:
        _tap_decoder.decode(line)
    except (msgspec.DecodeError, RecursionError):
        return False
    return True


class CaptureParser:
    """Lines of a capture file -> :class:`Message` / :class:`LineProblem` records.

    Sans-I/O: ``feed(bytes)`` and ``close()``.  ``fmt`` is ``"tap"`` or
    ``"plain"`` once the first non-blank line was seen (or forced by the caller).
    """

    def __init__(
        self, max_line: int = DEFAULT_MAX_LINE, fmt: Literal["tap", "plain", "document"] | None = None
    ) -> None:
        self._splitter = LineSplitter(max_line)
        self.fmt = fmt
        self._doc: _Document | None = _Document(max_line) if fmt == "document" else None

    def feed(self, data: bytes) -> list[Record]:
        return self._parse(self._splitter.feed(data), last=False)

    def close(self) -> list[Record]:
        out = self._parse(self._splitter.close(), last=True)
        return out + self._doc.close() if self._doc is not None else out

    def _parse(self, lines: list[tuple[int, bytes] | LineProblem], last: bool) -> list[Record]:
        if self._doc is not None:
            self._doc.add(lines)
            return []
        if self.fmt == "plain" and not last:  # the common case: every line is a message
            return plain_messages(lines, Message)  # the rest are LineProblems
        if self.fmt == "tap" and not last:  # the common case of a tap: every line a tap record
            try:
                made = tap_messages(lines, Message, _tap_decoder.decode)
            except (msgspec.DecodeError, RecursionError):
                pass  # a line that is not one: each line read again below, that one for its error
            else:
                return cast(list[Record], made)
        out: list[Record] = []
        n = len(lines)
        for i, item in enumerate(lines):
            if type(item) is not tuple:  # a LineProblem (a type test, as above)
                out.append(cast(LineProblem, item))
                continue
            lineno, line = item
            if self.fmt is None and line.strip() == b"{":  # a JSON document over several lines
                self.fmt = "document"
                self._doc = _Document(self._splitter.max_line)
                self._doc.add(lines[i:])
                return out
            if last and i == n - 1 and not self._complete(line):
                out.append(
                    LineProblem(
                        TruncatedLine(
                            f"line {lineno} ends without a newline and is not complete JSON", kept=_whole(line)
                        ),
                        line=lineno,
                    )
                )
                continue
            if self.fmt is None:
                self.fmt = "tap" if is_tap_line(line) else "plain"
            if self.fmt == "plain":
                out.append(Message(line, "agent", None, lineno))
                continue
            record = tap_record(line, lineno, Message)
            if record is None:
                try:
                    tap = _tap_decoder.decode(line)
                except (msgspec.DecodeError, RecursionError) as exc:
                    out.append(
                        LineProblem(
                            MalformedMessage(f"line {lineno} is not a tap record: {exc}", kept=_whole(line)),
                            line=lineno,
                        )
                    )
                    continue
                record = Message(bytes(tap.msg), tap.from_, tap.t, lineno)
            out.append(record)
        return out

    @staticmethod
    def _complete(line: bytes) -> bool:
        try:
            _any_decoder.decode(line)
        except (msgspec.DecodeError, RecursionError):
            return False
        return True


_fields_decoder = msgspec.json.Decoder(dict[str, Raw])
_list_decoder = msgspec.json.Decoder(list[Raw])


def _compact(raw: bytes) -> bytes:
    return msgspec.json.format(raw, indent=-1)


class _Document:
    """The lines of a JSON document, kept until its end (``max_line`` bytes at most)."""

    def __init__(self, max_line: int) -> None:
        self._max = max_line
        self._parts: list[bytes] = []
        self._size = 0
        self._first = 0  # the number of the document's first line
        self._problem: LineProblem | None = None

    def add(self, lines: list[tuple[int, bytes] | LineProblem]) -> None:
        for item in lines:
            if self._problem is not None:
                return
            if type(item) is not tuple:
                self._problem = self._too_long(cast(LineProblem, item).line)
                return
            lineno, line = item
            self._first = self._first or lineno
            self._size += len(line) + 1
            if self._size > self._max:
                self._problem = self._too_long(lineno)
                return
            self._parts.append(line)

    def _too_long(self, lineno: int) -> LineProblem:
        head = b"\n".join(self._parts)
        message = f"the JSON document starting at line {self._first or lineno} is longer than {self._max} bytes"
        self._parts = []
        return LineProblem(LineTooLong(message, kept=_kept(head)), line=self._first or lineno)

    def close(self) -> list[Record]:
        if self._problem is not None:
            return [self._problem]
        data = b"\n".join(self._parts)
        self._parts = []
        if not data:
            return []
        try:
            fields = _fields_decoder.decode(data)
        except (msgspec.DecodeError, RecursionError) as exc:
            complete = CaptureParser._complete(data)
            error = MalformedMessage if complete else TruncatedLine
            why = f"the JSON document starting at line {self._first} is not {'an object' if complete else 'complete'}"
            return [LineProblem(error(f"{why}: {exc}", kept=_kept(data)), line=self._first)]
        try:
            messages = _list_decoder.decode(fields["messages"])
        except (KeyError, msgspec.DecodeError):  # no messages array: the document is one message
            return [Message(_compact(data), "agent", None, 1)]
        head = b",".join(
            msgspec.json.encode(k) + b":" + _compact(bytes(v)) for k, v in fields.items() if k != "messages"
        )
        out: list[Record] = [Message(b"{" + head + b"}", "agent", None, 1)]
        out += [Message(_compact(bytes(m)), "agent", None, n) for n, m in enumerate(messages, 2)]
        return out

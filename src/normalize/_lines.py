"""Reading captures: bytes in, native messages (or problems) out.  No I/O here.

Two capture formats (docs/captures.md):

* plain native JSONL: one message per line, all written by the agent;
* tap files: ``{"t": <RFC 3339>, "from": "agent"|"client", "msg": <the wire line>}``
  per line.  The format is decided once, from the first non-blank line.

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
                buf += lines[0]
                lines[0] = bytes(buf)
                buf.clear()
            buf += lines.pop()
            if self._discarding and lines:  # the end of a line already reported as too long
                self._discarding = False
                del lines[0]
            if (
                self._started
                and b"\r" not in data
                and not (lines and lines[0].endswith(b"\r"))  # a "\r" left at the end of the last chunk
                and max(map(len, lines), default=0) <= self.max_line
            ):
                # the common chunk: no line needs _emit's checks; numbered in one pass
                first = self._lineno + 1
                self._lineno += len(lines)
                out += [(n, line) for n, line in enumerate(lines, first) if line.strip()]
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

    def __init__(self, max_line: int = DEFAULT_MAX_LINE, fmt: Literal["tap", "plain"] | None = None) -> None:
        self._splitter = LineSplitter(max_line)
        self.fmt = fmt

    def feed(self, data: bytes) -> list[Record]:
        return self._parse(self._splitter.feed(data), last=False)

    def close(self) -> list[Record]:
        return self._parse(self._splitter.close(), last=True)

    def _parse(self, lines: list[tuple[int, bytes] | LineProblem], last: bool) -> list[Record]:
        if self.fmt == "plain" and not last:  # the common case: every line is a message
            # (a type test: an isinstance that fails costs ten times more, once per line)
            made = [Message(i[1], "agent", None, i[0]) if type(i) is tuple else i for i in lines]
            return cast(list[Record], made)  # the rest are LineProblems
        if self.fmt == "tap" and not last:  # the common case of a tap: every line a tap record
            decode = _tap_decoder.decode
            try:
                made = [
                    Message(bytes((tap := decode(i[1])).msg), tap.from_, tap.t, i[0]) if type(i) is tuple else i
                    for i in lines
                ]
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
            try:
                tap = _tap_decoder.decode(line)
            except (msgspec.DecodeError, RecursionError) as exc:
                out.append(
                    LineProblem(
                        MalformedMessage(f"line {lineno} is not a tap record: {exc}", kept=_whole(line)), line=lineno
                    )
                )
                continue
            out.append(Message(bytes(tap.msg), tap.from_, tap.t, lineno))
        return out

    @staticmethod
    def _complete(line: bytes) -> bool:
        try:
            _any_decoder.decode(line)
        except (msgspec.DecodeError, RecursionError):
            return False
        return True

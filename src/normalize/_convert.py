"""From files to CoreEvents: detection, companions, folders.  The synchronous I/O shell."""

from __future__ import annotations

import fnmatch
import itertools
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, Literal

from ._connection import Connection
from ._contract import Adapter, Sample
from ._errors import DetectionError, NotASession, UnreadableInput, UsageError
from ._lines import DEFAULT_MAX_LINE, CaptureParser, Message, Record
from ._model import Origin, _Core
from ._places import is_agent_file
from ._registry import adapter_class, detect_protocol, is_stream_header
from ._session import Clock, Session

__all__ = ["DETECT_SAMPLE", "SessionInput", "events", "find_inputs", "iter_records", "read_records"]

#: How many messages detection looks at.
DETECT_SAMPLE = 20
_CHUNK = 1 << 16


def iter_records(
    stream: BinaryIO, *, max_line: int = DEFAULT_MAX_LINE, fmt: Literal["tap", "plain"] | None = None
) -> Iterator[Record]:
    """Records of one capture stream, read in chunks (never the whole file)."""
    parser = CaptureParser(max_line, fmt)
    while chunk := stream.read(_CHUNK):
        yield from parser.feed(chunk)
    yield from parser.close()


def read_records(paths: Sequence[Path], *, max_line: int = DEFAULT_MAX_LINE) -> Iterator[Record]:
    """Records of several files read one after the other (a session and its companions).

    An ``OSError`` while reading (an I/O error, a file that vanished) is raised
    with ``filename`` set to the file, so whoever reports it can name it.
    """
    for path in paths:
        try:
            with path.open("rb") as f:
                yield from iter_records(f, max_line=max_line)
        except OSError as exc:
            if exc.filename is None:
                exc.filename = str(path)
            raise


def _sample(records: Iterator[Record], n: int) -> tuple[list[Record], list[Sample]]:
    head: list[Record] = []
    sample: list[Sample] = []
    for rec in records:
        head.append(rec)
        if isinstance(rec, Message):
            sample.append((rec.data, rec.from_))
            if len(sample) >= n:
                break
    return head, sample


def sample_records(records: Iterator[Record]) -> tuple[list[Record], list[Sample]]:
    """The records read to detect a protocol (to be fed again) and the sample of their messages."""
    return _sample(records, DETECT_SAMPLE)


def open_session(
    adapter: Adapter,
    *,
    session_id: str | None = None,
    origin: Origin | None = None,
    clock: Clock | None = None,
    strict: bool = False,
) -> Session | Connection:
    """A :class:`Session` for ``adapter``, or a :class:`Connection` when its protocol carries several sessions."""
    if type(adapter).routing is None:
        return Session(adapter, session_id=session_id, origin=origin, clock=clock, strict=strict)
    return Connection(type(adapter), first=adapter, session_id=session_id, origin=origin, clock=clock, strict=strict)


def events(
    records: Iterable[Record],
    *,
    protocol: str | None = None,
    adapter: Adapter | None = None,
    session_id: str | None = None,
    origin: Origin | None = None,
    clock: Clock | None = None,
    strict: bool = False,
) -> Iterator[_Core]:
    """CoreEvents for one session's records.  The protocol is detected when not given."""
    it = iter(records)
    head: list[Record] = []
    if adapter is None:
        if protocol is None:
            head, sample = _sample(it, DETECT_SAMPLE)
            protocol = detect_protocol(sample)
        adapter = adapter_class(protocol)()
    session = open_session(adapter, session_id=session_id, origin=origin, clock=clock, strict=strict)
    feed = session.feed
    for rec in itertools.chain(head, it):
        if isinstance(rec, Message):
            yield from feed(rec.data, rec.from_, t=rec.t)
        else:
            yield from session.feed_problem(rec.error, t=rec.t)
    yield from session.close()


class SessionInput:
    """One session on disk: its main file, the files that belong to it, its protocol."""

    def __init__(self, main: Path, protocol: str, companions: Sequence[Path] = ()) -> None:
        self.main = main
        self.protocol = protocol
        self.companions = list(companions)

    @property
    def paths(self) -> list[Path]:
        return [self.main, *self.companions]

    def __repr__(self) -> str:
        return f"SessionInput({str(self.main)!r}, {self.protocol!r}, +{len(self.companions)})"


def detect_file(path: Path, *, max_line: int = DEFAULT_MAX_LINE) -> str:
    """The protocol of one file, from its first messages.

    Raises :class:`DetectionError` naming the file: :class:`UnreadableInput`
    when it cannot be read, :class:`NotASession` for normalize's own output.
    """
    try:
        with path.open("rb") as f:
            _, sample = _sample(iter_records(f, max_line=max_line), DETECT_SAMPLE)
    except OSError as exc:
        raise UnreadableInput(f"{path}: {exc.strerror or exc}") from None
    if not sample:
        raise DetectionError(f"{path}: empty input, nothing to detect")
    try:
        return detect_protocol(sample)
    except DetectionError as exc:
        raise type(exc)(f"{path}: {exc.message}") from None


def _protocol_of(path: Path, protocol: str | None, max_line: int) -> str:
    """The file's protocol: detected, or the one forced, unless it is normalize's own output."""
    if protocol is None:
        return detect_file(path, max_line=max_line)
    try:
        with path.open("rb") as f:
            head = f.read(1 << 16)
    except OSError as exc:
        raise UnreadableInput(f"{path}: {exc.strerror or exc}") from None
    first = head.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0].rstrip(b"\r")
    if is_stream_header(first):
        raise NotASession(f"{path}: a normalized stream (normalize's own output), not a native session")
    return protocol


def _companions(path: Path, cls: type[Adapter]) -> list[Path]:
    stem = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem
    found: set[Path] = set()
    for pattern in cls.companions:
        found.update(path.parent.glob(pattern.format(stem=stem)))
    return sorted(found)


def find_inputs(
    paths: Iterable[Path], *, protocol: str | None = None, max_line: int = DEFAULT_MAX_LINE
) -> Iterator[SessionInput | DetectionError]:
    """Every session under ``paths`` (files, or folders searched for ``*.jsonl``).

    Files that are companions of a session (a Claude sub-agent transcript) are
    read with it, not as sessions of their own.  A file that cannot be used is
    yielded as its :class:`DetectionError`, naming it, and the rest goes on:
    undetectable, :class:`UnreadableInput` (an OS error), or
    :class:`NotASession` (normalize's own output, a note rather than a failure).
    A path that does not exist is a :class:`UsageError`, raised before anything
    is yielded.
    """
    roots = list(paths)
    for root in roots:
        if not root.exists() and not root.is_symlink():
            raise UsageError(f"{root}: no such file or directory")
    for root in roots:
        if root.is_dir():
            yield from _find_in_folder(root, protocol, max_line)
            continue
        try:
            proto = _protocol_of(root, protocol, max_line)
            cls = adapter_class(proto)
        except DetectionError as exc:
            yield exc
            continue
        yield SessionInput(root, proto, _companions(root, cls))


def _find_in_folder(root: Path, protocol: str | None, max_line: int) -> Iterator[SessionInput | DetectionError]:
    try:
        files = sorted(p for p in root.rglob("*.jsonl") if p.is_file())
    except OSError as exc:  # a folder that cannot be listed
        yield UnreadableInput(f"{exc.filename or root}: {exc.strerror or exc}")
        return
    by_dir: dict[Path, list[Path]] = {}
    for f in files:
        by_dir.setdefault(f.parent, []).append(f)
    taken: set[Path] = set()
    for f in files:
        if f in taken or is_agent_file(f):  # the agents' prompt history and indexes: not sessions
            continue
        try:
            proto = _protocol_of(f, protocol, max_line)
        except DetectionError as exc:
            yield exc
            continue
        cls = adapter_class(proto)
        comps = _companions(f, cls)
        # only a file in a folder above it can have it as companion (not all files: that is quadratic)
        above = [o for d in f.parents if d in by_dir for o in by_dir[d]]
        if _is_companion(f, above, cls):
            continue
        taken.update(comps)
        yield SessionInput(f, proto, comps)


def _is_companion(f: Path, files: Sequence[Path], cls: type[Adapter]) -> bool:
    if not cls.companions:
        return False
    for other in files:
        if other == f or other.parent not in f.parents:
            continue
        stem = other.name[: -len(".jsonl")]
        rel = f.relative_to(other.parent).as_posix()
        if any(fnmatch.fnmatch(rel, pat.format(stem=stem)) for pat in cls.companions):
            return True
    return False

"""From files to CoreEvents: detection, companions, folders.  The synchronous I/O shell."""

from __future__ import annotations

import fnmatch
import itertools
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, Literal

from ._contract import Adapter, Sample
from ._errors import DetectionError, UsageError
from ._lines import DEFAULT_MAX_LINE, CaptureParser, Message, Record
from ._model import Origin, _Core
from ._registry import adapter_class, detect_protocol
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
    """Records of several files read one after the other (a session and its companions)."""
    for path in paths:
        with path.open("rb") as f:
            yield from iter_records(f, max_line=max_line)


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
    session = Session(adapter, session_id=session_id, origin=origin, clock=clock, strict=strict)
    feed = session.feed
    for rec in itertools.chain(head, it):
        if isinstance(rec, Message):
            yield from feed(rec.data, rec.from_, t=rec.t)
        else:
            yield from session.feed_problem(rec.error, t=rec.t)
    yield from session.close()


class SessionInput:
    """One session on disk: its main file, the files that belong to it, its protocol.

    ``key`` names a session inside a database file (an OpenCode ``opencode.db``): its
    records are read from the database (:meth:`records`), not parsed from lines.
    """

    def __init__(self, main: Path, protocol: str, companions: Sequence[Path] = (), key: str | None = None) -> None:
        self.main = main
        self.protocol = protocol
        self.companions = list(companions)
        self.key = key

    @property
    def paths(self) -> list[Path]:
        return [self.main, *self.companions]

    def records(self, *, max_line: int = DEFAULT_MAX_LINE) -> Iterator[Record]:
        """The session's records: its files' lines, or its rows in a database."""
        if self.key is None:
            return read_records(self.paths, max_line=max_line)
        return store_records(self.main, self.key)

    def __repr__(self) -> str:
        key = f", key={self.key!r}" if self.key is not None else ""
        return f"SessionInput({str(self.main)!r}, {self.protocol!r}, +{len(self.companions)}{key})"


# ---------------------------------------------------------------- session databases

#: The protocol of the sessions a database file holds.
STORE_PROTOCOL = "opencode-db"


def is_store(path: Path) -> bool:
    """Whether ``path`` is a database of stored sessions normalize reads (OpenCode's)."""
    from .adapters.opencode_db import is_opencode_db

    return path.is_file() and is_opencode_db(path)


def store_inputs(path: Path) -> list[SessionInput]:
    """One input per session of a database file, oldest first."""
    from .adapters.opencode_db import session_ids

    return [SessionInput(path, STORE_PROTOCOL, key=sid) for sid in session_ids(path)]


def store_records(path: Path, key: str) -> Iterator[Message]:
    """The row records of one session of a database file (numbered like lines)."""
    from .adapters.opencode_db import session_rows

    for n, data in enumerate(session_rows(path, key), 1):
        yield Message(data=data, from_="agent", line=n)


def detect_file(path: Path, *, max_line: int = DEFAULT_MAX_LINE) -> str:
    """The protocol of one file, from its first messages."""
    with path.open("rb") as f:
        _, sample = _sample(iter_records(f, max_line=max_line), DETECT_SAMPLE)
    if not sample:
        raise DetectionError(f"{path}: empty input, nothing to detect")
    try:
        return detect_protocol(sample)
    except DetectionError as exc:
        raise DetectionError(f"{path}: {exc.message}") from None


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
    read with it, not as sessions of their own.  An undetectable file in a
    folder is yielded as its :class:`DetectionError`; a named file that cannot
    be detected raises.
    """
    for root in paths:
        if root.is_dir():
            for db in sorted(p for p in root.rglob("*.db") if is_store(p)):
                yield from store_inputs(db)
            files = sorted(p for p in root.rglob("*.jsonl") if p.is_file())
            taken: set[Path] = set()
            for f in files:
                if f in taken:
                    continue
                try:
                    proto = protocol or detect_file(f, max_line=max_line)
                except DetectionError as exc:
                    yield exc
                    continue
                cls = adapter_class(proto)
                comps = _companions(f, cls)
                if _is_companion(f, files, cls):
                    continue
                taken.update(comps)
                yield SessionInput(f, proto, comps)
        elif is_store(root):
            yield from store_inputs(root)
        elif root.exists():
            proto = protocol or detect_file(root, max_line=max_line)
            yield SessionInput(root, proto, _companions(root, adapter_class(proto)))
        else:
            raise UsageError(f"{root}: no such file or directory")


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

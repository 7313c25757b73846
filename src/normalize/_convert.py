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
    owned: set[Path] = set()
    for pattern in cls.owned:
        owned.update(p for p in path.parent.glob(pattern) if p != path and p.is_file() and cls.owner_of(p) == stem)
    return sorted(found) + sorted(owned - found)


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
        elif root.exists():
            proto = protocol or detect_file(root, max_line=max_line)
            yield SessionInput(root, proto, _companions(root, adapter_class(proto)))
        else:
            raise UsageError(f"{root}: no such file or directory")


def _is_companion(f: Path, files: Sequence[Path], cls: type[Adapter]) -> bool:
    if any(fnmatch.fnmatch(f.name, pat) for pat in cls.owned):
        owner = cls.owner_of(f)
        if owner is not None and f.parent / f"{owner}.jsonl" in files and owner != f.name[: -len(".jsonl")]:
            return True
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

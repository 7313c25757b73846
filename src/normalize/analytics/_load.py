"""Finding sessions on disk and turning each into table rows, on all cores.

Inputs are native files of any registered protocol (detected with
:func:`normalize.find_inputs`) or normalized JSONL streams (first line a
``stream.header``, read back with :func:`normalize.decode`).  Each session is
read by one worker, streamed event by event, so a worker's memory is one
session's rows.  The same session found twice (a live recording and the
agent's stored file, a file and its normalized copy) is kept once: the input
that holds most of it (turns, then events) wins, ties to the first path.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Literal

from normalize import (
    DEFAULT_MAX_LINE,
    DetectionError,
    InputError,
    LineProblem,
    LineSplitter,
    SessionInput,
    StreamHeader,
    decode,
    events,
    find_inputs,
    read_records,
)
from normalize._convert import detect_file, folder_files, folder_pool
from normalize._model import _Core
from normalize._outputs import is_normalized_file

from ._tables import SessionRows, TableBuilder, unknown_clock

__all__ = [
    "InputSpec",
    "Loaded",
    "Scan",
    "discover",
    "input_events",
    "is_normalized",
    "load",
    "outranks",
    "prefer",
    "read_all",
    "read_input",
    "rows_of",
]


@dataclass(frozen=True)
class InputSpec:
    """One session input (picklable, for workers): a native session or a normalized stream file."""

    kind: Literal["native", "normalized"]
    main: str
    protocol: str | None = None
    companions: tuple[str, ...] = ()
    key: str | None = None  # a session inside a database file

    @property
    def paths(self) -> list[Path]:
        return [Path(self.main), *(Path(c) for c in self.companions)]


#: The longest line of a normalized stream read back (longer ones make the file a problem, unread).
MAX_LINE = DEFAULT_MAX_LINE


def is_normalized(path: Path) -> bool:
    """Whether a file is a normalized stream: its first line is a ``stream.header``."""
    return is_normalized_file(path)


def discover(
    paths: Iterable[Path], *, protocol: str | None = None, pool: concurrent.futures.Executor | None = None
) -> Iterator[InputSpec | InputError]:
    """Every session input under ``paths``, in a stable order; undetectable files as their error.

    With ``pool`` (a process pool), a folder's files are detected by its workers."""
    for root in paths:
        if root.is_dir():
            found = folder_files(root)
            normalized = {p for p in found.files if is_normalized(p)}
            for p in sorted(normalized):
                yield InputSpec("normalized", str(p))
            if len(normalized) == len(found.files) and not found.stores and not found.documents:
                continue
            for inp in find_inputs([root], protocol=protocol, pool=pool):
                if isinstance(inp, DetectionError):
                    if not any(inp.message.startswith(f"{p}:") for p in normalized):
                        yield inp
                elif inp.main not in normalized:
                    yield _spec(inp)
        elif root.is_file() and is_normalized(root):
            yield InputSpec("normalized", str(root))
        else:
            for inp in find_inputs([root], protocol=protocol):
                yield inp if isinstance(inp, DetectionError) else _spec(inp)


def _spec(inp: SessionInput) -> InputSpec:
    return InputSpec("native", str(inp.main), inp.protocol, tuple(str(c) for c in inp.companions), inp.key)


def input_events(spec: InputSpec) -> Iterator[_Core | StreamHeader]:
    """The normalized events of one input, streamed: a native session converted, or a normalized file decoded.

    A normalized file holding several streams yields each stream's header before its
    events, so :func:`rows_of` starts a new session there.  Lines are bounded by
    :data:`MAX_LINE`.  Raises :class:`InputError` for a line that is too long or not a
    CoreEvent (with its ``FILE:LINE``) and ``OSError`` for a file that cannot be read.
    """
    if spec.kind == "native":
        protocol = spec.protocol
        if protocol is None and spec.companions:  # the protocol says how the session's files are read together
            try:
                protocol = detect_file(Path(spec.main))
            except DetectionError:
                protocol = None
        records = (
            read_records(spec.paths)
            if spec.key is None and protocol is None
            else SessionInput(
                Path(spec.main), protocol or "", [Path(c) for c in spec.companions], key=spec.key
            ).records()  # a database's rows; a session's files, merged in time order where its adapter asks
        )
        yield from events(records, protocol=protocol, clock=unknown_clock)
        return
    with open(spec.main, "rb") as f:
        for item in _lines(f):
            if isinstance(item, LineProblem):
                raise InputError(f"{spec.main}:{item.line}: {item.error.message}")
            lineno, line = item
            try:
                yield decode(line)
            except InputError as exc:
                raise InputError(f"{spec.main}:{lineno}: {exc.message}") from None


def rows_of(stream: Iterable[object], source: str, *, content: bool = False) -> list[SessionRows]:
    """The table rows of a stream of events (each stream header starts a new stream), ``source`` their input."""
    out: list[SessionRows] = []
    builder: TableBuilder | None = None
    for ev in stream:
        if isinstance(ev, StreamHeader):
            if builder is not None:
                out.extend(builder.finish())
            builder = TableBuilder(source, content=content)
            continue
        if builder is None:
            builder = TableBuilder(source, content=content)
        builder.feed(ev)
    if builder is not None:
        out.extend(builder.finish())
    return out


def read_input(spec: InputSpec, *, content: bool = False) -> list[SessionRows]:
    """The rows of one input (runs in a worker); with ``content``, the turns' messages too."""
    return rows_of(input_events(spec), spec.main, content=content)


def _lines(f: BinaryIO) -> Iterator[tuple[int, bytes] | LineProblem]:
    """The lines of a normalized stream, each bounded by :data:`MAX_LINE` (memory stays bounded)."""
    splitter = LineSplitter(MAX_LINE)
    while chunk := f.read(1 << 16):
        yield from splitter.feed(chunk)
    yield from splitter.close()


def _read_safely(spec: InputSpec, keep: frozenset[str] | None = None) -> list[SessionRows] | InputError:
    """One input's rows, in a worker; only the tables in ``keep`` (all when None) travel back.

    ``messages`` in ``keep`` asks for the turns' messages (``SessionRows.messages``), never read otherwise.
    """
    try:
        out = read_input(spec, content=keep is not None and "messages" in keep)
    except InputError as exc:
        return exc
    except OSError as exc:  # one unreadable file is reported like an undetectable one; the rest goes on
        return InputError(exc.strerror or str(exc))
    if keep is not None:
        for rows in out:
            rows.tables = {
                name: (table if name in keep or name == "sessions" else []) for name, table in rows.tables.items()
            }
    return out


@dataclass
class Loaded:
    """What a load found: the sessions it kept (richest input per session key) and the inputs it could not read."""

    sessions: dict[str, SessionRows] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    inputs: int = 0
    duplicates: int = 0

    def offer(self, rows: SessionRows) -> bool:
        """Keep ``rows`` unless an input already kept holds as much of the session; True if kept."""
        have = self.sessions.get(rows.key)
        if have is not None:
            self.duplicates += 1
            if not prefer(rows, have):
                return False
        self.sessions[rows.key] = rows
        return True


def prefer(new: SessionRows, old: SessionRows) -> bool:
    """Whether ``new`` replaces ``old`` (same session): more turns, else more events, else the path sorts first."""
    return outranks((new.richness, new.source), (old.richness, old.source))


def outranks(new: tuple[tuple[int, int], str], old: tuple[tuple[int, int], str]) -> bool:
    """:func:`prefer`'s rule on two copies of a session given as ``(richness, source)``: the
    form a store keeps of what it wrote, and a cluster of what it staged."""
    if new[0] != old[0]:
        return new[0] > old[0]
    return new[1] < old[1]


Progress = Callable[[int, int], None]


def read_all(
    specs: Sequence[InputSpec],
    *,
    jobs: int | None = None,
    progress: Progress | None = None,
    tables: Iterable[str] | None = None,
    pool: concurrent.futures.Executor | None = None,
) -> Iterator[tuple[InputSpec, list[SessionRows] | InputError]]:
    """Each input's rows as soon as it is read, on ``jobs`` worker processes (all cores by default),
    or on ``pool``'s.

    With several workers the order is the order they finish in; every consumer here
    decides by key and :func:`prefer`, never by order, so the outcome is the same.
    """
    keep = None if tables is None else frozenset(tables)
    n = len(specs)
    workers = min(jobs or os.cpu_count() or 1, n)
    if workers <= 1:
        for i, spec in enumerate(specs):
            result = _read_safely(spec, keep)
            if progress is not None:
                progress(i + 1, n)
            yield spec, result
        return
    with contextlib.ExitStack() as own:
        if pool is None:
            pool = own.enter_context(concurrent.futures.ProcessPoolExecutor(max_workers=workers))
        futures = {pool.submit(_read_safely, spec, keep): spec for spec in specs}
        try:
            for done, fut in enumerate(concurrent.futures.as_completed(futures), 1):
                if progress is not None:
                    progress(done, n)
                yield futures[fut], fut.result()
        finally:
            for fut in futures:  # stopped early: what has not started is not run (the pool may be shared)
                fut.cancel()


class Scan:
    """Every session under some paths, as rows, one input at a time (nothing kept: the caller decides).

    After iterating, ``inputs`` is the number of session inputs found and
    ``problems`` says which could not be detected or read.
    """

    def __init__(
        self,
        paths: Iterable[Path],
        *,
        protocol: str | None = None,
        jobs: int | None = 1,
        progress: Progress | None = None,
        tables: Iterable[str] | None = None,
        skip: Callable[[InputSpec], bool] | None = None,
    ) -> None:
        self.paths = list(paths)
        self.protocol = protocol
        self.jobs = jobs
        self.progress = progress
        self.tables = None if tables is None else tuple(tables)
        self.skip = skip
        self.inputs = 0
        self.unchanged = 0
        self.problems: list[str] = []
        #: the inputs read without a problem, in the order they were read
        self.read: list[InputSpec] = []

    def __iter__(self) -> Iterator[SessionRows]:
        jobs = self.jobs or os.cpu_count() or 1
        with contextlib.ExitStack() as stack:
            # the workers start first when a folder is searched: they detect its files, then read the sessions
            pool = stack.enter_context(folder_pool(jobs, self.paths))
            specs: list[InputSpec] = []
            for item in discover(self.paths, protocol=self.protocol, pool=pool):
                if isinstance(item, InputError):
                    self.problems.append(item.message)
                elif self.skip is not None and self.skip(item):
                    self.unchanged += 1
                else:
                    specs.append(item)
            self.inputs = len(specs) + self.unchanged
            read = read_all(specs, jobs=jobs, progress=self.progress, tables=self.tables, pool=pool)
            for spec, result in read:
                if isinstance(result, InputError):
                    self.problems.append(f"{spec.main}: {result.message}")
                else:
                    self.read.append(spec)
                    yield from result


def load(
    paths: Iterable[Path],
    *,
    protocol: str | None = None,
    jobs: int | None = 1,
    progress: Progress | None = None,
    tables: Iterable[str] | None = None,
) -> Loaded:
    """Every session under ``paths`` as table rows, each session once (``tables``: the ones to keep, default all)."""
    loaded = Loaded()
    scan = Scan(paths, protocol=protocol, jobs=jobs, progress=progress, tables=tables)
    for rows in scan:
        loaded.offer(rows)
    loaded.inputs = scan.inputs
    loaded.problems = scan.problems
    return loaded

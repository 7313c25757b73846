"""From files to CoreEvents: detection, companions, folders.  The synchronous I/O shell."""

from __future__ import annotations

import concurrent.futures
import contextlib
import fnmatch
import glob
import heapq
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, Literal

from ._codec import encode
from ._connection import Connection
from ._contract import Adapter, Sample
from ._errors import DetectionError, NotASession, UnreadableInput, UsageError
from ._lines import DEFAULT_MAX_LINE, CaptureParser, Message, Record
from ._model import Error as ErrorBody
from ._model import Origin, SessionEvent, _Core
from ._pipeline import batches, encode_lines, records_of
from ._places import is_agent_file
from ._registry import adapter_class, available, detect_protocol, is_stream_header
from ._session import Clock, Session

__all__ = [
    "DETECT_SAMPLE",
    "NormalizedLines",
    "SessionInput",
    "events",
    "find_inputs",
    "folder_pool",
    "iter_records",
    "merge_records",
    "read_records",
]

#: How many messages detection looks at.
DETECT_SAMPLE = 20
_CHUNK = 1 << 16


def iter_records(
    stream: BinaryIO, *, max_line: int = DEFAULT_MAX_LINE, fmt: Literal["tap", "plain", "document"] | None = None
) -> Iterator[Record]:
    """Records of one capture stream, read in chunks (never the whole file)."""
    return records_of(stream, CaptureParser(max_line, fmt), _CHUNK)


def read_records(paths: Sequence[Path], *, max_line: int = DEFAULT_MAX_LINE) -> Iterator[Record]:
    """Records of several files read one after the other (a session and its companions).

    An ``OSError`` while reading (an I/O error, a file that vanished) is raised
    with ``filename`` set to the file, so whoever reports it can name it.
    """
    return itertools.chain.from_iterable(_file_records(path, max_line) for path in paths)


#: How many untimed records at the head of a file wait for its first time (``interleave``).
LOOKAHEAD = 64

#: A record keyed for the merge: (time, file index, position in the file, record).
_Keyed = tuple[str, int, int, Record]


def _timed(index: int, records: Iterator[Record], time_of: Callable[[bytes], str | None]) -> Iterator[_Keyed]:
    """A file's records keyed for the merge: the latest time seen in the file so far.

    Records before the file's first time take that first time (looked for within
    :data:`LOOKAHEAD` records), so a companion's untimed head stays with its lines;
    the key never decreases, so the file's own order is kept.
    """
    last = ""
    head: list[tuple[int, Record]] = []
    for n, rec in enumerate(records):
        t = time_of(rec.data) if isinstance(rec, Message) else None
        if t is not None and t > last:
            last = t
        if not last and len(head) < LOOKAHEAD:
            head.append((n, rec))
            continue
        for m, early in head:
            yield (last, index, m, early)
        head = []
        yield (last, index, n, rec)
    for m, early in head:
        yield (last, index, m, early)


def merge_records(files: Sequence[Iterable[Record]], protocol: str) -> Iterator[Record]:
    """The records of one session's files, one iterable per file.

    Merged in time order when the protocol's adapter sets ``interleave`` (each file's
    own order kept; a tie goes to the earlier file, the session's own first), else one
    file after the other.
    """
    cls = adapter_class(protocol)
    if not cls.interleave or len(files) < 2:
        return itertools.chain.from_iterable(files)
    return _merged(files, cls.time_of)


def _merged(files: Sequence[Iterable[Record]], time_of: Callable[[bytes], str | None]) -> Iterator[Record]:
    keyed = [_timed(i, iter(f), time_of) for i, f in enumerate(files)]
    for *_, rec in heapq.merge(*keyed):
        yield rec


def _file_records(path: Path, max_line: int) -> Iterator[Record]:
    """A file's records, the file opened at the first one asked for (and closed when its
    records end, or are no longer wanted); an ``OSError`` while reading is raised with
    ``filename`` set to the file."""
    # (a Python generator: dropped before its end, it is closed, and closes the file; a
    # compiled one is not)
    try:
        with path.open("rb") as f:
            yield from records_of(f, CaptureParser(max_line), _CHUNK)
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


#: How many records ``NormalizedLines`` reads before it gives what they made, at most.
BATCH = 256
#: ... and how many bytes of input: a batch's output stays small (a few times this), so
#: its buffer is reused rather than grown, and memory does not depend on the line size.
BATCH_BYTES = 1 << 15
#: Bytes kept in front of each batch's output in the buffer :meth:`NormalizedLines.chunks`
#: reuses.  A bytearray gives back its memory (a copy) once less than half of it is used, and
#: grows in steps (a copy each): with this much always in use, the buffer keeps the memory
#: the largest batch needed, and a batch's output is written once, never copied (measured on
#: Claude stream-json: about 5 KB of copies per native line without it).  A batch of up to
#: a third of it keeps the room (growing by half may take the buffer to 1.5 times what it
#: holds, and past twice the ballast it is let go); the harness's batches are 60 to 165 KB.
_BALLAST = 1 << 20
#: The most events whose lines :meth:`NormalizedLines.chunks` gives in one chunk: a chunk
#: of 256 events keeps to the room the buffer keeps (1,024: 2 MB more peak memory at 1M
#: lines of ACP or Codex app-server, whose close settles tens of thousands of sessions).
CHUNK_EVENTS = 256


class NormalizedLines:
    """One session's normalized stream, a batch at a time: what ``convert`` writes.

    :func:`events` for the same arguments, ``batch`` records (or :data:`BATCH_BYTES` of
    input) at a time, encoded:
    iterating gives each batch as a list of lines (no newline), :meth:`chunks` each
    batch as one piece of bytes (every line ending in a newline), written in place
    (:func:`encode_lines`) for one write per batch (a batch of more than
    :data:`CHUNK_EVENTS` events in several pieces).  After iterating, :attr:`recognised`
    says whether any native message was translated (became an event other than an error).
    """

    def __init__(
        self,
        records: Iterable[Record],
        *,
        protocol: str | None = None,
        origin: Origin | None = None,
        clock: Clock | None = None,
        strict: bool = False,
        batch: int = BATCH,
    ) -> None:
        self._records = records
        self._protocol = protocol
        self._origin = origin
        self._clock = clock
        self._strict = strict
        self._batch = batch
        self.recognised = False

    def __iter__(self) -> Iterator[list[bytes]]:
        for events in self._batches(*self._open(), self._batch):
            yield [encode(ev) for ev in events]

    def chunks(self) -> Iterator[bytes | memoryview]:
        """Each batch's lines as one piece of bytes (:data:`CHUNK_EVENTS` events' at most), to
        write as it comes.

        A chunk holds until the next one is asked for: it is a view of a buffer the next
        chunk is written into, released then (reading it after raises ``ValueError``);
        ``bytes(chunk)`` keeps a copy.
        """
        session, records = self._open()
        # A batch's events are encoded together once it is read: one tight loop of msgspec
        # calls per batch costs less than one call per message between the translations
        # (measured: 6 to 9% of the whole path).  At most CHUNK_EVENTS of them go into a
        # chunk: the last batch holds what the close settles, and a connection's close
        # settles every session it opened (tens of thousands over a long stream; in one
        # buffer, 13 MB more peak memory at 1M lines of Codex app-server).
        buf = bytearray(_BALLAST)
        step = CHUNK_EVENTS
        for events in self._batches(session, records, self._batch):
            for start in range(0, len(events), step):
                encode_lines(events[start : start + step] if len(events) > step else events, buf)
                with memoryview(buf) as whole, whole[_BALLAST:] as chunk:
                    yield chunk
                if buf.__alloc__() > 2 * _BALLAST:  # a batch too large to keep room for: let it go
                    buf = bytearray(_BALLAST)
                else:
                    del buf[_BALLAST:]

    def _batches(self, session: Session | Connection, records: Iterator[Record], batch: int) -> Iterator[list[_Core]]:
        """The events of ``batch`` records at a time (or of :data:`BATCH_BYTES` of input), the
        close's events with the last; :attr:`recognised` is kept up to date."""
        for out in batches(session, records, Message, batch, BATCH_BYTES):
            if not self.recognised:
                self.recognised = any(map(_recognised, out))
            yield out

    def _open(self) -> tuple[Session | Connection, Iterator[Record]]:
        """The session (or connection) for the records, and the records from the first."""
        it = iter(self._records)
        protocol = self._protocol
        if protocol is None:
            head, sample = _sample(it, DETECT_SAMPLE)
            protocol = detect_protocol(sample)
            it = itertools.chain(head, it)
        session = open_session(adapter_class(protocol)(), origin=self._origin, clock=self._clock, strict=self._strict)
        return session, it


def _recognised(ev: _Core) -> bool:
    """Whether an event is a native message translated (not kept untranslated, not an error)."""
    if not isinstance(ev, SessionEvent):
        return False
    return ev.event.native.protocol != "core" and not isinstance(ev.event.body, ErrorBody)


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
        """The session's records: its files' lines (merged in time order when the
        adapter interleaves them), or its rows in a database."""
        if self.key is not None:
            return store_records(self.main, self.key)
        if self.companions and adapter_class(self.protocol).interleave:
            return merge_records([_file_records(p, max_line) for p in self.paths], self.protocol)
        return read_records(self.paths, max_line=max_line)

    def __repr__(self) -> str:
        key = f", key={self.key!r}" if self.key is not None else ""
        return f"SessionInput({str(self.main)!r}, {self.protocol!r}, +{len(self.companions)}{key})"


# ---------------------------------------------------------------- session databases

#: The protocol of the sessions a database file holds.
STORE_PROTOCOL = "opencode-db"


def is_store(path: Path) -> bool:
    """Whether ``path`` holds stored sessions normalize reads as a whole: OpenCode's database,
    or (1.0, 1.1) its ``storage/`` folder of JSON files."""
    from .adapters.opencode_db import is_opencode_db, is_opencode_storage

    if path.is_dir():
        return is_opencode_storage(path)
    return path.is_file() and is_opencode_db(path)


def store_inputs(path: Path) -> list[SessionInput]:
    """One input per session of a database file or ``storage/`` folder, oldest first."""
    from .adapters.opencode_db import session_ids, storage_session_ids

    ids = storage_session_ids(path) if path.is_dir() else session_ids(path)
    return [SessionInput(path, STORE_PROTOCOL, key=sid) for sid in ids]


def store_records(path: Path, key: str) -> Iterator[Message]:
    """The row records of one session of a database file or ``storage/`` folder (numbered like lines)."""
    from .adapters.opencode_db import session_rows, storage_session_rows

    rows = storage_session_rows(path, key) if path.is_dir() else session_rows(path, key)
    for n, data in enumerate(rows, 1):
        yield Message(data=data, from_="agent", line=n)


class FolderFiles:
    """What a folder holds that may be sessions, found in one walk of it."""

    __slots__ = ("documents", "files", "stores")

    def __init__(self, stores: list[Path], files: list[Path], documents: list[Path]) -> None:
        #: OpenCode's databases, then its ``storage/`` folders (each read as a whole)
        self.stores = stores
        #: the ``*.jsonl`` files outside those folders
        self.files = files
        #: the ``*.json`` files outside them holding one JSON document (:func:`is_document`)
        self.documents = documents


def folder_files(root: Path) -> FolderFiles:
    """The stores, JSONL files and JSON documents under ``root``; raises ``OSError`` when it
    cannot be listed.  A ``storage/`` folder's own files are its sessions', not listed apart."""
    dbs: list[Path] = []
    marks: list[Path] = []  # ``session`` entries: a storage/ folder holds one
    jsonl: list[Path] = []
    objects: list[Path] = []
    for p in root.rglob("*"):
        name = p.name
        if name.endswith(".jsonl"):
            jsonl.append(p)
        elif name.endswith(".json"):
            objects.append(p)
        elif name.endswith(".db"):
            dbs.append(p)
        elif name == "session":
            marks.append(p)
    storage = tuple(sorted({m.parent for m in marks if m.is_dir() and is_store(m.parent)}))
    return FolderFiles(
        [*sorted(p for p in dbs if is_store(p)), *storage],
        sorted(p for p in jsonl if p.is_file() and not _under_any(p, storage)),
        sorted(p for p in objects if not _under_any(p, storage) and is_document(p)),
    )


def _under_any(path: Path, folders: tuple[Path, ...]) -> bool:
    return any(path.is_relative_to(f) for f in folders)


def new_stored(path: Path, seen: set[str]) -> Iterator[SessionInput]:
    """A store's sessions; a ``storage/`` session a database already gave is left out (OpenCode
    1.2 copies ``storage/`` into its new database and leaves the files: read once)."""
    for inp in store_inputs(path):
        if path.is_dir() and inp.key in seen:
            continue
        seen.add(inp.key or "")
        yield inp


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


def _companions(path: Path, cls: type[Adapter], folder: _Folder | None = None) -> list[Path]:
    stem = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem
    found: set[Path] = set()
    for pattern in cls.companions:
        found.update(path.parent.glob(pattern.format(stem=glob.escape(stem))))
    owned: set[Path] = set()
    if cls.owned:
        table = (folder or _Folder([])).owned(cls, path.parent)
        owned.update(p for p in table.get(stem, ()) if p != path)
    return sorted(found) + sorted(owned - found)


def _reading_companions() -> list[type[Adapter]]:
    """The registered adapters whose sessions read other files with them."""
    return [cls for cls in available().values() if cls.companions or cls.owned]


def _companion_names(cls: type[Adapter]) -> tuple[str, ...] | None:
    """The file names ``cls.companions`` patterns end in, or None when one depends on the
    session's name (``{stem}`` in its last part)."""
    if cls not in _COMPANION_NAMES:
        names = tuple(pattern.rsplit("/", 1)[-1] for pattern in cls.companions)
        _COMPANION_NAMES[cls] = None if any("{" in n for n in names) else names
    return _COMPANION_NAMES[cls]


_COMPANION_NAMES: dict[type[Adapter], tuple[str, ...] | None] = {}


def _repeat(*values: object) -> list[itertools.repeat[object]]:
    """Arguments repeated for ``Executor.map``, one iterable each."""
    return [itertools.repeat(v) for v in values]


class _Folder:
    """What a search of a folder knows of the session files it found.

    Finding a session's companions, and whether a file is one, then costs the same
    however many sessions lie beside it (a Claude project folder may hold thousands):
    each folder is searched for ``owned`` files once, each owned file's owner is read
    once, and a file's possible owners are looked up by name rather than compared with
    every file above it.
    """

    def __init__(self, files: Sequence[Path]) -> None:
        self.files = set(files)
        self.by_dir: dict[Path, list[Path]] = {}
        for f in files:
            self.by_dir.setdefault(f.parent, []).append(f)
        self._owners: dict[tuple[type[Adapter], Path], str | None] = {}
        self._owned: dict[tuple[type[Adapter], Path], dict[str, list[Path]]] = {}
        self._readers: list[type[Adapter]] | None = None  # the adapters whose sessions read companions

    def owner(self, cls: type[Adapter], path: Path) -> str | None:
        """``cls.owner_of(path)``, read once."""
        key = (cls, path)
        if key not in self._owners:
            self._owners[key] = cls.owner_of(path)
        return self._owners[key]

    def owned(self, cls: type[Adapter], directory: Path) -> dict[str, list[Path]]:
        """The files in ``directory`` matching ``cls.owned``, by the session their owner names."""
        table = self._owned.get((cls, directory))
        if table is None:
            table = self._owned[(cls, directory)] = {}
            seen: set[Path] = set()
            for pattern in cls.owned:
                for p in directory.glob(pattern):
                    if p not in seen and p.is_file():
                        seen.add(p)
                        owner = self.owner(cls, p)
                        if owner is not None:
                            table.setdefault(owner, []).append(p)
        return table

    def may_be_companion(self, f: Path) -> bool:
        """Whether ``f`` is a companion of another file here for some registered adapter."""
        if self._readers is None:
            self._readers = _reading_companions()
        return any(self.is_companion(f, cls) for cls in self._readers)

    def is_companion(self, f: Path, cls: type[Adapter]) -> bool:
        """Whether ``f`` is read with another session file: an ``owned`` file whose owner
        lies beside it, or a companion of a session file in a folder above it."""
        if any(fnmatch.fnmatch(f.name, pat) for pat in cls.owned):
            owner = self.owner(cls, f)
            if owner is not None and f.parent / f"{owner}.jsonl" in self.files and owner != f.name[: -len(".jsonl")]:
                return True
        if not cls.companions:
            return False
        names = _companion_names(cls)
        if names is not None and not any(fnmatch.fnmatch(f.name, n) for n in names):
            return False  # no pattern ends in a name like this one's
        for d in f.parents:
            beside = self.by_dir.get(d)
            if beside is None:
                continue
            rel = f.relative_to(d).as_posix()
            head = rel.split("/", 1)[0]
            for pat in cls.companions:
                if pat.startswith("{stem}/"):  # the session's name is the first folder: one lookup
                    stems = [head] if head != rel and d / f"{head}.jsonl" in self.files else []
                else:  # any other form: every session file of that folder
                    stems = [o.name[: -len(".jsonl")] for o in beside if o != f]
                if any(fnmatch.fnmatch(rel, pat.format(stem=glob.escape(stem))) for stem in stems):
                    return True
        return False


@contextlib.contextmanager
def folder_pool(jobs: int, roots: Iterable[Path]) -> Iterator[concurrent.futures.ProcessPoolExecutor | None]:
    """``jobs`` worker processes when a folder is among ``roots`` (None for fewer than two
    jobs, or no folder): started before the sessions are found, they detect the folder's
    files (:func:`find_inputs` ``pool=``), then take the work that follows."""
    if jobs < 2 or not any(root.is_dir() for root in roots):
        yield None
        return
    pool = concurrent.futures.ProcessPoolExecutor(max_workers=jobs)
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def find_inputs(
    paths: Iterable[Path],
    *,
    protocol: str | None = None,
    max_line: int = DEFAULT_MAX_LINE,
    pool: concurrent.futures.Executor | None = None,
) -> Iterator[SessionInput | DetectionError]:
    """Every session under ``paths`` (files, or folders searched for ``*.jsonl``, and for
    ``*.json`` documents an adapter reads: :func:`is_document`).

    Files that are companions of a session (a Claude sub-agent transcript) are
    read with it, not as sessions of their own.  A file that cannot be used is
    yielded as its :class:`DetectionError`, naming it, and the rest goes on:
    undetectable, :class:`UnreadableInput` (an OS error), or
    :class:`NotASession` (normalize's own output, a note rather than a failure).
    A path that does not exist is a :class:`UsageError`, raised before anything
    is yielded.

    With ``pool`` (a process pool), the protocols of a folder's files are detected
    by its workers, ahead of the files' turn, in the order found: the same inputs,
    found sooner on several cores.
    """
    roots = list(paths)
    for root in roots:
        if not root.exists() and not root.is_symlink():
            raise UsageError(f"{root}: no such file or directory")
    seen: set[str] = set()  # the stored sessions given (OpenCode's, by id)
    for root in roots:
        if root.is_dir():
            yield from _find_in_folder(root, protocol, max_line, pool, seen)
            continue
        if is_store(root):  # a database of sessions (OpenCode): one input per session
            yield from new_stored(root, seen)
            continue
        try:
            proto = _protocol_of(root, protocol, max_line)
            cls = adapter_class(proto)
        except DetectionError as exc:
            yield exc
            continue
        yield SessionInput(root, proto, _companions(root, cls))


def _detected(path: Path, protocol: str | None, max_line: int) -> str | DetectionError:
    """:func:`_protocol_of`, its error returned (what a worker of ``find_inputs``'s pool runs)."""
    try:
        return _protocol_of(path, protocol, max_line)
    except DetectionError as exc:
        return exc


def detects(path: Path) -> bool:
    """Whether some adapter reads the file (its protocol is detected)."""
    return not isinstance(_detected(path, None, DEFAULT_MAX_LINE), DetectionError)


#: Files a worker of ``find_inputs``'s pool detects at a time.
_DETECT_CHUNK = 32


def is_document(path: Path) -> bool:
    """Whether ``path`` is a ``.json`` file holding one JSON object over several lines (its first
    line a lone ``{``): the form of a stored session some agents write (Gemini CLI before 0.39),
    looked for in folders beside the ``.jsonl`` files."""
    if path.suffix != ".json":
        return False
    try:
        with path.open("rb") as f:
            head = f.read(DOCUMENT_HEAD)
    except OSError:
        return path.is_file()  # reported when read
    return is_document_head(head)


#: The bytes of a file :func:`is_document_head` needs.
DOCUMENT_HEAD = 256


def is_document_head(head: bytes) -> bool:
    """Whether a file's first bytes begin a JSON document over several lines: a lone ``{`` first."""
    first = head.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)
    return len(first) == 2 and first[0].rstrip(b" \t\r") == b"{"


def _find_in_folder(
    root: Path,
    protocol: str | None,
    max_line: int,
    pool: concurrent.futures.Executor | None = None,
    seen: set[str] | None = None,
) -> Iterator[SessionInput | DetectionError]:
    seen = set() if seen is None else seen
    try:
        listing = folder_files(root)
    except OSError as exc:  # a folder that cannot be listed
        yield UnreadableInput(f"{exc.filename or root}: {exc.strerror or exc}")
        return
    for store in listing.stores:
        yield from new_stored(store, seen)
    documents = set(listing.documents)
    files = sorted([*listing.files, *documents])
    folder = _Folder(files)
    candidates = [f for f in files if not is_agent_file(f)]  # the agents' prompt history and indexes: not sessions
    early: set[Path] = set()
    results: Iterator[str | DetectionError] = iter(())
    if pool is not None and protocol is None:
        # detected by the workers, in this order; a file that may be another's companion by its
        # name is detected here in its turn, if still needed (its session, found first, takes it)
        early = {f for f in candidates if not folder.may_be_companion(f)}
        ordered = [f for f in candidates if f in early]
        results = pool.map(_detected, ordered, *_repeat(protocol, max_line), chunksize=_DETECT_CHUNK)
    taken: set[Path] = set()
    for f in candidates:
        found = next(results) if f in early else None  # taken or not: the results follow the files
        if f in taken:
            continue
        if found is None:
            # a forced protocol is not detected, but a JSON document is a session only when that
            # protocol's adapter reads it: Claude Code's sessions-index.json beside its sessions
            # (2.1.20) is an index, no session, whatever protocol is forced
            found = _detected(f, None if f in documents else protocol, max_line)
        if isinstance(found, DetectionError):
            if f not in documents or isinstance(found, UnreadableInput):
                yield found  # (a JSON document no adapter reads, a settings file, is no session: not said)
            continue
        if protocol is not None and found != protocol:  # (a document detected as another protocol)
            continue
        proto = found
        cls = adapter_class(proto)
        if folder.is_companion(f, cls):
            continue
        comps = _companions(f, cls, folder)
        taken.update(comps)
        yield SessionInput(f, proto, comps)

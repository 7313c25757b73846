"""The inputs of a cluster export: listed by the client, opened and detected by the workers.

The client only lists (a folder walk, or one listing call per fsspec URL such as
``s3://``, sizes included) and groups companion files (a Claude transcript's
sub-agents) with their session by the registered adapters' ``companions``
patterns, from the names alone.  The worker that converts an input opens it,
decides whether it is a normalized stream or a native session, and detects the
protocol from its first messages, as :func:`discover` does for a local export:
the client reads no file, so listing a million files costs a listing.  A URL's
``*.json`` files are listed too, unread: the worker reads one as a session when it
holds a JSON document an adapter reads (Gemini CLI's chats before 0.39), and passes
over any other (settings, indexes) without a report, as a local listing does.  fsspec
comes with dask; the file system of a URL's scheme needs its package (``s3fs``,
``gcsfs``, ``adlfs``).
"""

from __future__ import annotations

import fnmatch
import glob
import itertools
import os
import posixpath
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from normalize import (
    DetectionError,
    SessionInput,
    StreamHeader,
    UsageError,
    available,
    detect_protocol,
    events,
    iter_records,
)
from normalize._convert import (
    DOCUMENT_HEAD,
    detects,
    folder_files,
    is_document_head,
    is_store,
    merge_records,
    new_stored,
    sample_records,
)
from normalize._model import _Core
from normalize._places import is_agent_file

from ._tables import unknown_clock
from ._work import decode_lines, is_normalized_head

__all__ = ["Listed", "ListedInput", "is_url", "list_inputs", "listed_events"]


@dataclass(frozen=True)
class Listed:
    """What a listing says of one file: its size, its modification time (ns since the epoch,
    0 when the file system gives none) and, for object stores, its version tag (an ETag)."""

    size: int
    mtime_ns: int = 0
    tag: str = ""


@dataclass(frozen=True)
class ListedInput:
    """One session input as listed: its main file, its companions (paths or URLs), its size in bytes."""

    main: str
    companions: tuple[str, ...] = ()
    protocol: str | None = None
    size: int = 0
    key: str | None = None  # a session inside a database file (OpenCode): read from it, local paths only
    #: what the listing said of the main file and each companion, in that order (empty: nothing known)
    files: tuple[Listed, ...] = ()

    def listed(self) -> list[tuple[str, Listed]] | None:
        """Each file's name with what the listing said of it, or None when it said nothing."""
        names = (self.main, *self.companions)
        return list(zip(names, self.files, strict=True)) if len(self.files) == len(names) else None


def is_url(source: object) -> bool:
    """Whether an input is named by a URL (``scheme://...``) rather than a local path."""
    return isinstance(source, str) and "://" in source


def _import_fsspec() -> Any:
    try:
        import fsspec  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        raise UsageError("URL inputs need fsspec: pip install 'agent-normalize[dask]'") from None
    return fsspec


def _companions(name: str, by_dir: dict[str, list[str]], patterns: list[str]) -> list[str]:
    parent = posixpath.dirname(name)
    base = posixpath.basename(name)
    stem = base[: -len(".jsonl")] if base.endswith(".jsonl") else posixpath.splitext(base)[0]
    found: set[str] = set()
    for pattern in patterns:
        rel = pattern.format(stem=glob.escape(stem))  # the session's name matches itself only
        folder, tail = posixpath.split(rel)
        if any(c in folder for c in "*?["):  # a wildcard folder: every file below the session's folder
            below = (n for d, names in by_dir.items() if d.startswith(parent + "/") for n in names)
            found.update(n for n in below if fnmatch.fnmatch(posixpath.relpath(n, parent), rel))
        else:
            names = by_dir.get(posixpath.join(parent, folder) if folder else parent, [])
            found.update(n for n in names if n != name and fnmatch.fnmatch(posixpath.basename(n), tail))
    return sorted(found)


def _listed(st: os.stat_result) -> Listed:
    return Listed(st.st_size, st.st_mtime_ns)


def _modified_ns(value: Any) -> int:
    """A listing's modification time in ns, from the forms fsspec file systems give it
    (seconds as a number, a ``datetime``, an ISO 8601 string); 0 when there is none."""
    if isinstance(value, bool) or value is None:
        return 0
    if isinstance(value, int | float):
        return round(value * 1_000_000) * 1000
    when: datetime
    if isinstance(value, datetime):
        when = value
    elif isinstance(value, str):
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return 0
    else:
        return 0
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return round(when.timestamp() * 1_000_000) * 1000


def _from_info(info: dict[str, Any]) -> Listed:
    """A file of an fsspec listing: its size, modification time and version tag, where given
    (``mtime``: local and SFTP; ``LastModified`` and ``ETag``: S3; ``updated`` and ``etag``,
    else ``md5Hash``: Google Cloud Storage; ``last_modified`` and ``etag``: Azure)."""
    modified = next((info[k] for k in ("mtime", "LastModified", "last_modified", "updated") if info.get(k)), None)
    tag = next((str(info[k]) for k in ("ETag", "etag", "md5Hash") if info.get(k)), "")
    return Listed(int(info.get("size") or 0), _modified_ns(modified), tag)


def _join_owned(sizes: dict[str, Listed], comps: dict[str, list[str]]) -> None:
    """Files that name their session inside (Claude Code 2.0.x ``agent-*.jsonl``, ``Adapter.owned``)
    join that session, as local discovery joins them.  Only a local file can be asked, so a URL
    listing keeps them as inputs of their own (their rows then count once, as a duplicate)."""
    owners = [cls for cls in available().values() if cls.owned]
    for f in sorted(sizes):
        if is_url(f):
            continue
        base = posixpath.basename(f)
        for cls in owners:
            if not any(fnmatch.fnmatch(base, pat) for pat in cls.owned):
                continue
            owner = cls.owner_of(Path(f))
            session = posixpath.join(posixpath.dirname(f), f"{owner}.jsonl") if owner else None
            if session is not None and session != f and session in comps and f not in comps[session]:
                comps[session].append(f)
            break


def _group(sizes: dict[str, Listed], protocol: str | None, name: Callable[[str], str]) -> list[ListedInput]:
    """Listed files as inputs: each file that is no other file's companion, with its companions."""
    patterns = sorted({p for cls in available().values() for p in cls.companions})
    by_dir: dict[str, list[str]] = {}
    for f in sorted(sizes):
        by_dir.setdefault(posixpath.dirname(f), []).append(f)
    comps = {f: _companions(f, by_dir, patterns) for f in sorted(sizes)}
    _join_owned(sizes, comps)
    taken = {c for cs in comps.values() for c in cs}
    return [
        ListedInput(
            name(f),
            tuple(name(c) for c in comps[f]),
            protocol,
            sizes[f].size + sum(sizes[c].size for c in comps[f]),
            files=(sizes[f], *(sizes[c] for c in comps[f])),
        )
        for f in sorted(sizes)
        if f not in taken
    ]


def list_inputs(source: str | Path, *, protocol: str | None = None) -> list[ListedInput]:
    """The session inputs at a path or URL: the file itself, or every ``*.jsonl`` below the folder,
    and the ``*.json`` session documents (:func:`~normalize._convert.is_document`): in a local
    folder those an adapter reads, below a URL every ``*.json`` file (the worker tells)."""
    if not is_url(source):
        root = Path(source)
        if root.is_dir():
            # the agents' prompt history and indexes are not sessions, as for local discovery
            found = folder_files(root)  # as local discovery finds them
            files = [p for p in found.files if not is_agent_file(p)]
            # a stored session written as one JSON document (Gemini CLI before 0.39), when an adapter reads it
            files += [p for p in found.documents if detects(p)]
            seen: set[str] = set()  # a session two stores hold is listed once, as find_inputs gives it
            stores = [i for db in found.stores for i in _store_inputs(db, seen)]
            return stores + _group({p.as_posix(): _listed(p.stat()) for p in files}, protocol, str)
        if is_store(root):
            return _store_inputs(root)
        if root.is_file():  # a named session file: its companions beside it come along
            stem = root.name[: -len(".jsonl")] if root.name.endswith(".jsonl") else root.stem
            beside = {
                c
                for cls in available().values()
                for pat in cls.companions
                for c in root.parent.glob(pat.format(stem=glob.escape(stem)))
            }
            files = [root, *sorted(c for c in beside if c.is_file())]
            return _group({p.as_posix(): _listed(p.stat()) for p in files}, protocol, str)
        raise UsageError(f"{root}: no such file or directory")
    url = str(source)
    fsspec = _import_fsspec()
    try:
        fs, path = fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as exc:  # no file system for the scheme, or its package missing
        raise UsageError(f"{url}: {exc}") from None
    if fs.isdir(path):
        listing = fs.find(path, detail=True)
        sizes = {
            f: _from_info(info)
            for f, info in listing.items()
            if f.endswith((".jsonl", ".json")) and info.get("type") == "file" and not is_agent_file(Path(f))
        }
    elif fs.isfile(path):
        sizes = {path: _from_info(fs.info(path))}
    else:
        raise UsageError(f"{url}: no such file or folder")
    return _group(sizes, protocol, fs.unstrip_protocol)


def _open(name: str, base: str) -> Any:
    if is_url(name):
        return _import_fsspec().open(name, "rb")
    return open(os.path.join(base, name), "rb")


def _store_inputs(db: Path, seen: set[str] | None = None) -> list[ListedInput]:
    """One input per session of a database file or ``storage/`` folder (those ``seen`` left
    out); the store's size is shared out among them (``size``, to plan the tasks), each listed
    with the whole store (``files``, its stamp)."""
    sessions = list(new_stored(db, set() if seen is None else seen))
    listed = _listed(db.stat())
    size = listed.size // max(len(sessions), 1)
    return [ListedInput(db.as_posix(), (), s.protocol, size, s.key, (listed,)) for s in sessions]


def _document_protocol(spec: ListedInput, base: str) -> str | None:
    """The protocol of a listed ``*.json`` file that is a session document an adapter reads (a
    JSON document over several lines, its protocol given or detected); None for any other."""
    with _open(spec.main, base) as f:
        if not is_document_head(f.read(DOCUMENT_HEAD)):
            return None
        if spec.protocol is not None:
            return spec.protocol
        f.seek(0)
        try:
            return detect_protocol(sample_records(iter_records(f))[1])
        except DetectionError:
            return None


def listed_events(spec: ListedInput, base: str = "") -> Iterator[_Core | StreamHeader]:
    """The normalized events of a listed input, streamed from its file system (on a worker).

    A relative path is taken from ``base`` (the client's working directory).
    """
    if spec.key is not None:  # a session of a database file, read where the worker sees it
        main = Path(spec.main) if Path(spec.main).is_absolute() or not base else Path(base) / spec.main
        session = SessionInput(main, spec.protocol or "", key=spec.key)
        yield from events(session.records(), protocol=spec.protocol, clock=unknown_clock)
        return
    protocol = spec.protocol
    if spec.main.endswith(".json"):
        protocol = _document_protocol(spec, base)
        if protocol is None:
            return  # a JSON file that holds no session (settings, an index): passed over, as a local listing does
    else:
        with _open(spec.main, base) as f:
            head = f.readline(1 << 16)
        if is_normalized_head(head):
            with _open(spec.main, base) as f:
                yield from decode_lines(f, spec.main)
            return

    def records(name: str) -> Iterator[Any]:
        with _open(name, base) as f:
            yield from iter_records(f)

    if protocol is None and spec.companions:  # the protocol says how the session's files are read together
        try:
            protocol = detect_protocol(sample_records(records(spec.main))[1])
        except DetectionError:
            protocol = None
    files = [records(name) for name in (spec.main, *spec.companions)]
    # merged in time order where the adapter interleaves its session's files, as SessionInput does
    merged = merge_records(files, protocol) if protocol else itertools.chain.from_iterable(files)
    yield from events(merged, protocol=protocol, clock=unknown_clock)

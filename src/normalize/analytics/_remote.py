"""Session inputs named by fsspec URLs (``s3://``, ``gs://``, ``file://``...): listed by the client, read by workers.

The client only lists (one listing call per URL, sizes included); the worker that
converts an input opens it, decides whether it is a normalized stream or a native
session, and detects the protocol from its first messages, as :func:`discover`
does for a local file.  Companion files (a Claude transcript's sub-agents) are
found from the listing by the registered adapters' ``companions`` patterns.
fsspec comes with dask; the file system of a scheme needs its package (``s3fs``,
``gcsfs``, ``adlfs``).
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from normalize import StreamHeader, UsageError, available, events, iter_records
from normalize._model import _Core

from ._tables import unknown_clock
from ._work import decode_lines, is_normalized_head

__all__ = ["RemoteInput", "discover_url", "is_url", "remote_events"]


@dataclass(frozen=True)
class RemoteInput:
    """One session input at a URL: its main file, its companions, its size in bytes."""

    main: str
    companions: tuple[str, ...] = ()
    protocol: str | None = None
    size: int = 0


def is_url(source: object) -> bool:
    """Whether an input is named by a URL (``scheme://...``) rather than a local path."""
    return isinstance(source, str) and "://" in source


def _import_fsspec() -> Any:
    try:
        import fsspec  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        raise UsageError("URL inputs need fsspec: pip install 'normalize[dask]'") from None
    return fsspec


def _companions(name: str, by_dir: dict[str, list[str]], patterns: list[str]) -> list[str]:
    parent = posixpath.dirname(name)
    stem = posixpath.basename(name)[: -len(".jsonl")]
    found: set[str] = set()
    for pattern in patterns:
        rel = pattern.format(stem=stem)
        folder, glob = posixpath.split(rel)
        if any(c in folder for c in "*?["):  # a wildcard folder: every file below the session's folder
            below = (n for d, names in by_dir.items() if d.startswith(parent + "/") for n in names)
            found.update(n for n in below if fnmatch.fnmatch(posixpath.relpath(n, parent), rel))
        else:
            names = by_dir.get(posixpath.join(parent, folder) if folder else parent, [])
            found.update(n for n in names if n != name and fnmatch.fnmatch(posixpath.basename(n), glob))
    return sorted(found)


def discover_url(url: str, *, protocol: str | None = None) -> list[RemoteInput]:
    """The session inputs at a URL: the file itself, or every ``*.jsonl`` below the folder, companions joined."""
    fsspec = _import_fsspec()
    try:
        fs, path = fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as exc:  # no file system for the scheme, or its package missing
        raise UsageError(f"{url}: {exc}") from None
    if fs.isdir(path):
        listing = fs.find(path, detail=True)
        sizes = {
            name: int(info.get("size") or 0)
            for name, info in listing.items()
            if name.endswith(".jsonl") and info.get("type") == "file"
        }
    elif fs.isfile(path):
        sizes = {path: int(fs.size(path) or 0)}
    else:
        raise UsageError(f"{url}: no such file or folder")
    patterns = sorted({p for cls in available().values() for p in cls.companions})
    by_dir: dict[str, list[str]] = {}
    for name in sorted(sizes):
        by_dir.setdefault(posixpath.dirname(name), []).append(name)
    comps = {name: _companions(name, by_dir, patterns) for name in sorted(sizes)}
    taken = {c for cs in comps.values() for c in cs}
    return [
        RemoteInput(
            fs.unstrip_protocol(name),
            tuple(fs.unstrip_protocol(c) for c in comps[name]),
            protocol,
            sizes[name] + sum(sizes[c] for c in comps[name]),
        )
        for name in sorted(sizes)
        if name not in taken
    ]


def remote_events(spec: RemoteInput) -> Iterator[_Core | StreamHeader]:
    """The normalized events of a URL input, streamed from its file system (on a worker)."""
    fsspec = _import_fsspec()
    with fsspec.open(spec.main, "rb") as f:
        head = f.readline(1 << 16)
    if is_normalized_head(head):
        with fsspec.open(spec.main, "rb") as f:
            yield from decode_lines(f, spec.main)
        return

    def records() -> Iterator[Any]:
        for url in (spec.main, *spec.companions):
            with fsspec.open(url, "rb") as f:
                yield from iter_records(f)

    yield from events(records(), protocol=spec.protocol, clock=unknown_clock)

"""Where ``normalize convert -o FOLDER/`` writes each session, and what it never writes over.

Rules (docs/reliability.md, "Files and folders"):

* a session's output keeps its path relative to the input folder it was found
  in (``projA/session.jsonl`` -> ``OUT/projA/session.normalized.jsonl``); a named
  file keeps only its name;
* names are unique in a run, compared case-insensitively (macOS and Windows
  file systems do not tell ``A`` from ``a``): a second session that would get a
  taken name gets ``~2``, ``~3``, ... before ``.normalized.jsonl``, and the
  command says so;
* a name longer than the file system allows is cut at a character boundary
  and ends with 8 hex digits of a hash of the whole name, so two long names
  stay distinct;
* a file is written over only when it is normalize's own output (its first line
  a ``stream.header``) or empty, and never when this run reads it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from ._errors import UsageError
from ._registry import is_stream_header

__all__ = ["InputFiles", "OutputNames", "is_normalized_file", "may_write_over", "same_file"]

_SUFFIX = ".normalized.jsonl"
#: The longest file name (bytes) most file systems take, when the system does not say.
NAME_MAX = 255


def is_normalized_file(path: Path) -> bool:
    """Whether ``path`` starts with a ``stream.header`` line (an output of normalize)."""
    try:
        with path.open("rb") as f:
            head = f.read(1 << 16)
    except OSError:
        return False
    return is_normalized_head(head)


def is_normalized_head(head: bytes) -> bool:
    """Whether content starting with ``head`` is a normalized stream: its first non-blank line a ``stream.header``."""
    first = head.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0].rstrip(b"\r")
    return is_stream_header(first)


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name the same file (also through links and case-insensitive names)."""
    try:
        return a.samefile(b)
    except OSError:
        return a.resolve() == b.resolve()


class InputFiles:
    """The files a run reads, to tell at once whether a path names one of them, as
    :func:`same_file` would with each: a run over thousands of sessions asks it for every
    output it writes over.  Iterating gives the paths."""

    def __init__(self, paths: Iterable[Path]) -> None:
        self.paths = list(paths)
        self._files: set[tuple[int, int]] = set()  # (device, inode) of each input that has one
        self._unread: set[Path] = set()  # the resolved paths of the others
        for p in self.paths:
            try:
                st = p.stat()
            except OSError:
                self._unread.add(p.resolve())
            else:
                self._files.add((st.st_dev, st.st_ino))
        self._resolved: set[Path] | None = None

    def __iter__(self) -> Iterator[Path]:
        return iter(self.paths)

    def __contains__(self, path: object) -> bool:
        if not isinstance(path, Path):
            return False
        try:
            st = path.stat()
        except OSError:  # compared by name, with every input
            if self._resolved is None:
                self._resolved = {p.resolve() for p in self.paths}
            return path.resolve() in self._resolved
        return (st.st_dev, st.st_ino) in self._files or (bool(self._unread) and path.resolve() in self._unread)


def may_write_over(path: Path, inputs: Iterable[Path]) -> str | None:
    """Why ``path`` must not be written, or None when it may be."""
    if not path.exists():
        return None
    if path.is_dir():
        return f"{path} is a folder"
    if path in inputs if isinstance(inputs, InputFiles) else any(same_file(path, inp) for inp in inputs):
        return f"{path} is one of the inputs"
    if path.stat().st_size == 0 or is_normalized_file(path):
        return None
    return f"{path} exists and is not normalize output"


def _name_max(folder: Path) -> int:
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        return NAME_MAX


def _stem(name: str) -> str:
    for suffix in (".tap.jsonl", ".jsonl", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _fit(stem: str, tail: str, limit: int) -> str:
    """``stem + tail``, the stem cut (with a hash of it) when the name's UTF-8 exceeds ``limit`` bytes."""
    name = stem + tail
    if len(name.encode()) <= limit:
        return name
    mark = "-" + hashlib.sha256(stem.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    room = max(limit - len((mark + tail).encode()), 1)
    cut = stem.encode("utf-8", "surrogateescape")[:room].decode("utf-8", "ignore")
    return cut + mark + tail


class OutputNames:
    """Unique output paths under one folder for a run; :attr:`notes` says each rename."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._taken: set[str] = set()
        self.notes: list[str] = []

    def path_for(self, relative: Path) -> Path:
        """The output path of the session whose input is ``relative`` to its root."""
        parent = self.folder / relative.parent
        if ".." in relative.parts or relative.is_absolute():
            raise UsageError(f"{relative}: not a relative path inside the input")
        limit = _name_max(self.folder)
        stem = _stem(relative.name)
        n = 1
        while True:
            tail = _SUFFIX if n == 1 else f"~{n}{_SUFFIX}"
            name = _fit(stem, tail, limit)
            out = parent / name
            key = str(out.relative_to(self.folder)).casefold()
            if key not in self._taken:
                break
            n += 1
        self._taken.add(key)
        if n > 1:
            self.notes.append(f"{relative}: {parent / _fit(stem, _SUFFIX, limit)} is taken in this run; wrote {out}")
        elif name != stem + _SUFFIX:
            self.notes.append(f"{relative}: the name is too long for the file system; wrote {out}")
        return out

"""Where a viewer's sessions come from: native files and folders, or normalized JSONL."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from normalize import DetectionError, InputError, Record, SessionInput, StreamHeader, decode, events, find_inputs
from normalize._outputs import is_normalized_file

from ._build import Builder, SessionView, unknown_clock

__all__ = ["Input", "discover", "is_normalized", "read"]


def is_normalized(path: Path) -> bool:
    """Whether a file is a normalized stream (its first line a ``stream.header``)."""
    return is_normalized_file(path)


@dataclass
class Input:
    """One input file: native (with its protocol and companion files) or normalized."""

    main: Path
    protocol: str | None = None  # None: a normalized stream
    companions: list[Path] = field(default_factory=list)
    key: str | None = None  # a session inside a database file (OpenCode)

    @property
    def paths(self) -> list[Path]:
        return [self.main, *self.companions]

    def records(self) -> Iterator[Record]:
        """The native records: the files' lines, or the session's rows in a database."""
        assert self.protocol is not None
        return SessionInput(self.main, self.protocol, self.companions, key=self.key).records()


def discover(source: Path, protocol: str | None = None) -> Iterator[Input | InputError]:
    """The inputs under ``source`` (a file or a folder); an unreadable file as its error."""
    if source.is_file() and is_normalized(source):
        yield Input(source)
        return
    normalized: set[Path] = set()
    if source.is_dir():
        for p in sorted(source.rglob("*.jsonl")):
            if p.is_file() and is_normalized(p):
                normalized.add(p)
                yield Input(p)
    for inp in find_inputs([source], protocol=protocol):
        if isinstance(inp, DetectionError):
            if not any(inp.message.startswith(f"{p}:") for p in normalized):
                yield inp
        elif inp.main not in normalized:
            yield Input(inp.main, inp.protocol, list(inp.companions), inp.key)


def _normalized(path: Path) -> Iterator[object]:
    with path.open("rb") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                ev = decode(line)
            except InputError as exc:
                raise InputError(f"{path}:{lineno}: {exc.message}") from None
            if not isinstance(ev, StreamHeader):
                yield ev


def read(inp: Input) -> list[SessionView]:
    """The sessions of one input, built from its normalized events."""
    if inp.protocol is None:
        stream: Iterator[object] = _normalized(inp.main)
    else:
        stream = iter(events(inp.records(), protocol=inp.protocol, clock=unknown_clock))
    return list(Builder().feed_all(stream).sessions.values())

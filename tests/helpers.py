"""Test helpers, in one place: captures, a fixed clock, conversion to bytes, chunked feeding."""

from __future__ import annotations

import functools
import importlib.machinery
import itertools
import random
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from normalize import (
    CaptureParser,
    Record,
    SessionEvent,
    SessionUpdate,
    encode,
    find_inputs,
)
from normalize import events as _events
from normalize._codec import encode_header
from normalize._convert import is_store, merge_records, store_inputs, store_records
from normalize._model import _Core

ROOT = Path(__file__).resolve().parent.parent
ADAPTERS = ROOT / "adapters"
GOLDEN = ROOT / "golden"

#: Every test converts with this clock, so events without a native or capture time are stable.
FIXED_NOW = 1767225600.0  # 2026-01-01T00:00:00Z


def compiled(module: ModuleType) -> bool:
    """Whether a module is an extension module: one the compiled build compiled
    (docs/performance.md, "The compiled build")."""
    return (getattr(module, "__file__", None) or "").endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def fixed_clock() -> float:
    return FIXED_NOW


def capture_files() -> list[Path]:
    """Every capture under adapters/<protocol>/captures/ that is a session's main file."""
    return list(_capture_files())


@functools.cache
def _capture_files() -> tuple[Path, ...]:
    # found once per test process: a score of test modules parametrize over the captures
    out: list[Path] = []
    for proto_dir in sorted(p for p in ADAPTERS.iterdir() if (p / "captures").is_dir()):
        for inp in find_inputs([proto_dir / "captures"], protocol=proto_dir.name):
            assert not isinstance(inp, Exception), inp
            out.append(inp.main)
    return tuple(out)


#: Captures of deliberately broken input (adapters/<protocol>/captures/edge-cases/).
EDGE_CASES = "edge-cases"


def session_captures() -> list[Path]:
    """The captures of whole sessions as agents write them: every capture but the edge cases.

    Tests that compare a relay, a replay or analytics totals with the agent's own numbers
    use these; the edge cases are for the reading and translating tests.
    """
    return [c for c in capture_files() if EDGE_CASES not in c.relative_to(ADAPTERS).parts]


def in_versions(folder: str, listed: Iterable[str]) -> bool:
    """Whether a captures folder (``claude-code-2.1.20``) is one of ``listed``: an entry
    ending in "." names a family (``claude-code-1.``: every 1.x), any other one version
    exactly (``claude-code-2.1.20`` is not 2.1.200)."""
    return any(folder.startswith(v) if v.endswith(".") else folder == v for v in listed)


def capture_id(capture: Path) -> str:
    """A capture's test id: its path inside adapters/."""
    return capture.relative_to(ADAPTERS).as_posix()


def protocol_of(capture: Path) -> str:
    return capture.relative_to(ADAPTERS).parts[0]


def on_both_backends(captures: Iterable[Path]) -> list[Any]:
    """Parameters ``(anyio_backend, capture)``: every capture on asyncio, and on trio the first
    capture of each protocol in each shape (a lines file, a folder, a database, a JSON
    document). What the backend changes is the I/O around an adapter, not what the
    adapter reads: one capture of each shape per protocol exercises trio's side of it, where
    running all of them again would double these tests' time for no case of their own."""
    params: list[Any] = []
    seen: set[tuple[str, str]] = set()
    for c in captures:
        params.append(pytest.param("asyncio", c, id=f"asyncio-{capture_id(c)}"))
        shape = (protocol_of(c), "folder" if c.is_dir() else c.suffix if c.suffix in (".db", ".json") else "file")
        if shape not in seen:
            seen.add(shape)
            params.append(pytest.param("trio", c, id=f"trio-{capture_id(c)}"))
    return params


def golden_path(capture: Path) -> Path:
    """adapters/P/captures/REL -> golden/P/REL (same file name)."""
    rel = capture.relative_to(ADAPTERS)
    golden = GOLDEN / rel.parts[0] / Path(*rel.parts[2:])
    # a database, an OpenCode storage/ folder, or a JSON document (a session over several
    # lines): its golden is JSONL all the same
    if golden.suffix in (".db", ".json") or capture.is_dir():
        return golden.with_name(golden.name + ".jsonl")
    return golden


def companions(capture: Path) -> list[Path]:
    (inp,) = [i for i in find_inputs([capture], protocol=protocol_of(capture)) if not isinstance(i, Exception)]
    return inp.paths


def records_chunked(data: bytes, cuts: Iterable[int]) -> Iterator[Record]:
    """Parse ``data`` fed in pieces cut at the given offsets."""
    parser = CaptureParser()
    prev = 0
    for cut in sorted(set(cuts)):
        yield from parser.feed(data[prev:cut])
        prev = cut
    yield from parser.feed(data[prev:])
    yield from parser.close()


def file_bytes(path: Path) -> bytes:
    """A capture file's bytes; a session database's: its sessions' row records, one a line."""
    if is_store(path):
        rows = (rec for inp in store_inputs(path) for rec in store_records(path, inp.key or ""))
        return b"".join(rec.data + b"\n" for rec in rows)
    return path.read_bytes()


def records_of(
    paths: list[Path], cuts_per_file: int = 0, seed: int = 0, protocol: str | None = None
) -> Iterator[Record]:
    """The records of a session's files, each parsed in pieces; merged in time order as
    ``SessionInput.records()`` merges them when ``protocol``'s adapter interleaves them."""
    rng = random.Random(seed)
    files: list[list[Record]] = []
    for p in paths:
        data = file_bytes(p)
        cuts = [rng.randrange(len(data) + 1) for _ in range(cuts_per_file)] if data else []
        files.append(list(records_chunked(data, cuts)))
    if protocol is None:
        return itertools.chain.from_iterable(files)
    return merge_records(files, protocol)


def convert_records(records: Iterable[Record], protocol: str, **kw: object) -> list[_Core]:
    return list(_events(records, protocol=protocol, clock=fixed_clock, **kw))  # type: ignore[arg-type]


def native_payloads(events: Iterable[_Core]) -> list[bytes]:
    """The native messages the events keep, in order (``native.protocol`` "core", what
    normalize said itself, left out; a message that was not UTF-8 is kept as text)."""
    out: list[bytes] = []
    for e in events:
        if isinstance(e, SessionEvent) and e.event.native.protocol != "core":
            payload = e.event.native.payload
        elif isinstance(e, SessionUpdate):
            payload = e.update.payload
        else:
            continue
        out.append(payload.encode() if isinstance(payload, str) else bytes(payload))
    return out


def to_jsonl(events: Iterable[_Core], *, input: str | None = None, protocol: str | None = None) -> str:
    lines = [encode_header(library_version="test", input=input, protocol=protocol)]
    lines.extend(encode(e) for e in events)
    return b"".join(line + b"\n" for line in lines).decode()


def convert_capture(capture: Path, cuts_per_file: int = 0, seed: int = 0) -> list[_Core]:
    protocol = protocol_of(capture)
    return convert_records(records_of(companions(capture), cuts_per_file, seed, protocol), protocol)


def golden_text(capture: Path) -> str:
    rel = capture.relative_to(ROOT).as_posix()
    return to_jsonl(convert_capture(capture), input=rel, protocol=protocol_of(capture))

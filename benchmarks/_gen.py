"""Large native sessions made from the real captures of each adapter's kit.

A protocol's stream repeats its captures (``adapters/<protocol>/captures/**``)
copy after copy; every copy gets fresh ids and times, so nothing an adapter
keys on (uuids, ``toolu_``/``msg_``/``call_`` ids, JSON-RPC ids, session ids)
repeats from one copy to the next.  The ids of tool calls and items (the
prefixed ones) are fresh for every file of a copy too: captures recorded against
the same scripted server share ids such as ``toolu_01FAKE000000000000000001``,
which one real session never repeats.  Session ids (uuids) stay per copy, so a
protocol that carries several sessions on one connection opens as many sessions
per copy as its captures name.  Only captures of the protocol's majority
format (tap or plain) are used, because a file is one or the other; the
``edge-cases`` folders (deliberately broken input) and lines that are not JSON
are left out, so that every path measured reads the same valid lines.

Each capture line is cut once into literal pieces and id-like tokens; a copy
is the pieces joined with the tokens rewritten for that copy (cached per copy),
so generating a line costs a ``join`` and a few dict look-ups.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parent.parent
#: the kits whose captures the sessions are made of: this tree's, or those of another
#: revision (``run.py --mix REV`` extracts them and names their folder here, so that the
#: processes it starts read them too)
MIX_ENV = "NORMALIZE_BENCH_KITS"
CAPTURES = Path(os.environ.get(MIX_ENV) or ROOT / "adapters")

#: uuids; prefixed ids (Anthropic, OpenAI, Codex items, Gemini's tool ids); RFC 3339 dates; JSON-RPC ids.
_TOKEN = re.compile(
    rb"(?P<uuid>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
    rb"|(?P<pre>\b(?:toolu|srvtoolu|msg|call|req|item|fc|resp|rs)_(?:[A-Za-z0-9]{4,}|[A-Za-z]*\d[A-Za-z0-9]*)"
    rb"|(?<=_)\d{13}_\d+)"  # short ids with a digit (item_0, never a key such as call_id); Gemini's tool_<ms>_<n>
    rb"|(?P<date>\b\d{4}-\d\d-\d\d)(?=T\d\d:\d\d)"
    rb'|(?P<rpc>"id":\d+(?=[,}]))'
)
_KINDS = ("uuid", "pre", "date", "rpc")
_json = msgspec.json.Decoder(msgspec.Raw)


def _is_json(line: bytes) -> bool:
    try:
        _json.decode(line)
    except msgspec.DecodeError:
        return False
    return True


@dataclass(frozen=True)
class Template:
    """One protocol's captures, cut into pieces: per line, its literal head, its
    ``(kind, token, literal)`` triples and the index of its file."""

    protocol: str
    fmt: str  # "tap" or "plain"
    files: tuple[str, ...]
    lines: tuple[tuple[bytes, tuple[tuple[int, bytes, bytes], ...], int], ...]
    native_bytes: int

    @property
    def size(self) -> int:
        return len(self.lines)


def _files(protocol: str) -> tuple[str, list[Path]]:
    found = sorted(
        p
        for p in (CAPTURES / protocol / "captures").rglob("*.jsonl")
        if p.is_file() and "edge-cases" not in p.parts  # deliberately broken input, not sessions
    )
    taps = [p for p in found if p.name.endswith(".tap.jsonl")]
    plain = [p for p in found if not p.name.endswith(".tap.jsonl")]
    return ("tap", taps) if len(taps) >= len(plain) else ("plain", plain)


def protocols() -> list[str]:
    """The protocols with captures of lines (opencode-db's captures are databases: not measured here)."""
    return sorted(p.name for p in CAPTURES.iterdir() if (p / "captures").is_dir() and _files(p.name)[1])


def load(protocol: str) -> Template:
    fmt, paths = _files(protocol)
    lines: list[tuple[bytes, tuple[tuple[int, bytes, bytes], ...], int]] = []
    total = 0
    for index, path in enumerate(paths):
        for raw in path.read_bytes().splitlines():
            if not raw.strip() or not _is_json(raw):
                continue
            total += len(raw) + 1
            parts: list[tuple[int, bytes, bytes]] = []
            pos = 0
            head = b""
            for m in _TOKEN.finditer(raw):
                kind = _KINDS.index(m.lastgroup or "")
                literal = raw[pos : m.start()]
                if parts:
                    k, tok, _ = parts[-1]
                    parts[-1] = (k, tok, literal)
                else:
                    head = literal
                parts.append((kind, m.group(), b""))
                pos = m.end()
            tail = raw[pos:] + b"\n"
            if parts:
                k, tok, _ = parts[-1]
                parts[-1] = (k, tok, tail)
            else:
                head = raw[pos:] + b"\n"
            lines.append((head, tuple(parts), index))
    return Template(protocol, fmt, tuple(str(p.relative_to(CAPTURES.parent)) for p in paths), tuple(lines), total)


def _rewrite(kind: int, token: bytes, copy: int, ids: int) -> bytes:
    """``token`` in copy ``copy``, in a file whose prefixed ids are numbered ``ids`` (0: as captured)."""
    if kind == 0:  # uuid: a bijection on the last 12 hex digits
        tail = (int(token[-12:], 16) + copy * 0x9E3779B97F) % (1 << 48)
        return token[:-12] + b"%012x" % tail
    if kind == 1:  # prefixed id: a suffix per file and copy (still [A-Za-z0-9])
        return token + b"c%x" % ids if ids else token
    if kind == 2:  # a date: one day later per copy (the time of day is kept)
        d = date.fromordinal(date.fromisoformat(token.decode()).toordinal() + copy)
        return d.isoformat().encode()
    return b'"id":%d' % (int(token[5:]) + copy * 1_000_000)  # JSON-RPC id


def rewritten(data: bytes, copy: int, ids: int, cache: dict[tuple[int, bytes], bytes]) -> bytes:
    """``data`` (a whole file, or a file's name) with every id-like token as copy ``copy``
    has it (:func:`_rewrite`); ``cache`` holds the copy's tokens, one per copy."""

    def one(m: re.Match[bytes]) -> bytes:
        key = (_KINDS.index(m.lastgroup or ""), m.group())
        if key not in cache:
            cache[key] = _rewrite(key[0], key[1], copy, ids)
        return cache[key]

    return _TOKEN.sub(one, data)


def lines(template: Template, n: int) -> Iterator[bytes]:
    """``n`` native lines (each ending in a newline): copy after copy of the captures."""
    copy = 0
    produced = 0
    files = 1 + max((f for _, _, f in template.lines), default=0)
    while True:
        cache: dict[tuple[int, bytes, int], bytes] = {}
        for head, parts, f in template.lines:
            if produced >= n:
                return
            produced += 1
            ids = copy * files + f
            if ids == 0 or not parts:
                yield head + b"".join(tok + lit for _, tok, lit in parts)
                continue
            out = [head]
            for kind, tok, lit in parts:
                key = (kind, tok, f)
                new = cache.get(key)
                if new is None:
                    new = cache[key] = _rewrite(kind, tok, copy, ids)
                out.append(new)
                out.append(lit)
            yield b"".join(out)
        copy += 1


def blob(template: Template, n: int, max_bytes: int) -> tuple[bytes, int]:
    """At most ``n`` lines and ``max_bytes`` bytes, joined; returns the bytes and the line count."""
    out: list[bytes] = []
    size = 0
    for line in lines(template, n):
        if size + len(line) > max_bytes and out:
            break
        out.append(line)
        size += len(line)
    return b"".join(out), len(out)


class Stream:
    """A read-only binary stream of generated lines, produced as it is read (bounded memory)."""

    def __init__(self, template: Template, n: int) -> None:
        self._it = lines(template, n)
        self._buf = bytearray()
        self.bytes = 0

    def read(self, size: int = -1) -> bytes:
        buf = self._buf
        while size < 0 or len(buf) < size:
            line = next(self._it, None)
            if line is None:
                break
            buf += line
        if size < 0 or size >= len(buf):
            out = bytes(buf)
            buf.clear()
        else:
            out = bytes(buf[:size])
            del buf[:size]
        self.bytes += len(out)
        return out

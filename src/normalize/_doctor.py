"""The drift report: what the adapters did not translate in a corpus of native files.

``normalize doctor PATH...`` reads a user's stored sessions (``~/.claude/projects``,
``~/.codex/sessions``) or recordings exactly as ``normalize convert`` would, and
reports, per agent and agent version:

* **untranslated**: native messages kept as ``session.update`` (the adapter had
  no body for them), grouped by protocol and native method/type;
* **errors**: ``error`` events, grouped by ``errorType`` (a malformed line, an
  API error the agent reported, a stream cut off);
* **fallbacks**: events normalize had to make up (``native.protocol: "core"``:
  a turn start that no message gave, an open call settled at the end) and
  warnings from source ``normalize``;
* **inferred**: what the adapters worked out that the files did not write (older
  agent versions): turn starts and ends inferred by their turn rules, and each
  sub-agent, linked to the tool call that spawned it or left without one;
* the files no adapter recognised.

Each entry names one example location, ``file:line`` (the line of the native
file, or ``end`` for what was settled when the input ended), so a bug report
"my sessions show X" turns into the few lines that make a new capture.

The report only reads; the command exits 0 whatever it finds.  Files it could
not read, and normalize's own outputs found among the inputs, are listed
apart at the end.
"""

from __future__ import annotations

import argparse
import sys
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, TextIO

import msgspec
from msgspec import Raw, Struct

from ._convert import SessionInput, events, find_inputs, iter_records, merge_records
from ._errors import DetectionError, NotASession, UnreadableInput
from ._lines import DEFAULT_MAX_LINE, Message, Record
from ._model import (
    Error,
    EventEnvelope,
    SessionCreated,
    SessionEvent,
    SessionResumed,
    SessionUpdate,
    Subagent,
    ToolCall,
    TurnComplete,
    TurnStart,
    _Core,
)
from ._model import (
    Warning as WarningBody,
)
from ._places import inputs_or_defaults
from ._progress import Progress
from ._term import json_for_terminal, printable

__all__ = [
    "DoctorReport",
    "Entry",
    "Example",
    "Group",
    "Skipped",
    "add_doctor_command",
    "diagnose",
    "format_text",
]

#: How much of an example message the JSON report keeps: enough to recognise it,
#: short enough that a report stays readable when pasted into an issue.
EXCERPT_CHARS = 300

#: How many recent messages the report can still place by their bytes: far more
#: than a Session ever holds back before announcing its session.
REMEMBERED = 4096


class Example(Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Where an entry was first seen: a file and its 1-based line (None: the end of the input)."""

    path: str
    line: int | None = None
    excerpt: str | None = None

    def where(self) -> str:
        return f"{self.path}:{self.line if self.line is not None else 'end'}"


class Entry(Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One kind of finding: its protocol, its name (method, errorType or kind), how often."""

    protocol: str
    name: str
    count: int
    example: Example
    message: str | None = None


class Group(Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """Everything found for one agent version."""

    agent: str
    version: str | None
    protocols: list[str]
    sessions: int
    files: int
    messages: int
    untranslated: list[Entry]
    errors: list[Entry]
    fallbacks: list[Entry]
    inferred: list[Entry] = msgspec.field(default_factory=list)


class Skipped(Struct, frozen=True, kw_only=True):
    """A file that was not read as a session: why, and which kind of reason.

    ``kind`` is ``unrecognised`` (no adapter recognised it), ``unreadable`` (an
    OS error while reading it) or ``normalized`` (normalize's own output).
    """

    path: str
    reason: str
    kind: str = "unrecognised"


class DoctorReport(Struct, frozen=True, kw_only=True):
    groups: list[Group]
    skipped: list[Skipped]


# ---------------------------------------------------------------- collecting


class _Tally:
    """Counts per (protocol, name), remembering the first example of each."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], int] = {}
        self.examples: dict[tuple[str, str], tuple[Example, str | None]] = {}

    def add(self, protocol: str, name: str, example: Example, message: str | None = None) -> None:
        key = (protocol, name)
        self.counts[key] = self.counts.get(key, 0) + 1
        self.examples.setdefault(key, (example, message))

    def merge(self, other: _Tally) -> None:
        for key, n in other.counts.items():
            self.counts[key] = self.counts.get(key, 0) + n
            self.examples.setdefault(key, other.examples[key])

    def entries(self) -> list[Entry]:
        order = sorted(self.counts, key=lambda k: (-self.counts[k], k))
        return [
            Entry(
                protocol=k[0],
                name=k[1],
                count=self.counts[k],
                example=self.examples[k][0],
                message=self.examples[k][1],
            )
            for k in order
        ]


class _Cursor:
    """Yields a session's records and finds the line an event came from.

    An event that carries its native message is placed by that message: the
    cursor remembers where each recent message was read (by a hash of its
    bytes, for the last :data:`REMEMBERED` messages), since a Session may hold
    messages back and emit their events later.  An event without one (made up
    by normalize) is placed at the record last read, or at the end of the input
    once the records are exhausted, where ``close()`` settles what was left
    open.
    """

    def __init__(self, inp: SessionInput, max_line: int) -> None:
        self.inp = inp
        self.max_line = max_line
        self.path = str(inp.main)
        self.line: int | None = None
        self.messages = 0
        self._seen: OrderedDict[int, tuple[str, int]] = OrderedDict()

    def records(self) -> Iterator[Record]:
        for path, rec in self._tagged():
            self.path = path
            self.line = rec.line
            if isinstance(rec, Message):
                self.messages += 1
                self._remember(rec.data)
                if not rec.data.isascii():  # what an error event carries of a line not UTF-8: its text
                    self._remember(rec.data.decode("utf-8", errors="replace").encode())
            else:  # a line that never became a message: its event carries the kept head
                self._remember((rec.error.kept or "").encode())
            yield rec
        self.path, self.line = str(self.inp.main), None

    def _tagged(self) -> Iterator[tuple[str, Record]]:
        """Each record with the file it was read from, in the order ``convert`` reads them
        (a session's files merged in time order where the adapter interleaves them); a
        session of a database: its rows, counted as lines."""
        if self.inp.key is not None:
            where = f"{self.inp.main}#{self.inp.key}"
            yield from ((where, rec) for rec in self.inp.records())
            return
        source: dict[int, str] = {}  # a record read ahead by the merge -> its file

        def read(path: Path) -> Iterator[Record]:
            with path.open("rb") as f:
                for rec in self._read(f, path):
                    source[id(rec)] = str(path)
                    yield rec

        for rec in merge_records([read(p) for p in self.inp.paths], self.inp.protocol):
            yield source.pop(id(rec)), rec

    def _read(self, f: BinaryIO, path: Path) -> Iterator[Record]:
        """The file's records; an OS error while reading names the file."""
        try:
            yield from iter_records(f, max_line=self.max_line)
        except OSError as exc:
            exc.filename = exc.filename or str(path)
            raise

    def _remember(self, data: bytes) -> None:
        key = hash(data)
        if key not in self._seen:
            self._seen[key] = (self.path, self.line or 0)
            if len(self._seen) > REMEMBERED:
                self._seen.popitem(last=False)

    def here(self, payload: object = None) -> Example:
        data = bytes(payload) if isinstance(payload, Raw) else payload.encode() if isinstance(payload, str) else None
        found = self._seen.get(hash(data)) if data is not None else None
        if found is not None:
            return Example(path=found[0], line=found[1], excerpt=_excerpt(payload))
        return Example(path=self.path, line=self.line, excerpt=_excerpt(payload))


def _excerpt(payload: object) -> str | None:
    if isinstance(payload, Raw):
        text = bytes(payload).decode("utf-8", errors="replace")
    elif isinstance(payload, str):
        text = payload
    else:
        return None
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + "…"


class _SessionFindings:
    def __init__(self, inp: SessionInput) -> None:
        self.inp = inp
        self.agent: str | None = None
        self.version: str | None = None
        self.messages = 0
        self.untranslated = _Tally()
        self.errors = _Tally()
        self.fallbacks = _Tally()
        self.inferred = _Tally()
        #: sub-agents seen (with where first), and the main thread's tool call ids
        self.subagents: dict[str, Example] = {}
        self.calls: set[str] = set()

    def finish(self) -> None:
        """Each sub-agent: linked to the main thread's call that spawned it, or not."""
        for sub, where in self.subagents.items():
            name = "sub-agent linked to its call" if sub in self.calls else "sub-agent without a parent call"
            self.inferred.add(self.inp.protocol, name, where, None if sub in self.calls else sub)

    def note_record(self, ev: SessionCreated | SessionResumed) -> None:
        rec = ev.record
        if rec.agent and rec.agent != "unknown":
            self.agent = rec.agent
        if rec.agent_version:
            self.version = rec.agent_version
        elif rec.via:  # reached through a bridge of unknown agent version: the bridge's version drifts
            self.version = f"via {rec.via} {rec.via_version or 'version unknown'}"


def _look(ev: _Core, found: _SessionFindings, cur: _Cursor) -> None:
    """File one CoreEvent under the finding it is, if any."""
    if isinstance(ev, SessionCreated | SessionResumed):
        found.note_record(ev)
    elif isinstance(ev, SessionUpdate):
        up = ev.update
        found.untranslated.add(up.protocol, up.method or "(no method)", cur.here(up.payload))
    elif isinstance(ev, SessionEvent):
        env = ev.event
        body = env.body
        native = env.native
        if found.agent is None and env.agent and env.agent != "unknown":
            found.agent = env.agent
        _note_inferred(env, found, cur)
        if isinstance(body, Error):
            found.errors.add(native.protocol, body.error_type or "(none)", cur.here(native.payload), body.message)
        elif native.protocol == "core" or (isinstance(body, WarningBody) and body.source == "normalize"):
            why = f"{env.kind} ({native.method})" if native.method else env.kind
            message = body.message if isinstance(body, WarningBody) else None
            found.fallbacks.add(native.protocol, why, cur.here(native.payload), message)


#: why the Session itself made up a turn start or end (not an adapter's inference)
_SESSION_SETTLED = frozenset({"close", "turn-start-while-open", "turn-complete-without-start"})


def _note_inferred(env: EventEnvelope, found: _SessionFindings, cur: _Cursor) -> None:
    body = env.body
    native = env.native
    if isinstance(body, ToolCall) and env.subagent_id is None:
        found.calls.add(body.call_id)
    sub = body.subagent_id if isinstance(body, Subagent) else env.subagent_id
    if sub is not None and sub not in found.subagents:
        found.subagents[sub] = cur.here(native.payload)
    if native.protocol != "core" or native.method in _SESSION_SETTLED:
        return
    if isinstance(body, TurnComplete):
        found.inferred.add(found.inp.protocol, f"turn end inferred ({body.reason})", cur.here(native.payload))
    elif isinstance(body, TurnStart):
        found.inferred.add(found.inp.protocol, "turn start inferred", cur.here(native.payload))


def _diagnose_one(inp: SessionInput, max_line: int) -> _SessionFindings:
    found = _SessionFindings(inp)
    cur = _Cursor(inp, max_line)
    for ev in events(cur.records(), protocol=inp.protocol):
        _look(ev, found, cur)
    found.messages = cur.messages
    found.finish()
    return found


class _GroupAcc:
    def __init__(self, agent: str, version: str | None) -> None:
        self.agent = agent
        self.version = version
        self.protocols: set[str] = set()
        self.sessions = 0
        self.files = 0
        self.messages = 0
        self.untranslated = _Tally()
        self.errors = _Tally()
        self.fallbacks = _Tally()
        self.inferred = _Tally()

    def add(self, s: _SessionFindings) -> None:
        self.protocols.add(s.inp.protocol)
        self.sessions += 1
        self.files += len(s.inp.paths)
        self.messages += s.messages
        self.untranslated.merge(s.untranslated)
        self.errors.merge(s.errors)
        self.fallbacks.merge(s.fallbacks)
        self.inferred.merge(s.inferred)

    def freeze(self) -> Group:
        return Group(
            agent=self.agent,
            version=self.version,
            protocols=sorted(self.protocols),
            sessions=self.sessions,
            files=self.files,
            messages=self.messages,
            untranslated=self.untranslated.entries(),
            errors=self.errors.entries(),
            fallbacks=self.fallbacks.entries(),
            inferred=self.inferred.entries(),
        )


def diagnose(
    paths: Iterable[Path],
    *,
    protocol: str | None = None,
    max_line: int = DEFAULT_MAX_LINE,
    progress: Callable[[int, int], None] | None = None,
) -> DoctorReport:
    """The drift report for every session under ``paths`` (files or folders).

    A file that cannot be read is listed in ``skipped`` (kind ``unreadable``) and
    the rest is still read; ``progress(done, total)`` is called after each session.
    """
    groups: dict[tuple[str, str], _GroupAcc] = {}
    skipped: list[Skipped] = []
    found_inputs = list(find_inputs(paths, protocol=protocol, max_line=max_line))
    total = sum(1 for i in found_inputs if not isinstance(i, DetectionError))
    done = 0
    for inp in found_inputs:
        if isinstance(inp, DetectionError):
            skipped.append(Skipped(path=_path_of(inp), reason=inp.message, kind=_kind(inp)))
            continue
        try:
            found = _diagnose_one(inp, max_line)
        except OSError as exc:
            where = exc.filename or str(inp.main)
            skipped.append(Skipped(path=str(where), reason=f"{where}: {exc.strerror or exc}", kind="unreadable"))
            continue
        finally:
            done += 1
            if progress is not None:
                progress(done, total)
        agent = found.agent or "unknown"
        key = (agent, found.version or "")
        acc = groups.get(key)
        if acc is None:
            acc = groups[key] = _GroupAcc(agent, found.version)
        acc.add(found)
    return DoctorReport(groups=[groups[k].freeze() for k in sorted(groups)], skipped=skipped)


def _kind(exc: DetectionError) -> str:
    if isinstance(exc, NotASession):
        return "normalized"
    if isinstance(exc, UnreadableInput):
        return "unreadable"
    return "unrecognised"


def _path_of(exc: DetectionError) -> str:
    # find_inputs names the file first in a folder's DetectionError: "<path>: <why>"
    head, sep, _ = exc.message.partition(": ")
    return head if sep else "?"


# ---------------------------------------------------------------- output


def format_text(report: DoctorReport) -> str:
    """The report for a person: one section per agent version, the biggest counts first.

    Every name, version, path and message comes from the input, so each goes
    through :func:`normalize._term.printable`: no escape sequence reaches the terminal.
    """
    p = printable
    out: list[str] = []
    sessions = sum(g.sessions for g in report.groups)
    out.append(f"normalize doctor: {sessions} session(s), {len(report.groups)} agent version(s)")
    for g in report.groups:
        out.append("")
        version = p(g.version) if g.version else "version unknown"
        out.append(
            f"{p(g.agent)} {version}  ({', '.join(p(x) for x in g.protocols)}): "
            f"{g.sessions} session(s), {g.files} file(s), {g.messages} native message(s)"
        )
        for title, entries, unit in (
            ("untranslated (kept as session.update)", g.untranslated, "message(s)"),
            ("errors", g.errors, "event(s)"),
            ("fallbacks (made up by normalize)", g.fallbacks, "event(s)"),
            ("inferred (turn rules, sub-agent links)", g.inferred, "time(s)"),
        ):
            total = sum(e.count for e in entries)
            if not entries:
                out.append(f"  {title}: none")
                continue
            out.append(f"  {title}: {total} {unit} of {len(entries)} kind(s)")
            labels = [f"{p(e.protocol)} {p(e.name)}" for e in entries]
            width = max(len(label) for label in labels)
            for e, label in zip(entries, labels, strict=True):
                line = f"    {e.count:>6}  {label:<{width}}  {p(e.example.where())}"
                if e.message:
                    line += f"  {_one_line(e.message)}"
                out.append(line)
    for kind, title in (
        ("unrecognised", "not recognised"),
        ("unreadable", "could not be read"),
        ("normalized", "normalize output, not read"),
    ):
        these = [s for s in report.skipped if s.kind == kind]
        if these:
            out.append("")
            out.append(f"{title}: {len(these)} file(s)")
            out.extend(f"  {p(s.reason)}" for s in these)
    return "\n".join(out) + "\n"


def _one_line(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return printable(repr(flat if len(flat) <= limit else flat[:limit] + "…"))


_json = msgspec.json.Encoder()


def format_json(report: DoctorReport) -> bytes:
    """The report as JSON; what JSON leaves raw of terminal controls (C1, bidi marks) escaped too."""
    return json_for_terminal(msgspec.json.format(_json.encode(report), indent=2)) + b"\n"


# ---------------------------------------------------------------- command line


def cmd_doctor(args: argparse.Namespace, out: TextIO | None = None) -> int:
    stream = out if out is not None else sys.stdout
    paths = inputs_or_defaults(args.inputs)
    with Progress("normalize: reading", 0) as bar:
        report = diagnose(paths, protocol=args.protocol, max_line=args.max_line, progress=bar.update)
    if args.json:
        stream.write(format_json(report).decode())
    else:
        stream.write(format_text(report))
    return 0


def add_doctor_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``doctor`` to the CLI's subcommands; its handler is ``args.func``."""
    d = subparsers.add_parser(
        "doctor",
        help="report what the adapters did not translate in native files (drift report)",
        description=(__doc__ or "").splitlines()[0],
    )
    d.add_argument(
        "inputs", nargs="*", metavar="PATH", help="files or folders (default: the agents' own, as stats reads them)"
    )
    d.add_argument("--json", action="store_true", help="the report as JSON, for machines")
    d.add_argument("--protocol", "-p", help="skip detection and read every input as this protocol")
    d.add_argument(
        "--max-line",
        type=int,
        default=DEFAULT_MAX_LINE,
        metavar="BYTES",
        help="longest line accepted (default 16 MiB)",
    )
    d.set_defaults(func=cmd_doctor)
    return d

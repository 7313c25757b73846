"""The ``normalize`` command line (its help, ``normalize --help``, is written for a person: see _DESCRIPTION).

Exit codes: 0 done; 1 some input could not be read, detected or validated (the
rest was still processed); 2 the command was used wrongly.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import io
import itertools
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from ._codec import encode_header
from ._convert import NormalizedLines, SessionInput, find_inputs, folder_pool, iter_records, sample_records
from ._errors import DetectionError, InputError, NormalizeError, NotASession, UnreadableInput, UsageError
from ._lines import DEFAULT_MAX_LINE, Record
from ._outputs import InputFiles, OutputNames, _stem, may_write_over
from ._places import inputs_or_defaults
from ._progress import Progress
from ._registry import adapter_class, available, detect_protocol
from ._term import json_for_terminal, printable
from ._version import __version__, describe_build

if TYPE_CHECKING:
    from ._redact import Redactor

__all__ = ["main"]


def _say(message: str, bar: Progress | None = None) -> None:
    if bar is not None:
        bar.clear()
    print(f"normalize: {printable(message)}", file=sys.stderr)


def _write_session(
    records: Iterable[Record],
    protocol: str,
    name: str,
    out: BinaryIO | _SessionFiles,
    args: argparse.Namespace,
    redactor: Redactor | None,
) -> bool:
    """Write one input's normalized stream; whether any native message was translated.

    ``out`` is one stream, or (a folder output) :class:`_SessionFiles`: a file per session
    when the input carries several (a connection multiplexing ACP sessions or Codex threads).
    """
    plain: BinaryIO | None = None  # a stream written a batch at a time (no line routed, filtered or escaped)
    write: Callable[[bytes], object]
    if isinstance(out, _SessionFiles):
        header = encode_header(library_version=__version__, input=name, protocol=protocol) + b"\n"
        out.header = header
        write = out.write
    else:
        stream = out
        write = stream.write
        if stream.isatty():  # a person reads it: no raw C1 or bidi control from the input (JSON escapes the rest)

            def write(data: bytes) -> object:
                return stream.write(json_for_terminal(data))

        elif redactor is None:
            plain = stream
        write(encode_header(library_version=__version__, input=name, protocol=protocol) + b"\n")
    lines = NormalizedLines(records, protocol=protocol, strict=args.strict, origin=args.origin)
    if plain is not None:
        for chunk in lines.chunks():
            if chunk:
                plain.write(chunk)
        return lines.recognised
    for batch in lines:
        if redactor is None:
            for line in batch:
                write(line + b"\n")
        else:  # deltas may be held back to find a secret cut across them
            for line in batch:
                for held in redactor.feed(line):
                    write(held + b"\n")
    if redactor is not None:
        for held in redactor.flush():
            write(held + b"\n")
    return lines.recognised


_SESSION_ID = re.compile(rb'^\{"type":"[^"]*","sessionId":"([^"]*)"')


class _SessionFiles:
    """A folder output's files for one input: the first session at ``path``, each other session
    of the same input (one connection carrying several) beside it, named after its id.

    Every line of normalize's output starts ``{"type":...,"sessionId":...}``, which routes it;
    each file starts with the input's header line.
    """

    def __init__(self, path: Path, names: OutputNames, relative: Path) -> None:
        self.header = b""
        self.paths: list[Path] = []
        self._first = path
        self._names = names
        self._relative = relative
        self._files: dict[bytes, BinaryIO] = {}
        self._current: BinaryIO | None = None

    def write(self, data: bytes) -> None:
        m = _SESSION_ID.match(data)
        if m is not None:
            f = self._files.get(m.group(1))
            if f is None:
                f = self._open(m.group(1))
            self._current = f
        elif self._current is None:
            self._current = self._open(b"")
        self._current.write(data)

    def _open(self, sid: bytes) -> BinaryIO:
        if not self.paths:
            path = self._first
        else:
            rel = self._relative.with_name(f"{_stem(self._relative.name)}.{sid.decode(errors='replace')}.jsonl")
            path = self._names.path_for(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        f = path.open("wb")
        f.write(self.header)
        self.paths.append(path)
        self._files[sid] = f
        return f

    def close(self) -> None:
        if not self.paths:  # an input that gave no event still gets its file (the header alone)
            self._open(b"")
        for f in self._files.values():
            f.close()


class _Item:
    """One unit of a convert run: a session on disk, or standard input."""

    def __init__(self, inp: SessionInput | None, relative: Path) -> None:
        self.inp = inp
        self.relative = relative

    @property
    def name(self) -> str:
        return str(self.inp.main) if self.inp is not None else "-"


def _stdin_records(args: argparse.Namespace) -> tuple[str, Iterator[Record]]:
    """Standard input's records and protocol (detected from its first messages unless forced)."""
    records = iter_records(sys.stdin.buffer, max_line=args.max_line)
    if args.protocol is not None:
        adapter_class(args.protocol)
        return args.protocol, records
    head, sample = sample_records(records)
    if not sample:
        raise DetectionError("-: empty input, nothing to detect")
    try:
        protocol = detect_protocol(sample)
    except DetectionError as exc:
        raise type(exc)(f"-: {exc.message}") from None
    return protocol, itertools.chain(head, records)


class _Tally:
    def __init__(self) -> None:
        self.converted = 0
        self.failed = 0
        self.skipped = 0
        self.notes = 0

    def line(self, what: str) -> str:
        parts = [f"{self.converted} session(s) {what}"]
        if self.skipped:
            parts.append(f"{self.skipped} file(s) not recognised")
        if self.failed:
            parts.append(f"{self.failed} could not be read or written")
        if self.notes:
            parts.append(f"{self.notes} normalized stream(s) left as they are")
        return ", ".join(parts)


def _gather(args: argparse.Namespace, tally: _Tally, pool: concurrent.futures.Executor | None = None) -> list[_Item]:
    """Every session to convert, in order; what cannot be converted is told now.

    With ``pool``, a folder's files are detected by its workers (:func:`find_inputs`)."""
    items: list[_Item] = []
    for name in args.inputs:
        if name == "-":
            items.append(_Item(None, Path("stdin")))
            continue
        root = Path(name)
        for inp in find_inputs([root], protocol=args.protocol, max_line=args.max_line, pool=pool):
            if isinstance(inp, NotASession):
                tally.notes += 1  # in a folder, earlier outputs are counted in the summary, not listed
                if not root.is_dir():
                    _say(f"left as is: {inp.message}")
            elif isinstance(inp, UnreadableInput):
                tally.failed += 1
                _say(inp.message)
            elif isinstance(inp, DetectionError):
                tally.skipped += 1
                _say(f"skipped: {inp.message}")
            else:
                rel = inp.main.relative_to(root) if root.is_dir() else Path(inp.main.name)
                if inp.key is not None:  # a session of a database: named by its id, in a folder named after it
                    rel = rel.parent / rel.stem / f"{inp.key}.jsonl"
                items.append(_Item(inp, rel))
    return items


def _input_paths(args: argparse.Namespace, items: Sequence[_Item]) -> list[Path]:
    paths = [Path(n) for n in args.inputs if n != "-" and Path(n).is_file()]
    for item in items:
        if item.inp is not None:
            paths += item.inp.paths
    return paths


def cmd_convert(args: argparse.Namespace) -> int:
    if args.follow:
        from ._cli_live import follow_cmd

        return follow_cmd(args)
    if args.protocol is not None:
        adapter_class(args.protocol)  # an unknown name is a usage error before anything is read
    if args.inputs.count("-") > 1:
        raise UsageError("standard input (-) can be read once")
    if not args.inputs:  # the agents' own folders, into a folder
        if args.output is None or not (Path(args.output).is_dir() or args.output.endswith(("/", os.sep))):
            raise UsageError("give files or folders to convert, or -o DIR/ to convert the agents' default folders")
        args.inputs = [str(p) for p in inputs_or_defaults([])]
    redactor = _redactor(args)
    tally = _Tally()
    # the workers of --jobs start first when a folder is given: they detect its files
    with folder_pool(_jobs_asked(args), [Path(n) for n in args.inputs if n != "-"]) as pool:
        return _convert_all(args, redactor, tally, pool)


def _jobs_asked(args: argparse.Namespace) -> int:
    """``--jobs``, or all cores when not given."""
    return args.jobs if args.jobs is not None else (os.cpu_count() or 1)


def _convert_all(
    args: argparse.Namespace,
    redactor: Redactor | None,
    tally: _Tally,
    pool: concurrent.futures.ProcessPoolExecutor | None,
) -> int:
    items = _gather(args, tally, pool)
    inputs = InputFiles(_input_paths(args, items))
    names: OutputNames | None = None
    out_file: BinaryIO = sys.stdout.buffer
    if args.output is not None:
        target = Path(args.output)
        if target.is_dir() or args.output.endswith(("/", os.sep)):  # a folder: one file per session
            target.mkdir(parents=True, exist_ok=True)
            names = OutputNames(target)
        else:
            folders = [Path(n) for n in args.inputs if n != "-" and Path(n).is_dir()]
            why = may_write_over(target, inputs) if target in inputs else None
            if why is None and target.exists() and any(_inside(target, f) for f in folders):
                why = may_write_over(target, [])
            if why is not None:
                raise UsageError(f"will not write over an input: {why}")
            out_file = target.open("wb")
    jobs = _jobs(args, items, redactor, out_file if names is None else None)
    try:
        with Progress("normalize: converting", len(items)) as bar, _Workers(jobs, pool) as workers:
            # sessions are converted a few groups ahead by the workers; each is written and told in order
            for item, work in zip(items, workers.plan(items, args, names, inputs), strict=True):
                try:
                    if work is None:
                        _convert_item(item, args, redactor, names, out_file, inputs, tally, bar)
                    else:
                        _converted(item, args, work, workers, out_file, names, tally, bar)
                except BrokenPipeError:  # the reader went away (`| head`): stop quietly
                    raise
                except OSError as exc:
                    tally.failed += 1
                    _say(f"{exc.filename or item.name}: {exc.strerror or exc}", bar)
                except InputError as exc:
                    if args.strict:
                        raise
                    tally.skipped += 1
                    _say(f"skipped: {exc.message}", bar)
                bar.step()
        if names is not None:
            for note in names.notes:
                _say(note)
    finally:
        if out_file is not sys.stdout.buffer:
            out_file.close()
        else:
            out_file.flush()
    if redactor is not None and redactor.counts:
        _say(f"redacted {redactor.summary()}")
    if tally.converted == 0 and not tally.failed:
        _say("no session found in the input")
        return 1
    if len(args.inputs) > 1 or names is not None or any(Path(n).is_dir() for n in args.inputs if n != "-"):
        where = f" into {names.folder}" if names is not None else ""
        _say(tally.line(f"converted{where}"))
    return 1 if tally.failed or tally.skipped else 0


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def _convert_item(
    item: _Item,
    args: argparse.Namespace,
    redactor: Redactor | None,
    names: OutputNames | None,
    out_file: BinaryIO,
    inputs: Iterable[Path],
    tally: _Tally,
    bar: Progress,
) -> None:
    if item.inp is None:
        protocol, records = _stdin_records(args)
    else:
        protocol, records = item.inp.protocol, item.inp.records(max_line=args.max_line)
    if names is None:
        recognised = _write_session(records, protocol, item.name, out_file, args, redactor)
    else:
        path = names.path_for(item.relative)
        why = may_write_over(path, inputs)
        if why is not None:
            tally.failed += 1
            _say(f"{item.name}: not written: {why}", bar)
            return
        files = _SessionFiles(path, names, item.relative)
        try:
            recognised = _write_session(records, protocol, item.name, files, args, redactor)
        finally:
            files.close()
        tally.converted += len(files.paths) - 1  # one file per session of the input
    tally.converted += 1
    _warn_unrecognised(item, args, recognised, bar)


def _warn_unrecognised(item: _Item, args: argparse.Namespace, recognised: bool, bar: Progress) -> None:
    if args.protocol is not None and not recognised:
        _say(
            f"warning: {item.name}: no message was recognised as {args.protocol} (each kept as session.update "
            f"or error); is it that protocol? `normalize detect` says which it looks like",
            bar,
        )


def _jobs(args: argparse.Namespace, items: Sequence[_Item], redactor: Redactor | None, out: BinaryIO | None) -> int:
    """How many worker processes convert the sessions: 1 (this process) unless several can share the work.

    Standard input, redaction (one tally of what was redacted), ``--strict`` (it stops at
    the first bad input, in order) and a terminal as output (escaped line by line) stay in
    this process.
    """
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    jobs = _jobs_asked(args)
    if jobs < 2 or len(items) < 2 or redactor is not None or args.strict or any(i.inp is None for i in items):
        return 1
    if out is not None and out.isatty():
        return 1
    return min(jobs, len(items))


#: A worker's output comes back in memory when its inputs are smaller than this, else in a file.
_IN_MEMORY = 1 << 20
#: Sessions go to workers in groups of about this much input at most (small ones travel together).
_GROUP_MAX = 4 << 20
#: Groups given to the workers ahead of the one being written, per worker: the outputs held
#: in memory stay bounded (a few groups), whatever the number of sessions.
_AHEAD = 2

#: One session's result from a worker: recognised, the output (unless written to its own
#: file), the error that stopped it (raised in its turn, after what was written before it).
_Result = tuple[bool, bytes | None, BaseException | None]


class _Work:
    """A session given to a worker: which group, which place in it, where its output goes."""

    def __init__(self, group: int | None, index: int, path: Path | None, why: str | None = None) -> None:
        self.group = group  # None: not converted (see why)
        self.index = index
        self.path = path  # its own file (-o DIR/), or a temporary file for a large output, or None
        self.why = why  # why it is not written (an existing file that is not normalize output)


class _Workers:
    """``convert --jobs N``: the sessions converted on N worker processes.

    Sessions go to the workers in groups of consecutive inputs (one large session alone,
    small ones together, so that a worker's start costs less than its work).  A worker
    writes a session's output to its own file with ``-o DIR/`` (named here, in input
    order, as one process names them), else gives it back (in memory, or in a temporary
    file when large), and :func:`_converted` writes it to the output in input order; so
    the output is the one a single process writes.  An input that may carry several
    sessions (a connection: ACP, Codex app-server) names its extra files as it goes, so
    with ``-o DIR/`` it is converted in this process, in its turn.
    """

    def __init__(self, jobs: int, pool: concurrent.futures.ProcessPoolExecutor | None = None) -> None:
        self.jobs = jobs
        self._given = pool  # workers started before (they detected the files): used, not shut down here
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._options: dict[str, Any] = {}
        self._groups: list[list[tuple[SessionInput, str, Path | None]]] = []
        self._futures: dict[int, concurrent.futures.Future[list[_Result]]] = {}
        self._left: list[int] = []  # per group, its sessions not yet written
        self._submitted = 0

    def __enter__(self) -> _Workers:
        if self.jobs > 1:
            self._tmp = tempfile.TemporaryDirectory(prefix="normalize-convert-")
            self._pool = self._given or concurrent.futures.ProcessPoolExecutor(max_workers=self.jobs)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None and self._pool is not self._given:
            self._pool.shutdown(wait=True, cancel_futures=True)
        if self._tmp is not None:
            self._tmp.cleanup()

    def plan(
        self, items: Sequence[_Item], args: argparse.Namespace, names: OutputNames | None, inputs: Iterable[Path]
    ) -> list[_Work | None]:
        """Each item's work (None: converted in this process), in groups started as they are needed."""
        out: list[_Work | None] = [None] * len(items)
        if self._pool is None or self._tmp is None:
            return out
        sizes = [_size(i.inp) if i.inp is not None else 0 for i in items]
        limit = min(max(sum(sizes) // (self.jobs * 8), 1 << 18), _GROUP_MAX)
        self._options = {"strict": args.strict, "origin": args.origin, "max_line": args.max_line}
        group: list[tuple[SessionInput, str, Path | None]] = []
        held = 0

        def start() -> None:
            if group:
                self._groups.append(list(group))
                self._left.append(len(group))
                group.clear()

        for n, (item, size) in enumerate(zip(items, sizes, strict=True)):
            inp = item.inp
            if inp is None:
                continue
            path: Path | None = None
            if names is not None:
                if adapter_class(inp.protocol).routing is not None:
                    continue  # converted here, in its turn
                path = names.path_for(item.relative)
                why = may_write_over(path, inputs)
                if why is not None:
                    out[n] = _Work(None, 0, path, why)
                    continue
            elif size >= _IN_MEMORY:
                path = Path(self._tmp.name) / f"{n}.jsonl"
            if group and held + size > limit:
                start()
                held = 0
            out[n] = _Work(len(self._groups), len(group), path)
            group.append((inp, item.name, path))
            held += size
        start()
        return out

    def result(self, work: _Work) -> _Result:
        """A session's result, waited for; the groups after it given to the workers meanwhile."""
        assert self._pool is not None
        assert work.group is not None
        ahead = work.group + _AHEAD * self.jobs
        while self._submitted < len(self._groups) and self._submitted <= ahead:
            self._futures[self._submitted] = self._pool.submit(
                _convert_group, self._groups[self._submitted], self._options
            )
            self._submitted += 1
        result = self._futures[work.group].result()[work.index]
        self._left[work.group] -= 1
        if not self._left[work.group]:  # its outputs are written: let them go
            del self._futures[work.group]
            self._groups[work.group] = []
        return result


def _size(inp: SessionInput) -> int:
    try:
        return sum(p.stat().st_size for p in inp.paths)
    except OSError:
        return 0  # reported when it is read


def _convert_group(group: list[tuple[SessionInput, str, Path | None]], options: dict[str, Any]) -> list[_Result]:
    """In a worker: sessions converted one after the other, each into its file or into memory."""
    args = argparse.Namespace(strict=options["strict"], origin=options["origin"])
    results: list[_Result] = []
    for inp, name, path in group:
        recognised = False
        error: BaseException | None = None
        data: bytes | None = None
        try:
            records = inp.records(max_line=options["max_line"])
            if path is None:
                buf = io.BytesIO()
                try:
                    recognised = _write_session(records, inp.protocol, name, buf, args, None)
                finally:
                    data = buf.getvalue()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                with path.open("wb") as f:
                    recognised = _write_session(records, inp.protocol, name, f, args, None)
        except (OSError, InputError) as exc:  # told in its turn, as one process tells it
            error = exc
        results.append((recognised, data, error))
    return results


def _converted(
    item: _Item,
    args: argparse.Namespace,
    work: _Work,
    workers: _Workers,
    out: BinaryIO,
    names: OutputNames | None,
    tally: _Tally,
    bar: Progress,
) -> None:
    """A worker's session, in its turn: its output written to ``out`` (unless it has its own file), and told."""
    if work.group is None:
        tally.failed += 1
        _say(f"{item.name}: not written: {work.why}", bar)
        return
    recognised, data, error = workers.result(work)
    # what was written before an error too, as one process writes it
    if data is not None:
        out.write(data)
    elif names is None and work.path is not None and work.path.exists():
        with work.path.open("rb") as f:
            shutil.copyfileobj(f, out, 1 << 20)
        work.path.unlink()
    if error is not None:
        raise error
    tally.converted += 1
    _warn_unrecognised(item, args, recognised, bar)


def cmd_tap(args: argparse.Namespace) -> int:
    from ._cli_live import cmd_tap

    return cmd_tap(args)


def cmd_replay(args: argparse.Namespace) -> int:
    from ._cli_live import cmd_replay

    return cmd_replay(args)


def cmd_detect(args: argparse.Namespace) -> int:
    status = 0
    for inp in find_inputs([Path(p) for p in args.inputs], max_line=args.max_line):
        if isinstance(inp, NotASession):
            print(f"normalize: {printable(inp.message)}", file=sys.stderr)
            continue
        if isinstance(inp, DetectionError):
            print(f"normalize: {printable(inp.message)}", file=sys.stderr)
            status = 1
            continue
        extra = f" (+{len(inp.companions)} companion files)" if inp.companions else ""
        where = str(inp.main) if inp.key is None else f"{inp.main}#{inp.key}"  # a session of a database
        print(f"{printable(where)}\t{printable(inp.protocol)}{extra}")
    return status


def cmd_schema(args: argparse.Namespace) -> int:
    from ._schema import json_schema

    print(json.dumps(json_schema(), indent=2, sort_keys=True))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from ._schema import validate_stream

    count = 0
    for name in args.inputs:
        try:
            with sys.stdin.buffer if name == "-" else open(name, "rb") as f:
                for problem in validate_stream(f, max_line=args.max_line):
                    count += 1
                    print(f"{printable(name)}: {printable(problem)}")
        except BrokenPipeError:
            raise
        except OSError as exc:
            count += 1
            print(f"normalize: {printable(name)}: {exc.strerror or exc}", file=sys.stderr)
    if count:
        print(f"normalize: {count} problem(s)", file=sys.stderr)
        return 1
    return 0


def cmd_adapters(args: argparse.Namespace) -> int:
    for name, cls in sorted(available().items()):
        print(f"{printable(name)}\t{printable(f'{cls.__module__}.{cls.__qualname__}')}")
    return 0


_DESCRIPTION = """\
Read what AI coding agents write (Claude Code, Codex, Gemini CLI, OpenCode, ACP
agents, Antigravity, hm), live or from their session files, as one stream of typed
events: the same JSON lines whatever the agent, ready for your app, a log, or a
database."""

_EPILOG = """\
examples:
  normalize convert ~/.claude/projects/PROJECT/SESSION.jsonl     one session as normalized JSONL
  normalize convert ~/.codex/sessions -o out/                    a folder: one file per session
  normalize stats ~/.claude/projects ~/.codex/sessions           tokens, cost, tools per agent and model
  normalize tap --events - -- codex app-server                   run an agent and watch its events
  normalize doctor ~/.claude/projects                            what normalize did not understand

Run "normalize COMMAND --help" for a command's options.
Exit codes: 0 done; 1 some input could not be read or detected (the rest was
processed); 2 the command was used wrongly.
Docs: README.md and docs/ (events, live use, analytics, reliability)."""

_REDACT_HELP = "scrub API keys, tokens, passwords and private keys (needs the redact extra)"


def _redactor(args: argparse.Namespace) -> Redactor | None:
    """The redactor ``--redact`` asks for, or None; every command's (its module compiles its
    rules: imported only when asked for)."""
    if not getattr(args, "redact", False):
        return None
    from ._redact import Redactor

    return Redactor()


class _Version(argparse.Action):
    """``--version``: the version and the build, found only when asked for."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        sys.stdout.write(f"normalize {__version__} ({describe_build()})\n")
        parser.exit()


#: The commands this module defines.  A command line naming one of them builds a parser
#: without the other modules' commands (doctor, stats, export, otel, show, run): importing
#: those modules costs about 60 ms, a third of a short ``normalize convert``.
_OWN_COMMANDS = frozenset({"convert", "tap", "replay", "detect", "schema", "validate", "adapters"})


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: every command's, or, for ``command`` one of
    :data:`_OWN_COMMANDS`, only this module's (the same parser for that command)."""
    p = argparse.ArgumentParser(
        prog="normalize",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action=_Version, help="show the version and the build (pure Python or compiled)")
    sub = p.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument(
            "--max-line",
            type=int,
            default=DEFAULT_MAX_LINE,
            metavar="BYTES",
            help="longest line accepted (default 16 MiB)",
        )

    c = sub.add_parser("convert", help="native captures or session files -> normalized JSONL")
    c.add_argument(
        "inputs",
        nargs="*",
        metavar="PATH",
        help="files or folders; - reads standard input (with -o DIR/ and none: the agents' folders)",
    )
    c.add_argument("--protocol", "-p", help="skip detection and read the input as this protocol")
    c.add_argument(
        "-o", "--output", help="output file, or folder (an existing one, or ending in /) for one file per session"
    )
    c.add_argument(
        "--redact",
        action="store_true",
        help="scrub API keys, tokens, passwords and private keys (needs the redact extra)",
    )
    c.add_argument("--strict", action="store_true", help="stop at the first bad input instead of reporting it")
    c.add_argument(
        "--jobs",
        "-j",
        type=int,
        metavar="N",
        help="worker processes converting sessions side by side (default: all cores; 1 converts in this process)",
    )
    c.add_argument("--origin", choices=["live", "replay"], help="override the origin of every event")
    c.add_argument(
        "--follow",
        action="store_true",
        help="keep reading one session file as the agent appends to it (stop with Ctrl-C or --idle-timeout)",
    )
    c.add_argument("--poll", type=float, default=0.1, metavar="SECONDS", help="with --follow: time between looks")
    c.add_argument(
        "--idle-timeout", type=float, metavar="SECONDS", help="with --follow: stop after this long without new bytes"
    )
    common(c)
    c.set_defaults(func=cmd_convert)

    t = sub.add_parser(
        "tap",
        help="run an agent, relaying its stdio untouched, and record/normalize the conversation",
        description="Run AGENT_COMMAND with stdin, stdout and stderr passed through byte for byte; "
        "the exit code is the agent's (128+N if killed by signal N).",
    )
    t.add_argument("--protocol", "-p", help="the agent's protocol (default: detected from the first lines)")
    t.add_argument("--record", metavar="FILE.tap.jsonl", help="write the tap recording of both directions")
    t.add_argument(
        "--events",
        metavar="FILE.jsonl|-",
        help="write normalized events there as they happen; - is stderr (use /dev/fd/N for another descriptor)",
    )
    t.add_argument(
        "--redact",
        action="store_true",
        help="scrub API keys, tokens, passwords and private keys (needs the redact extra)",
    )
    t.add_argument("agent", nargs=argparse.REMAINDER, metavar="-- AGENT_COMMAND...")
    common(t)
    t.set_defaults(func=cmd_tap)

    r = sub.add_parser("replay", help="re-emit a recording or stored session with origin replay, at its pace")
    r.add_argument("input", metavar="FILE", help="a tap recording, native capture or stored session file")
    r.add_argument("--protocol", "-p", help="skip detection and read the input as this protocol")
    r.add_argument("--speed", type=float, default=1.0, help="pace multiplier (2 = twice as fast, 0 = no pauses)")
    r.add_argument("--from-seq", type=int, default=0, metavar="N", help="resume after the event with seq N")
    r.add_argument("-o", "--output", type=Path, help="output file (default stdout)")
    r.add_argument("--strict", action="store_true", help="stop at the first bad input instead of reporting it")
    r.add_argument(
        "--redact",
        action="store_true",
        help="scrub API keys, tokens, passwords and private keys (needs the redact extra)",
    )
    common(r)
    r.set_defaults(func=cmd_replay)

    d = sub.add_parser("detect", help="print the protocol of each input")
    d.add_argument("inputs", nargs="+", metavar="PATH")
    common(d)
    d.set_defaults(func=cmd_detect)

    s = sub.add_parser("schema", help="print the JSON Schema of normalized stream lines")
    s.set_defaults(func=cmd_schema)

    v = sub.add_parser("validate", help="check a normalized JSONL stream: schema and envelope rules")
    v.add_argument("inputs", nargs="+", metavar="FILE", help="normalized JSONL files, - for stdin")
    common(v)
    v.set_defaults(func=cmd_validate)

    if command not in _OWN_COMMANDS:
        from ._doctor import add_doctor_command
        from .analytics._cli import add_commands as add_analytics_commands

        add_analytics_commands(sub)

        add_doctor_command(sub)

        from ._show._cli import add_show_command

        add_show_command(sub)

        from ._drive._cli import add_run_command

        add_run_command(sub)

    a = sub.add_parser("adapters", help="list the registered adapters")
    a.set_defaults(func=cmd_adapters)
    return p


def _leaf(exc: BaseException) -> BaseException:
    """The one exception inside task-group wrappers (anyio raises ExceptionGroups), else ``exc``."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    given = list(argv)
    tail: list[str] | None = None
    if argv[:1] == ["run"] and "--" in argv:  # run's options may follow AGENT; what follows -- is the agent's
        cut = argv.index("--")
        argv, tail = argv[:cut], argv[cut + 1 :]
    args = _parser(argv[0] if argv else None).parse_args(argv)
    if tail is not None:
        args.rest = tail
    args.argv = given  # as typed (run --show runs itself again without --show)
    try:
        return int(args.func(args))
    except BaseExceptionGroup as group:
        exc = _leaf(group)
        if not isinstance(exc, NormalizeError | OSError):
            raise
        return _report(exc)
    except (NormalizeError, OSError) as exc:
        return _report(exc)


def _report(exc: NormalizeError | OSError) -> int:
    """Print what went wrong, for a person."""
    if isinstance(exc, UsageError):
        print(f"normalize: {printable(exc)}", file=sys.stderr)
        return 2
    if isinstance(exc, InputError):
        print(f"normalize: {printable(exc.message)}", file=sys.stderr)
        return 1
    if isinstance(exc, BrokenPipeError):
        return 0
    if isinstance(exc, OSError):
        where = f"{printable(exc.filename)}: " if exc.filename else ""
        print(f"normalize: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"normalize: {printable(exc)}", file=sys.stderr)  # any other library error
    return 1

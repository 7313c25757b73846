"""The ``normalize`` command line.

Exit codes: 0 done; 1 some input could not be read, detected or validated (the
rest was still processed); 2 the command was used wrongly.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from ._codec import encode, encode_header
from ._convert import SessionInput, events, find_inputs
from ._errors import DetectionError, InputError, NormalizeError, UsageError
from ._lines import DEFAULT_MAX_LINE
from ._redact import Redactor
from ._registry import available
from ._version import __version__

__all__ = ["main"]


def _convert_one(inp: SessionInput, out: BinaryIO, args: argparse.Namespace, redactor: Redactor | None) -> None:
    out.write(encode_header(library_version=__version__, input=str(inp.main), protocol=inp.protocol) + b"\n")
    for ev in events(
        inp.records(max_line=args.max_line),
        protocol=inp.protocol,
        strict=args.strict,
        origin=args.origin,
    ):
        line = encode(ev)
        out.write((redactor.redact(line) if redactor is not None else line) + b"\n")


def _out_path(out_dir: Path, inp: SessionInput) -> Path:
    name = inp.main.name if inp.key is None else inp.key  # a session of a database: its id
    for suffix in (".tap.jsonl", ".jsonl"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return out_dir / f"{name}.normalized.jsonl"


def cmd_convert(args: argparse.Namespace) -> int:
    if args.follow:
        from ._cli_live import follow_cmd

        return follow_cmd(args)
    status = 0
    redactor = Redactor() if args.redact else None
    out_dir: Path | None = None
    out_file: BinaryIO = sys.stdout.buffer
    if args.output is not None:
        if Path(args.output).is_dir() or args.output.endswith("/"):  # a folder: one file per session
            out_dir = Path(args.output)
            out_dir.mkdir(parents=True, exist_ok=True)
        else:
            out_file = Path(args.output).open("wb")  # noqa: SIM115 - closed below
    try:
        found = 0
        for inp in find_inputs([Path(p) for p in args.inputs], protocol=args.protocol, max_line=args.max_line):
            if isinstance(inp, DetectionError):
                print(f"normalize: skipped: {inp.message}", file=sys.stderr)
                status = 1
                continue
            found += 1
            if out_dir is not None:
                with _out_path(out_dir, inp).open("wb") as f:
                    _convert_one(inp, f, args, redactor)
            else:
                _convert_one(inp, out_file, args, redactor)
        if found == 0:
            print("normalize: no session found in the input", file=sys.stderr)
            status = 1
        if redactor is not None and redactor.counts:
            print(f"normalize: redacted {redactor.summary()}", file=sys.stderr)
    finally:
        if out_file is not sys.stdout.buffer:
            out_file.close()
        else:
            out_file.flush()
    return status


def cmd_tap(args: argparse.Namespace) -> int:
    from ._cli_live import cmd_tap

    return cmd_tap(args)


def cmd_replay(args: argparse.Namespace) -> int:
    from ._cli_live import cmd_replay

    return cmd_replay(args)


def cmd_detect(args: argparse.Namespace) -> int:
    status = 0
    for inp in find_inputs([Path(p) for p in args.inputs], max_line=args.max_line):
        if isinstance(inp, DetectionError):
            print(f"normalize: {inp.message}", file=sys.stderr)
            status = 1
            continue
        extra = f" (+{len(inp.companions)} companion files)" if inp.companions else ""
        where = str(inp.main) if inp.key is None else f"{inp.main}#{inp.key}"  # a session of a database
        print(f"{where}\t{inp.protocol}{extra}")
    return status


def cmd_schema(args: argparse.Namespace) -> int:
    from ._schema import json_schema

    print(json.dumps(json_schema(), indent=2, sort_keys=True))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from ._schema import validate_lines

    count = 0
    for name in args.inputs:
        with sys.stdin.buffer if name == "-" else open(name, "rb") as f:
            for problem in validate_lines(f):
                count += 1
                print(f"{name}: {problem}")
    if count:
        print(f"normalize: {count} problem(s)", file=sys.stderr)
        return 1
    return 0


def cmd_adapters(args: argparse.Namespace) -> int:
    for name, cls in sorted(available().items()):
        print(f"{name}\t{cls.__module__}.{cls.__qualname__}")
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="normalize", description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--version", action="version", version=f"normalize {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument(
            "--max-line",
            type=int,
            default=DEFAULT_MAX_LINE,
            metavar="BYTES",
            help="longest line accepted (default 16 MiB)",
        )

    c = sub.add_parser("convert", help="native captures or session files -> normalized JSONL")
    c.add_argument("inputs", nargs="+", metavar="PATH", help="files or folders")
    c.add_argument("--protocol", "-p", help="skip detection and read the input as this protocol")
    c.add_argument(
        "-o", "--output", help="output file, or folder (an existing one, or ending in /) for one file per session"
    )
    c.add_argument("--redact", action="store_true", help="scrub API keys, tokens and private keys from the output")
    c.add_argument("--strict", action="store_true", help="stop at the first bad input instead of reporting it")
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
    t.add_argument("--redact", action="store_true", help="scrub API keys, tokens and private keys from the events")
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
    r.add_argument("--redact", action="store_true", help="scrub API keys, tokens and private keys from the events")
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
    v.set_defaults(func=cmd_validate)

    from ._doctor import add_doctor_command
    from .analytics._cli import add_commands as add_analytics_commands

    add_analytics_commands(sub)

    add_doctor_command(sub)

    a = sub.add_parser("adapters", help="list the registered adapters")
    a.set_defaults(func=cmd_adapters)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return int(args.func(args))
    except UsageError as exc:
        print(f"normalize: {exc}", file=sys.stderr)
        return 2
    except InputError as exc:
        print(f"normalize: {exc.message}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except OSError as exc:
        print(f"normalize: {exc.filename or ''}: {exc.strerror}", file=sys.stderr)
        return 1
    except NormalizeError as exc:  # the base: any other library error
        print(f"normalize: {exc}", file=sys.stderr)
        return 1

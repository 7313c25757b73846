"""``normalize show``: the command line part (parsing and files); the rest is in the sibling modules."""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import webbrowser
from pathlib import Path
from typing import Any

from normalize import InputError, UsageError

__all__ = ["add_show_command", "cmd_show"]

DEFAULT_FOLDER = "normalize-show"


def add_show_command(sub: Any) -> None:
    """Add ``show`` to the main parser's subparsers."""
    s = sub.add_parser(
        "show",
        help="a session as one self-contained HTML page (or in the terminal, or live)",
        description="Render any native capture, stored session file, folder or normalized JSONL as a "
        "self-contained HTML page that fetches nothing; a folder gives an index page and one page per input.",
    )
    s.add_argument(
        "source",
        nargs="*",
        metavar="SOURCE | -- COMMAND",
        help="a file or a folder; or, after --, an agent command to run under tap and show live",
    )
    s.add_argument("--protocol", "-p", help="skip detection and read native input as this protocol")
    s.add_argument(
        "-o",
        "--output",
        metavar="PAGE.html|DIR|-",
        help=f"where to write (default: SOURCE's name .html here; for a folder ./{DEFAULT_FOLDER}/); - is stdout",
    )
    s.add_argument("--open", action="store_true", help="open the page in the default browser")
    s.add_argument("--terminal", action="store_true", help="show the sessions in the terminal instead (paged)")
    s.add_argument(
        "--follow",
        action="store_true",
        help="serve the page on 127.0.0.1 and update it live as the file grows (stop with Ctrl-C)",
    )
    s.add_argument("--port", type=int, default=0, help="with --follow: the port (default: any free one)")
    s.add_argument("--poll", type=float, default=0.1, metavar="SECONDS", help="with --follow: time between looks")
    s.set_defaults(func=cmd_show)


def _name(path: Path) -> str:
    name = path.name
    for suffix in (".tap.jsonl", ".jsonl"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def _need(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise UsageError(f"normalize show needs {module}: pip install 'agent-normalize[show]'")


def cmd_show(args: argparse.Namespace) -> int:
    _need("rich" if args.terminal else "markdown_it")
    words: list[str] = args.source
    if not words:
        raise UsageError("nothing to show: normalize show SOURCE, or normalize show [options] -- COMMAND...")
    if len(words) > 1 or (not Path(words[0]).exists() and shutil.which(words[0]) is not None):
        from ._live import run_and_serve

        # several words, or one that names a program and no file: an agent command
        return run_and_serve(words, protocol=args.protocol, port=args.port, poll=args.poll, open_browser=args.open)
    source = Path(words[0])
    if not source.exists():
        raise UsageError(f"{source}: no such file or directory")
    if args.follow:
        from ._live import serve

        if source.is_dir():
            raise UsageError("--follow takes one session file, not a folder")
        return serve(source, protocol=args.protocol, port=args.port, poll=args.poll, open_browser=args.open)
    from ._read import Input, discover, read

    inputs: list[Input] = []
    problems: list[str] = []
    for inp in discover(source, args.protocol):
        if isinstance(inp, InputError):
            problems.append(inp.message)
            print(f"normalize: skipped: {inp.message}", file=sys.stderr)
        else:
            inputs.append(inp)
    if not inputs:
        print("normalize: no session found in the input", file=sys.stderr)
        return 1
    status = 1 if problems else 0
    if args.terminal:
        from ._terminal import show_terminal

        show_terminal([s for inp in inputs for s in read(inp)])
        return status
    from ._html import IndexRow, render_index, render_page

    if source.is_file():
        page = render_page(read(inputs[0]), source=source.name)
        if args.output == "-":
            sys.stdout.write(page)
            return status
        out = Path(args.output) if args.output else Path(_name(source) + ".html")
        out.write_text(page, "utf-8")
    else:
        folder = Path(args.output or DEFAULT_FOLDER)
        if args.output == "-":
            raise UsageError("a folder gives several pages: -o takes a folder")
        folder.mkdir(parents=True, exist_ok=True)
        rows: list[IndexRow] = []
        for inp in inputs:
            try:
                sessions = read(inp)
            except InputError as exc:
                problems.append(exc.message)
                print(f"normalize: skipped: {exc.message}", file=sys.stderr)
                status = 1
                continue
            rel = inp.main.relative_to(source) if inp.main.is_relative_to(source) else Path(inp.main.name)
            page_name = "__".join((*rel.parent.parts, _name(inp.main))) + ".html"
            (folder / page_name).write_text(render_page(sessions, source=str(rel)), "utf-8")
            rows.extend(IndexRow(s, f"{page_name}#s-{_anchor_id(s.session_id)}") for s in sessions)
        out = folder / "index.html"
        out.write_text(render_index(rows, source=str(source), problems=problems), "utf-8")
    print(f"normalize: wrote {out}", file=sys.stderr)
    if args.open:
        webbrowser.open(out.resolve().as_uri())
    return status


def _anchor_id(session_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in session_id)

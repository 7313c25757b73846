"""``normalize run``: one driven session from the command line.

Prompts in order (each a turn), approvals answered by a policy, the normalized
events written as they happen (the same stream ``normalize tap --events`` writes),
the wire recorded with ``--record``.  Exit status: 0 when every turn completed
(``turn-complete`` with ``ok``), 1 when one did not or the agent failed, 2 for a
usage error, 127 when the agent's program is missing.
"""

from __future__ import annotations

import argparse
import math
import shlex
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, BinaryIO, Literal

import anyio
import anyio.to_thread

from .._errors import UsageError
from .._model import PermissionRequest, SessionEvent, UserQuestion, _Core
from .._term import printable
from ._core import BACKENDS, AgentNotFound, DriveSession, backend_class, drive

__all__ = ["add_run_command", "cmd_run"]

Policy = Literal["allow", "deny", "ask"]

#: Seconds an agent is given to end a cancelled turn.
SETTLE = 10.0

_EPILOG = """\
examples:
  normalize run claude --approve allow --prompt "add a test" --prompt "run it"
  normalize run codex --record run.tap.jsonl --prompt "fix the failing test"
  normalize run acp --prompt "hello" -- claude-agent-acp
  echo "explain this repo" | normalize run hm -o events.jsonl

Without --prompt, each line of standard input is a prompt.  --show serves the run's page
live on 127.0.0.1.
"""


def add_run_command(sub: Any) -> None:
    """Add ``run`` to the main parser's subparsers."""
    r = sub.add_parser(
        "run",
        usage="normalize run AGENT [options] [-- AGENT_ARGS | -- ACP_COMMAND...]",
        help="drive an agent: prompts in, approvals by a policy, normalized events out",
        description="Run AGENT for one session through its own protocol (docs/drive.md): each --prompt is a turn, "
        "approvals are answered by --approve, the normalized events are written as they happen.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument("agent", choices=sorted(BACKENDS), help="the agent (acp: its command after --)")
    r.add_argument("--prompt", action="append", default=[], metavar="TEXT", help="a prompt (repeatable, in order)")
    r.add_argument("--image", action="append", default=[], metavar="PATH", help="an image for the first prompt")
    r.add_argument(
        "--approve",
        choices=["allow", "deny", "ask"],
        default="ask",
        help="answer permission requests: allow once, deny, or ask on the terminal (default; "
        "without a terminal a request is denied, and said so)",
    )
    r.add_argument("--cwd", type=Path, help="the agent's working directory (default: here)")
    r.add_argument("--model", help="the model to start with")
    r.add_argument("--mode", help="the mode to start with (the agent's own names)")
    r.add_argument("--resume", metavar="ID", help="resume the agent's session with this native id")
    r.add_argument("--record", metavar="FILE.tap.jsonl", help="write the tap recording of the wire")
    r.add_argument("-o", "--output", metavar="FILE", help="write the events there (default: standard output)")
    r.add_argument("--turn-timeout", type=float, metavar="SECONDS", help="cancel a turn that runs longer")
    r.add_argument(
        "--show",
        action="store_true",
        help="also serve the live page of the session on 127.0.0.1 (normalize show --follow; needs the show extra)",
    )
    r.add_argument("--port", type=int, default=0, help="with --show: the port (default: any free one)")
    r.set_defaults(func=cmd_run, rest=[])


def _self_command() -> list[str]:
    """How this program runs itself (a child ``normalize run`` under ``--show``)."""
    return [sys.executable, "-m", "normalize"]


def _show(args: argparse.Namespace) -> int:
    """``run --show``: the run in a child process recording the wire, its page served live here."""
    from .._show._cli import _need
    from .._show._live import serve

    _need("markdown_it")
    argv = [a for a in args.argv if a not in ("--show",)]
    with tempfile.TemporaryDirectory(prefix="normalize-run-") as tmp:
        record = Path(args.record) if args.record else Path(tmp) / "session.tap.jsonl"
        record.touch()  # followed from the start; the child writes into it
        if not args.record:
            cut = argv.index("--") if "--" in argv else len(argv)
            argv[cut:cut] = ["--record", str(record)]
        child = subprocess.Popen([*_self_command(), *argv])
        protocol = backend_class(args.agent).protocol
        return serve(record, protocol=protocol, port=args.port, child=child)


def cmd_run(args: argparse.Namespace) -> int:
    from .._cli_live import _EventWriter

    if args.show:
        return _show(args)

    rest: list[str] = args.rest
    if args.agent == "acp" and not rest:
        raise UsageError("normalize run acp needs the agent's command: normalize run acp [options] -- COMMAND...")
    command, extra = (rest, []) if args.agent == "acp" else (None, rest)
    prompts: list[str] = list(args.prompt)
    if not prompts:
        if sys.stdin.isatty():
            raise UsageError("no prompt: give --prompt TEXT, or prompts on standard input (one per line)")
        prompts = [line.rstrip("\n") for line in sys.stdin if line.strip()]
    out: BinaryIO = sys.stdout.buffer if args.output is None else Path(args.output).open("wb")  # noqa: SIM115
    session = drive(
        args.agent,
        cwd=args.cwd,
        args=extra,
        command=command,
        model=args.model,
        mode=args.mode,
        resume=args.resume,
        record=args.record,
    )
    writer = _EventWriter(
        out, input=shlex.join(command or [args.agent, *extra]), protocol=lambda: session.backend.protocol
    )
    policy: Policy = args.approve

    stopped = False

    async def turns() -> None:
        for i, text in enumerate(prompts):
            images = args.image if i == 0 else []
            with anyio.move_on_after(args.turn_timeout if args.turn_timeout else math.inf) as scope:
                async for event in session.turn(text, images=images):
                    writer.write([event])
                    await _answer(session, event, policy)
            if scope.cancelled_caught:
                print(f"normalize: turn {i + 1} ran past --turn-timeout: cancelled", file=sys.stderr)
                await session.cancel()
                with anyio.move_on_after(SETTLE):  # the agent says how the turn ended
                    async for event in session:
                        writer.write([event])
                        if not session.turn_running:
                            break
            if session.returncode is not None or len(session.turns) <= i or session.turns[i] != "ok":
                break  # the agent is gone, or the turn did not complete: the next prompt would not follow it

    async def on_signals(scope: anyio.CancelScope) -> None:
        nonlocal stopped
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
            async for signum in received:
                if signum == signal.SIGINT and session.turn_running and not stopped:
                    stopped = True  # the first Ctrl-C cancels the turn; a second one stops
                    print("normalize: cancelling the turn (Ctrl-C again to stop)", file=sys.stderr)
                    await session.cancel()
                    continue
                stopped = True
                scope.cancel()
                return

    async def run() -> int:
        async with session, anyio.create_task_group() as tg:
            tg.start_soon(on_signals, tg.cancel_scope)
            await turns()
            tg.cancel_scope.cancel()
        writer.write([event async for event in session])
        writer.finish()
        done = session.turns
        if stopped and session.turn_running:
            return 130
        return 0 if len(done) == len(prompts) and all(r == "ok" for r in done) else 1

    try:
        return anyio.run(run)
    except AgentNotFound as exc:
        print(f"normalize: {printable(str(exc))}", file=sys.stderr)
        return 127
    finally:
        if out is not sys.stdout.buffer:
            out.close()


async def _answer(session: DriveSession, event: _Core, policy: Policy) -> None:
    """Answer a request of the agent by the policy (the decision is then in the stream as request-resolved)."""
    if type(event) is not SessionEvent:
        return
    body = event.event.body
    if type(body) is PermissionRequest:
        if policy == "ask":
            decision = await anyio.to_thread.run_sync(_ask_permission, body)
        else:
            decision = policy
        await session.respond(body.request_id, decision)  # type: ignore[arg-type]
    elif type(body) is UserQuestion:
        if policy == "ask":
            answers = await anyio.to_thread.run_sync(_ask_questions, body)
            if answers is not None:
                await session.respond(body.request_id, answers=answers)
                return
        await session.respond(body.request_id, "cancel")  # nobody to answer it: the question is cancelled


def _tty() -> tuple[Any, Any] | None:
    try:
        return open("/dev/tty"), open("/dev/tty", "w")
    except OSError:
        return None


_CHOICES = {"a": "allow", "A": "allow-always", "d": "deny", "D": "deny-always", "c": "cancel"}


def _ask_permission(body: PermissionRequest) -> str:
    tty = _tty()
    if tty is None:
        print("normalize: a permission request and no terminal to ask: denied", file=sys.stderr)
        return "deny"
    tin, tout = tty
    with tin, tout:
        call = body.tool_call
        tout.write(f"\n{printable(call.tool)}: {printable(call.title)}\n")
        tout.write("  [a]llow once, [A]llow always, [d]eny, [D]eny always, [c]ancel? ")
        tout.flush()
        while True:
            line = tin.readline()
            if not line:
                return "deny"
            choice = _CHOICES.get(line.strip())
            if choice is not None:
                return choice
            tout.write("  a, A, d, D or c? ")
            tout.flush()


def _ask_questions(body: UserQuestion) -> dict[str, str] | None:
    tty = _tty()
    if tty is None:
        print("normalize: a question and no terminal to ask: cancelled", file=sys.stderr)
        return None
    tin, tout = tty
    answers: dict[str, str] = {}
    with tin, tout:
        for q in body.questions:
            tout.write(f"\n{printable(q.prompt)}\n")
            for n, option in enumerate(q.options, 1):
                tout.write(f"  {n}. {printable(option.label)}\n")
            tout.write("> ")
            tout.flush()
            line = tin.readline().strip()
            options = q.options
            if line.isdigit() and 1 <= int(line) <= len(options):
                line = options[int(line) - 1].label
            answers[q.id] = line
    return answers

"""The live commands of the command line: ``tap``, ``replay``, ``convert --follow``.

Kept apart from ``_cli`` so that the batch commands start without anyio.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO

import anyio
from anyio.abc import TaskStatus

from ._codec import encode, encode_header
from ._convert import SessionInput, find_inputs, is_store
from ._errors import InputError, UsageError
from ._model import _Core
from ._redact import Redactor
from ._registry import adapter_class
from ._version import __version__

__all__ = ["cmd_replay", "cmd_tap", "follow_cmd"]


def _write_all(out: BinaryIO, data: bytes) -> None:
    """Write every byte, straight to the file descriptor.

    A buffered write of a large line to a full pipe, interrupted by a signal the event
    loop handles (Ctrl-C while following), can lose the part not yet written; a loop
    over os.write resumes after each partial write instead.
    """
    out.flush()
    try:
        fd = out.fileno()
    except (OSError, ValueError):  # not a real file (a test's BytesIO)
        out.write(data)
        out.flush()
        return
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class _EventWriter:
    """Writes a normalized stream to a binary file: the header before the first event, a flush per batch."""

    def __init__(
        self, out: BinaryIO, *, input: str, protocol: Callable[[], str | None], redactor: Redactor | None = None
    ) -> None:
        self.out = out
        self.redactor = redactor
        self._input = input
        self._protocol = protocol
        self._header = False

    def write(self, events: Sequence[_Core]) -> None:
        if not events:
            return
        lines = [encode(ev) for ev in events]
        if self.redactor is not None:
            lines = [self.redactor.redact(line) for line in lines]
        if not self._header:
            self._header = True
            head = encode_header(library_version=__version__, input=self._input, protocol=self._protocol())
            lines.insert(0, head)
        _write_all(self.out, b"".join(line + b"\n" for line in lines))


async def _until_signal(scope: anyio.CancelScope, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
        task_status.started()
        async for _ in received:
            scope.cancel()
            return


def _redactor(args: argparse.Namespace) -> Redactor | None:
    return Redactor() if getattr(args, "redact", False) else None


def follow_cmd(args: argparse.Namespace) -> int:
    from ._follow import follow

    if len(args.inputs) != 1 or (args.output is not None and Path(args.output).is_dir()):
        raise UsageError("--follow reads exactly one file and writes one stream")
    if is_store(Path(args.inputs[0])):
        raise UsageError("--follow reads a file an agent appends lines to, not a session database")
    out = sys.stdout.buffer if args.output is None else Path(args.output).open("wb")  # noqa: SIM115
    stream = follow(
        args.inputs[0],
        protocol=args.protocol,
        poll=args.poll,
        idle_timeout=args.idle_timeout,
        strict=args.strict,
        origin=args.origin,
        max_line=args.max_line,
    )
    writer = _EventWriter(out, input=args.inputs[0], protocol=lambda: stream.protocol, redactor=_redactor(args))

    async def run() -> None:
        async with anyio.create_task_group() as tg:
            await tg.start(_until_signal, tg.cancel_scope)
            async with stream:
                async for ev in stream:
                    writer.write([ev])
            tg.cancel_scope.cancel()
        writer.write(stream.closing)

    try:
        anyio.run(run)
    finally:
        if out is not sys.stdout.buffer:
            out.close()
    return 0


def _events_target(name: str | None) -> BinaryIO | None:
    if name is None:
        return None
    if name == "-":
        return sys.stderr.buffer
    return open(name, "wb")


def cmd_tap(args: argparse.Namespace) -> int:
    from ._tap import FdReader, FdWriter, Wiretap, _open_record, exit_status, relay

    command = args.agent[1:] if args.agent[:1] == ["--"] else args.agent
    if not command:
        raise UsageError("no agent command: normalize tap [options] -- AGENT_COMMAND...")
    if args.protocol is not None:
        adapter_class(args.protocol)  # an unknown name is a usage error before the agent starts
    record, owned = _open_record(args.record)
    events_out = _events_target(args.events)
    wiretap = Wiretap(protocol=args.protocol, max_line=args.max_line, record=record)
    writer = (
        _EventWriter(
            events_out, input=shlex.join(command), protocol=lambda: wiretap.converter.protocol, redactor=_redactor(args)
        )
        if events_out is not None
        else None
    )
    told: list[InputError] = []

    def on_error(exc: InputError) -> None:
        if writer is not None and not told:  # without --events nobody asked for events
            told.append(exc)
            print(f"normalize tap: {exc.message}; relaying without events", file=sys.stderr, flush=True)

    async def run() -> int:
        return await relay(
            command,
            stdin=FdReader(sys.stdin.fileno()),
            stdout=FdWriter(sys.stdout.fileno()),
            wiretap=wiretap,
            on_events=writer.write if writer is not None else _discard,
            on_error=on_error,
            forward_signals=True,
        )

    try:
        rc = anyio.run(run)
    except FileNotFoundError as exc:
        print(f"normalize tap: {command[0]}: {exc.strerror}", file=sys.stderr)
        return 127
    finally:
        if owned is not None:
            owned.close()
        if events_out is not None and events_out is not sys.stderr.buffer:
            events_out.close()
    return exit_status(rc)


def _discard(events: Sequence[_Core]) -> None:
    return None


def cmd_replay(args: argparse.Namespace) -> int:
    from ._replay import replay

    out = sys.stdout.buffer if args.output is None else args.output.open("wb")
    protocol: list[str | None] = [args.protocol]
    writer = _EventWriter(out, input=args.input, protocol=lambda: protocol[0], redactor=_redactor(args))

    async def run() -> None:
        if protocol[0] is None:
            for inp in find_inputs([Path(args.input)], max_line=args.max_line):
                protocol[0] = inp.protocol if isinstance(inp, SessionInput) else None
        async with anyio.create_task_group() as tg:
            await tg.start(_until_signal, tg.cancel_scope)
            events = replay(
                args.input,
                protocol=protocol[0],
                speed=args.speed,
                from_seq=args.from_seq,
                strict=args.strict,
                max_line=args.max_line,
            )
            async for ev in events:
                writer.write([ev])
            tg.cancel_scope.cancel()

    try:
        anyio.run(run)
    finally:
        if out is not sys.stdout.buffer:
            out.close()
    return 0

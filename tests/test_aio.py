"""The async API gives the sync API's events, pulls with backpressure, and closes cleanly when stopped."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from fakes.wire import TurnAdapter, agent_command
from helpers import (
    ADAPTERS,
    capture_files,
    convert_records,
    file_bytes,
    fixed_clock,
    on_both_backends,
    records_of,
    to_jsonl,
)
from normalize import (
    CaptureParser,
    DetectionError,
    Error,
    NormalizeError,
    SessionEvent,
    SessionFailed,
    SessionStateChanged,
    SessionUpdate,
    TurnComplete,
    aevents,
    events,
    find_inputs,
    read_records,
    tap,
)
from normalize._lines import Record
from normalize._model import _Core

# the fake agents speak a small turn protocol of their own (tests/fakes/wire.py)
pytestmark = pytest.mark.usefixtures("turn_adapter")

CAPTURES = capture_files()


def _outcome(make: object) -> str:
    """The JSONL of a conversion, or the name of the library error it raised."""
    try:
        return to_jsonl(make())  # type: ignore[operator]
    except NormalizeError as exc:
        return type(exc).__name__


async def _aoutcome(stream: object) -> str:
    try:
        async with stream as s:  # type: ignore[attr-defined]
            return to_jsonl([ev async for ev in s])
    except NormalizeError as exc:
        return type(exc).__name__


async def _chunks(data: bytes, size: int) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]
        await anyio.lowlevel.checkpoint()


@pytest.mark.anyio
@pytest.mark.parametrize(("anyio_backend", "capture"), on_both_backends(CAPTURES))
async def test_async_gives_the_sync_events_for_every_capture(anyio_backend: str, capture: Path) -> None:
    (inp,) = find_inputs([capture], protocol=capture.relative_to(ADAPTERS).parts[0])
    assert not isinstance(inp, DetectionError)
    want = _outcome(lambda: convert_records(records_of(inp.paths, protocol=inp.protocol), inp.protocol))
    # the session on disk (main file and companions), read as files
    assert await _aoutcome(aevents(inp, clock=fixed_clock)) == want
    # the same bytes as a stream cut in odd pieces (a pipe), main file only (a database: its rows)
    data = file_bytes(inp.main)
    want_main = _outcome(lambda: convert_records(records_of([inp.main]), inp.protocol))
    got = await _aoutcome(aevents(_chunks(data, 977), protocol=inp.protocol, clock=fixed_clock))
    assert got == want_main
    if inp.key is not None:
        return  # a database is found by find_inputs, never read as a stream
    # detection: a file is detected from the same sample as the sync path (or fails the same way)
    want_detected = _outcome(lambda: list(events(read_records([inp.main]), clock=fixed_clock)))
    assert await _aoutcome(aevents(inp.main, clock=fixed_clock)) == want_detected


def _turn_lines(n: int) -> bytes:
    return b"".join(b'{"turn":"start"}\n{"n":%d}\n{"turn":"end"}\n' % i for i in range(n))


@pytest.mark.anyio
async def test_a_slow_consumer_slows_the_reader_and_loses_nothing() -> None:
    lines_per_chunk = 30
    produced = 0

    async def source() -> AsyncIterator[bytes]:
        nonlocal produced
        data = _turn_lines(200)  # 600 lines
        step = len(b'{"turn":"start"}\n{"n":1}\n{"turn":"end"}\n') * 10
        for i in range(0, len(data), step):
            produced += 1
            yield data[i : i + step]

    taken: list[_Core] = []
    async with aevents(source(), adapter=TurnAdapter(), clock=fixed_clock) as stream:
        async for ev in stream:
            taken.append(ev)
            lines_seen = sum(isinstance(e, SessionUpdate) for e in taken) * 3
            # the reader is never more than one chunk ahead of what was taken
            assert produced <= lines_seen // lines_per_chunk + 2
            await anyio.sleep(0)
    want = list(events(read_records_from(_turn_lines(200)), adapter=TurnAdapter(), clock=fixed_clock))
    assert to_jsonl(taken) == to_jsonl(want)
    assert sum(isinstance(e, SessionUpdate) for e in taken) == 200


def read_records_from(data: bytes) -> list[Record]:
    parser = CaptureParser()
    return [*parser.feed(data), *parser.close()]


@pytest.mark.anyio
async def test_a_line_over_max_line_is_an_error_and_the_stream_goes_on() -> None:
    data = b'{"turn":"start"}\n{"big":"' + b"x" * 5000 + b'"}\n{"after":1}\n{"turn":"end"}\n'
    async with aevents(_chunks(data, 100), adapter=TurnAdapter(), clock=fixed_clock, max_line=1000) as stream:
        got = [ev async for ev in stream]
    bodies = [e.event.body for e in got if isinstance(e, SessionEvent)]
    errors = [b for b in bodies if isinstance(b, Error)]
    assert [e.error_type for e in errors] == ["line-too-long"]
    assert any(isinstance(e, SessionUpdate) and b'"after"' in bytes(e.update.payload) for e in got)
    assert isinstance(bodies[-1], TurnComplete)


@pytest.mark.anyio
async def test_stopping_early_closes_the_session_and_reports_the_open_turn() -> None:
    send, receive = anyio.create_memory_object_stream[bytes](0)

    async def source() -> AsyncIterator[bytes]:
        async with receive:
            async for chunk in receive:
                yield chunk

    stream = aevents(source(), adapter=TurnAdapter(), clock=fixed_clock)
    async with anyio.create_task_group() as tg:

        async def consume() -> None:
            async with stream:
                async for _ in stream:
                    pass

        tg.start_soon(consume)
        await send.send(b'{"turn":"start"}\n{"n":1}\n')
        await anyio.wait_all_tasks_blocked()
        tg.cancel_scope.cancel()
    assert stream.session is not None
    assert stream.session.closed
    assert stream.session.state == "failed"
    tail = stream.closing
    errors = [e.event.body for e in tail if isinstance(e, SessionEvent) and isinstance(e.event.body, Error)]
    assert [e.error_type for e in errors] == ["cut-off"]
    assert any(isinstance(e, SessionFailed) for e in tail)
    assert isinstance(tail[-1], SessionStateChanged)
    assert tail[-1].state == "failed"
    send.close()


@pytest.mark.anyio
async def test_cancelling_a_tap_stops_the_child_and_closes_the_session(tmp_path: Path) -> None:
    capture = tmp_path / "turn.jsonl"
    capture.write_bytes(b'{"turn":"start"}\n{"n":1}\n')
    pid_file = tmp_path / "pid"
    agent = tap(agent_command(capture, "--hang", "--pid-file", str(pid_file)), protocol="test-turns", clock=fixed_clock)
    seen: list[_Core] = []
    with anyio.move_on_after(5):
        async with agent:
            async for ev in agent:
                seen.append(ev)
                if isinstance(ev, SessionUpdate):
                    break  # the consumer stops while the agent still runs
    assert agent.returncode == -signal.SIGTERM
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert agent.session is not None
    assert agent.session.state == "failed"
    assert any(isinstance(e, SessionFailed) for e in agent.closing)

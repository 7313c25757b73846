"""Following a file being written: appended lines become events; truncation and rotation are reported."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from fakes.wire import NORMALIZE, without_ts
from helpers import ADAPTERS, companions, convert_records, fixed_clock, records_of, session_captures, to_jsonl
from normalize import Error, SessionEvent, SessionStateChanged, decode, encode, follow
from normalize._model import _Core

# the fake agents speak a small turn protocol of their own (tests/fakes/wire.py)
pytestmark = pytest.mark.usefixtures("turn_adapter")

STORED = [
    c
    for c in session_captures()
    if c.relative_to(ADAPTERS).parts[0] in ("claude-transcript", "codex-rollout") and len(companions(c)) == 1
]


async def _write_slowly(path: Path, data: bytes, pieces: int) -> None:
    step = max(1, len(data) // pieces)
    with path.open("ab") as f:
        for i in range(0, len(data), step):
            f.write(data[i : i + step])  # cuts fall anywhere, also inside a line
            f.flush()
            await anyio.sleep(0.005)


@pytest.mark.anyio
@pytest.mark.parametrize("capture", STORED[:3], ids=lambda p: p.name)
async def test_lines_appended_while_following_give_the_events_of_the_whole_file(tmp_path: Path, capture: Path) -> None:
    protocol = capture.relative_to(ADAPTERS).parts[0]
    path = tmp_path / capture.name
    path.write_bytes(b"")
    got: list[_Core] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(_write_slowly, path, capture.read_bytes(), 15)
        async with follow(path, protocol=protocol, poll=0.01, idle_timeout=0.3, clock=fixed_clock) as stream:
            got.extend([ev async for ev in stream])
    assert to_jsonl(got) == to_jsonl(convert_records(records_of([capture]), protocol))


async def _follow_until_changed(path: Path, change: object) -> list[_Core]:
    async with follow(path, protocol="test-turns", poll=0.01, idle_timeout=2, clock=fixed_clock) as stream:
        got = [await stream.__anext__() for _ in range(3)]  # created, turn-start, its state change
        change()  # type: ignore[operator]
        got += [ev async for ev in stream]
    return got


def _errors(events: list[_Core]) -> list[Error]:
    return [e.event.body for e in events if isinstance(e, SessionEvent) and isinstance(e.event.body, Error)]


@pytest.mark.anyio
async def test_a_truncated_file_is_reported_not_misread(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"turn":"start"}\n{"n":1}\n')

    def truncate() -> None:
        path.write_bytes(b'{"other":1}\n')

    start = time.monotonic()
    got = await _follow_until_changed(path, truncate)
    assert time.monotonic() - start < 1.5  # stopped at the change, not at the idle timeout
    assert [e.error_type for e in _errors(got)] == ["file-changed", "cut-off"]
    assert not any(b"other" in bytes(getattr(getattr(e, "update", None), "payload", b"") or b"") for e in got)
    assert isinstance(got[-1], SessionStateChanged)
    assert got[-1].state == "failed"  # the open turn was cut off


@pytest.mark.anyio
async def test_a_rotated_file_is_reported_not_misread(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"turn":"start"}\n{"n":1}\n')

    def rotate() -> None:
        new = tmp_path / "new.jsonl"
        new.write_bytes(b'{"turn":"start"}\n{"n":1}\n{"n":2}\n{"turn":"end"}\n')
        os.replace(new, path)

    got = await _follow_until_changed(path, rotate)
    assert _errors(got)[0].error_type == "file-changed"
    assert "replaced" in _errors(got)[0].message


def test_cli_follow_equals_convert_and_stops_on_sigint(tmp_path: Path) -> None:
    capture = STORED[0]
    path = tmp_path / capture.name
    data = capture.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    err_file = tmp_path / "stderr"
    with err_file.open("wb") as err:
        proc = subprocess.Popen(
            [*NORMALIZE, "convert", "--follow", "--poll", "0.02", str(path)], stdout=subprocess.PIPE, stderr=err
        )
    assert proc.stdout is not None
    first = proc.stdout.readline()  # following has begun
    with path.open("ab") as f:
        f.write(data[len(data) // 2 :])
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out = first + proc.stdout.read()
    proc.stdout.close()
    assert (proc.wait(timeout=10), err_file.read_bytes()) == (0, b"")
    whole = subprocess.run([*NORMALIZE, "convert", str(path)], capture_output=True, check=True, timeout=30).stdout
    head, *lines = out.splitlines()
    whole_head, *whole_lines = whole.splitlines()
    assert head == whole_head
    # the same events; only times taken from the clock may differ between the two runs
    assert to_jsonl(without_ts(decode(x) for x in lines)) == to_jsonl(  # type: ignore[misc]
        without_ts(decode(x) for x in whole_lines)  # type: ignore[misc]
    )


@pytest.mark.anyio
async def test_a_file_rewritten_in_place_and_larger_is_reported_not_read_as_a_continuation(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"turn":"start"}\n{"n":1}\n')
    inode = path.stat().st_ino

    def rewrite() -> None:  # cat other > file: the same inode, truncated, then longer than before
        with path.open("r+b") as f:
            f.truncate(0)
            f.write(b'{"other":"a line long enough to pass the old end"}\n' * 4)

    got = await _follow_until_changed(path, rewrite)
    assert path.stat().st_ino == inode
    assert [e.error_type for e in _errors(got)] == ["file-changed", "cut-off"]
    assert "rewritten in place" in _errors(got)[0].message
    assert not any(b"other" in encode(e) for e in got)  # nothing of the new content was read


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "agent.fifo"
    os.mkfifo(path)
    return path


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs")
@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM", "idle-timeout", "idle-timeout, no writer yet"])
def test_cli_follow_of_a_fifo_stops_on_a_signal_or_the_idle_timeout(tmp_path: Path, how: str) -> None:
    capture = STORED[0]
    fifo = _fifo(tmp_path)
    idle = ["--idle-timeout", "1"] if how.startswith("idle") else []
    cmd = [*NORMALIZE, "convert", "--follow", "--protocol", "claude-transcript", *idle, str(fifo)]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        timer = threading.Timer(40, proc.kill)  # without the fix: blocked in a read, deaf to all of it
        timer.start()
        writer = -1
        try:
            if how != "idle-timeout, no writer yet":
                writer = os.open(fifo, os.O_WRONLY)  # waits for the reader to open it
                os.write(writer, capture.read_bytes())
                assert proc.stdout is not None
                assert json.loads(proc.stdout.readline())["type"] == "stream.header"  # read, the writer still there
                if how.startswith("SIG"):
                    proc.send_signal(getattr(signal, how))
            out, err = proc.communicate()
        finally:
            timer.cancel()
            if writer >= 0:
                os.close(writer)
    assert (proc.returncode, err) == (0, b"")
    if how == "idle-timeout, no writer yet":
        assert out == b""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs")
@pytest.mark.anyio
async def test_following_a_fifo_reads_what_its_writer_writes_until_it_closes(tmp_path: Path) -> None:
    capture = STORED[0]
    protocol = capture.relative_to(ADAPTERS).parts[0]
    fifo = _fifo(tmp_path)

    def write() -> None:
        with fifo.open("wb") as f:
            f.write(capture.read_bytes())

    got: list[_Core] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(anyio.to_thread.run_sync, write)
        async with follow(fifo, protocol=protocol, clock=fixed_clock) as stream:
            got.extend([ev async for ev in stream])  # ends when the writer closes
    assert to_jsonl(got) == to_jsonl(convert_records(records_of([capture]), protocol))


def test_cli_follow_whose_reader_stops_ends_quietly(tmp_path: Path) -> None:
    # normalize convert --follow FILE | head -1
    capture = STORED[0]
    path = tmp_path / capture.name
    path.write_bytes(capture.read_bytes() * 20)
    cmd = [*NORMALIZE, "convert", "--follow", "--idle-timeout", "30", str(path)]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        proc.stdout.readline()
        proc.stdout.close()
        _, err = proc.communicate(timeout=25)  # stops at the closed pipe, not at the idle timeout
    assert (proc.returncode, err) == (0, b"")

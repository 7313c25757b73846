"""Live agents through the tap: bytes pass untouched both ways, the recording is what crossed,
the events are those of converting the capture, exit codes and deaths are reported."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from fakes.wire import NORMALIZE, agent_command, wire_lines, without_ts
from helpers import (
    ADAPTERS,
    capture_id,
    companions,
    convert_records,
    fixed_clock,
    records_of,
    session_captures,
    to_jsonl,
)
from normalize import (
    CaptureParser,
    NormalizeError,
    SessionFailed,
    SessionStateChanged,
    Wiretap,
    decode,
    tap,
    tap_line,
)
from normalize._model import _Core

# the fake agents speak a small turn protocol of their own (tests/fakes/wire.py)
pytestmark = pytest.mark.usefixtures("turn_adapter")

# a database of stored sessions is not a stream an agent writes: not played by the fake agent
LIVE = [c for c in session_captures() if len(companions(c)) == 1 and c.suffix != ".db"]


def _protocol(p: Path) -> str:
    return p.relative_to(ADAPTERS).parts[0]


def _tap_parts(line: bytes) -> tuple[str, bytes]:
    """(from, msg bytes) of one recorded tap line."""
    (_, from_, msg) = wire_lines_of(line)
    return from_, msg


def wire_lines_of(line: bytes) -> tuple[str, str, bytes]:
    line = line.rstrip(b"\n")
    cut = line.index(b',"msg":')
    head = json.loads(line[:cut] + b"}")
    return head["t"], head["from"], line[cut + len(b',"msg":') : -1]


def _convert_bytes(data: bytes, protocol: str) -> list[_Core]:
    parser = CaptureParser()
    return convert_records([*parser.feed(data), *parser.close()], protocol)


# ----------------------------------------------------------------- sans-I/O


def test_a_json_line_is_spliced_byte_for_byte_and_other_lines_become_strings() -> None:
    line = b'{"b": 1,  "a":"\\u00e9"}'
    assert tap_line("agent", line, "2026-01-01T00:00:00.000Z") == (
        b'{"t":"2026-01-01T00:00:00.000Z","from":"agent","msg":' + line + b"}"
    )
    rec = tap_line("client", b"not json \xc3\xa9", "2026-01-01T00:00:00.000Z")
    assert json.loads(rec) == {"t": "2026-01-01T00:00:00.000Z", "from": "client", "msg": "not json é"}


def test_wiretap_gives_the_same_recording_and_events_whatever_the_chunking() -> None:
    agent = b'{"turn":"start"}\n{"n":1}\nplain text\n{"turn":"end"}\n'
    client = b'{"prompt":"hi"}\n'

    def run(step: int) -> tuple[list[bytes], str]:
        lines: list[bytes] = []
        wt = Wiretap(protocol="test-turns", clock=fixed_clock, record=lines.append)
        out = wt.feed(client[:step], "client") + wt.feed(client[step:], "client")
        for i in range(0, len(agent), step):
            out += wt.feed(agent[i : i + step], "agent")
        return lines, to_jsonl(out + wt.close())

    whole = run(len(agent))
    assert run(1) == whole
    assert run(7) == whole
    lines = whole[0]
    assert [_tap_parts(x) for x in lines] == [
        ("client", b'{"prompt":"hi"}'),
        ("agent", b'{"turn":"start"}'),
        ("agent", b'{"n":1}'),
        ("agent", b'"plain text"'),
        ("agent", b'{"turn":"end"}'),
    ]
    # converting the recording gives the live events (a line that is not JSON aside: live, the adapter
    # saw its bytes; recorded, it is a JSON string)
    again: list[bytes] = []
    wt = Wiretap(protocol="test-turns", clock=fixed_clock, record=again.append)
    live = wt.feed(client, "client") + wt.feed(agent.replace(b"plain text\n", b""), "agent") + wt.close()
    assert to_jsonl(_convert_bytes(b"".join(again), "test-turns")) == to_jsonl(live)


def test_wiretap_reports_a_killed_agent_as_failed_even_between_turns() -> None:
    wt = Wiretap(protocol="test-turns", clock=fixed_clock)
    wt.feed(b'{"turn":"start"}\n{"turn":"end"}\n', "agent")
    wt.returncode = -signal.SIGKILL
    tail = wt.close()
    assert isinstance(tail[-2], SessionFailed)
    assert tail[-2].error.error_type == "killed"
    assert isinstance(tail[-1], SessionStateChanged)
    assert tail[-1].state == "failed"


# ------------------------------------------------------- library, every capture


def _outcome(make: object) -> str:
    try:
        return to_jsonl(make())  # type: ignore[operator]
    except NormalizeError as exc:
        return type(exc).__name__


@pytest.mark.anyio
@pytest.mark.parametrize("capture", LIVE, ids=capture_id)
async def test_tap_of_a_fake_agent_records_what_crossed_and_gives_the_capture_events(capture: Path) -> None:
    protocol = _protocol(capture)
    wire = wire_lines(capture)
    recorded: list[bytes] = []
    agent_lines = 0

    def record(line: bytes) -> None:
        nonlocal agent_lines
        recorded.append(line)
        agent_lines += b'"from":"agent"' in line[:60]

    got: list[_Core] = []
    failed: str | None = None
    async with tap(
        agent_command(capture, "--speed", "0"), protocol=protocol, record=record, clock=fixed_clock
    ) as agent:

        async def client() -> None:
            before = 0
            for from_, _, line in wire:
                if from_ == "agent":
                    before += 1
                    continue
                while agent_lines < before:  # the agent's lines before this one crossed first
                    await anyio.sleep(0.001)
                await agent.send(line + b"\n")
            await agent.close_stdin()

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(client)
                got.extend([ev async for ev in agent])
        except NormalizeError as exc:  # an adapter that cannot read this capture fails the same way below
            failed = type(exc).__name__
    assert agent.returncode == 0
    assert [_tap_parts(x) for x in recorded] == [(f, line) for f, _, line in wire]
    want = _outcome(lambda: convert_records(records_of([capture]), protocol))
    if failed is not None:
        assert failed == want
        return
    live = to_jsonl(got)
    assert live == _outcome(lambda: _convert_bytes(b"".join(recorded), protocol))
    if capture.name.endswith(".tap.jsonl"):  # the live times are the relay's, not the recorded ones
        assert to_jsonl(without_ts(got)) == to_jsonl(without_ts(convert_records(records_of([capture]), protocol)))
    else:
        assert live == want


# ------------------------------------------------------------------- the CLI


def _cli_cases() -> list[Path]:
    """A two-way capture of each protocol that has one, and a one-way capture."""
    picked: dict[str, Path] = {}
    for c in LIVE:
        proto = _protocol(c)
        two_way = any(f == "client" for f, _, _ in wire_lines(c))
        if two_way and proto not in picked:
            picked[proto] = c
    plain = [c for c in LIVE if not c.name.endswith(".tap.jsonl")]
    return [*picked.values(), *plain[:1]]


async def _run_tap(
    tmp_path: Path,
    capture: Path,
    *tap_args: str,
    agent_args: tuple[str, ...] = ("--max-gap", "0.005"),
    slow: bool = False,
) -> tuple[int, bytes]:
    """Drive ``normalize tap`` as the agent's client would: returns its exit code and stderr."""
    cmd = [*NORMALIZE, "tap", *tap_args, "--", *agent_command(capture, *agent_args)]
    async with await anyio.open_process(cmd) as proc:
        assert proc.stdin is not None
        assert proc.stdout is not None
        assert proc.stderr is not None
        out = BufferedByteReceiveStream(proc.stdout)
        for from_, _, line in wire_lines(capture):
            if from_ == "agent":
                got = await out.receive_until(b"\n", 1 << 24)
                assert got == line  # byte for byte, in order
                if slow:
                    await anyio.sleep(0.002)
            else:
                await proc.stdin.send(line + b"\n")
        await proc.stdin.aclose()
        with pytest.raises(anyio.EndOfStream):
            await out.receive()
        err = b""
        async for chunk in proc.stderr:
            err += chunk
        return await proc.wait(), err


@pytest.mark.anyio
@pytest.mark.parametrize("capture", _cli_cases(), ids=capture_id)
async def test_cli_tap_is_transparent_and_records_and_normalizes(tmp_path: Path, capture: Path) -> None:
    protocol = _protocol(capture)
    rec, evs = tmp_path / "run.tap.jsonl", tmp_path / "events.jsonl"
    rc, err = await _run_tap(
        tmp_path, capture, "--protocol", protocol, "--record", str(rec), "--events", str(evs), slow=True
    )
    assert (rc, err) == (0, b"")
    recorded = rec.read_bytes().splitlines()
    assert [_tap_parts(x) for x in recorded] == [(f, line) for f, _, line in wire_lines(capture)]
    times = [wire_lines_of(x)[0] for x in recorded]
    assert times == sorted(times)
    lines = evs.read_bytes().splitlines()
    header = json.loads(lines[0])
    assert (header["type"], header["protocol"]) == ("stream.header", protocol)
    live = [decode(x) for x in lines[1:]]
    assert to_jsonl(live) == _outcome(lambda: _convert_bytes(rec.read_bytes(), protocol))  # type: ignore[arg-type]
    want = convert_records(records_of([capture]), protocol)
    assert to_jsonl(without_ts(live)) == to_jsonl(without_ts(want))  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_cli_tap_detects_the_protocol_and_events_dash_is_stderr(tmp_path: Path) -> None:
    capture = _cli_cases()[0]
    rc, err = await _run_tap(tmp_path, capture, "--events", "-", agent_args=("--speed", "0", "--stderr", "hi\n"))
    assert rc == 0
    first, *events = err.splitlines()
    assert first == b"hi"  # the agent's own stderr, untouched
    header = json.loads(events[0])
    assert header["protocol"] == _protocol(capture)
    assert [decode(x) for x in events[1:]]  # every other line is a normalized event


@pytest.mark.anyio
async def test_cli_tap_passes_the_exit_code_and_stderr(tmp_path: Path) -> None:
    capture = _cli_cases()[-1]
    rc, err = await _run_tap(
        tmp_path,
        capture,
        "--protocol",
        _protocol(capture),
        "--events",
        str(tmp_path / "e.jsonl"),
        agent_args=("--speed", "0", "--exit", "7", "--stderr", "warning: x\n"),
    )
    assert (rc, err) == (7, b"warning: x\n")


@pytest.mark.anyio
async def test_cli_tap_reports_a_killed_agent_as_failed(tmp_path: Path) -> None:
    capture = _cli_cases()[-1]
    pid_file, evs = tmp_path / "pid", tmp_path / "e.jsonl"
    agent = agent_command(capture, "--speed", "0", "--hang", "--pid-file", str(pid_file))
    cmd = [*NORMALIZE, "tap", "--protocol", _protocol(capture), "--events", str(evs), "--", *agent]
    async with await anyio.open_process(cmd) as proc:
        assert proc.stdout is not None
        out = BufferedByteReceiveStream(proc.stdout)
        for _ in wire_lines(capture):
            await out.receive_until(b"\n", 1 << 24)
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
        assert await proc.wait() == 128 + signal.SIGKILL
    last = [json.loads(x) for x in evs.read_bytes().splitlines()[-2:]]
    assert last[0]["type"] == "session.failed"
    assert last[1] == {"type": "session.stateChanged", "sessionId": last[0]["sessionId"], "state": "failed"}

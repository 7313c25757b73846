"""Live agents through the tap: bytes pass untouched both ways, the recording is what crossed,
the events are those of converting the capture, exit codes and deaths are reported."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import msgspec
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from fakes.wire import NORMALIZE, agent_command, wire_lines, without_made_up_ts, without_ts
from helpers import (
    ADAPTERS,
    ROOT,
    capture_id,
    companions,
    convert_records,
    fixed_clock,
    on_both_backends,
    records_of,
    session_captures,
    to_jsonl,
)
from normalize import (
    Adapter,
    CaptureParser,
    Direction,
    Error,
    Item,
    Message,
    NormalizeError,
    SessionEvent,
    SessionFailed,
    SessionStateChanged,
    Wiretap,
    decode,
    tap,
    tap_line,
)
from normalize._model import _Core
from normalize._tap import RelaySide

# the fake agents speak a small turn protocol of their own (tests/fakes/wire.py)
pytestmark = pytest.mark.usefixtures("turn_adapter")

# a database of stored sessions, or a chat kept as one JSON document, is not a stream an agent
# writes: a file read whole, not played by the fake agent
LIVE = [
    c for c in session_captures() if len(companions(c)) == 1 and c.suffix not in (".db", ".json") and not c.is_dir()
]


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
@pytest.mark.parametrize(("anyio_backend", "capture"), on_both_backends(LIVE))
async def test_tap_of_a_fake_agent_records_what_crossed_and_gives_the_capture_events(
    anyio_backend: str, capture: Path
) -> None:
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
    else:  # the times of made-up events: the relay's receive time live, the nearest native one stored
        assert to_jsonl(without_made_up_ts(got)) == to_jsonl(
            without_made_up_ts(convert_records(records_of([capture]), protocol))
        )


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


def test_a_banner_before_the_stream_does_not_stop_the_events() -> None:
    from normalize import SessionEvent

    hm = ADAPTERS / "hm-json" / "captures" / "hm-handwritten" / "01_plain_answer.jsonl"
    wt = Wiretap(clock=fixed_clock)
    out = wt.feed(b"hm 1.4 (update available: run hm upgrade)\n", "agent")
    out += wt.feed(hm.read_bytes(), "agent")
    out += wt.close()
    assert wt.error is None and wt.converter.protocol == "hm-json"
    kinds = [e.event.kind for e in out if isinstance(e, SessionEvent)]
    assert kinds[0] == "error" and "assistant-message" in kinds  # the banner kept, the stream read


# ------------------------------------------------- the relay never depends on parsing

DEEP = b"[" * 2000 + b"]" * 2000  # valid JSON, nested deeper than any decoder here recurses

_live_spec = importlib.util.spec_from_file_location("_live", ROOT / "fuzz" / "_live.py")
assert _live_spec is not None
assert _live_spec.loader is not None
live_invariant = sys.modules["_live"] = importlib.util.module_from_spec(_live_spec)
_live_spec.loader.exec_module(live_invariant)


def test_a_deeply_nested_line_is_recorded_as_text_and_reported_not_raised() -> None:
    as_text = json.dumps(DEEP.decode()).encode()
    assert _tap_parts(tap_line("agent", DEEP, "2026-01-01T00:00:00.000Z")) == ("agent", as_text)
    init = b'{"type":"system","subtype":"init","session_id":"s1","model":"m","tools":[]}'
    for protocol in (None, "claude-stream-json", "acp"):
        lines: list[bytes] = []
        wt = Wiretap(protocol=protocol, clock=fixed_clock, record=lines.append)
        out = wt.feed(DEEP + b"\n" + init + b"\n", "agent") + wt.feed(DEEP + b"\n", "client") + wt.close()
        assert [_tap_parts(x) for x in lines] == [("agent", as_text), ("agent", init), ("client", as_text)]
        errors = [e.event.body for e in out if isinstance(e, SessionEvent) and isinstance(e.event.body, Error)]
        assert [e.error_type for e in errors].count("malformed") >= 2, protocol
        # the recording reads back: a line this deep spliced in would make its tap line unreadable
        parser = CaptureParser()
        assert all(isinstance(r, Message) for r in [*parser.feed(b"".join(lines)), *parser.close()])


@pytest.mark.anyio
async def test_the_library_tap_goes_on_after_a_deeply_nested_line(tmp_path: Path) -> None:
    init = b'{"type":"system","subtype":"init","session_id":"s1","model":"m","tools":[]}'
    wire = DEEP + b"\n" + init + b"\n"
    script = f"import sys; sys.stdout.buffer.write({wire!r})"
    async with tap([sys.executable, "-c", script], protocol="claude-stream-json", clock=fixed_clock) as agent:
        got = [ev async for ev in agent]
    assert agent.returncode == 0
    natives = [
        bytes(e.event.native.payload)
        for e in got
        if isinstance(e, SessionEvent) and isinstance(e.event.native.payload, msgspec.Raw)
    ]
    assert init in natives  # the line after the deep one was read


def test_cli_tap_relays_everything_after_a_deeply_nested_line(tmp_path: Path) -> None:
    data = DEEP + b"\n" + b'{"after":1}\n' + DEEP + b"\nthe end\n"
    rec, evs = tmp_path / "r.tap.jsonl", tmp_path / "e.jsonl"
    cmd = [*NORMALIZE, "tap", "--record", str(rec), "--events", str(evs), "--", "cat"]
    done = subprocess.run(cmd, input=data, capture_output=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (0, data)  # every byte, also after the deep lines
    assert b"Traceback" not in done.stderr
    recorded = [_tap_parts(x) for x in rec.read_bytes().splitlines()]
    as_text = json.dumps(DEEP.decode()).encode()
    for side in ("client", "agent"):
        assert [msg for f, msg in recorded if f == side] == [as_text, b'{"after":1}', as_text, b'"the end"']
    assert evs.read_bytes() == b""  # nothing detected (cat's lines are no agent's), and nothing lost either


class _Broken(Adapter):
    """An adapter with a bug: every message raises."""

    protocol = "test-broken"
    agent = "test-agent"

    def feed(self, message: bytes, from_: Direction = "agent") -> list[Item]:
        raise RuntimeError("a bug")

    def close(self) -> list[Item]:
        return []


def test_the_relay_forwards_and_records_when_normalizing_raises() -> None:
    lines: list[bytes] = []
    told: list[Exception] = []
    delivered: list[_Core] = []
    side = RelaySide(Wiretap(adapter=_Broken(), record=lines.append), delivered.extend, told.append)
    chunks = [(b'{"a":1}\n{"b"', "agent"), (b":2}\n", "agent"), (b'{"c":3}\n', "client")]
    assert [side.take(data, from_) for data, from_ in chunks] == [data for data, _ in chunks]  # type: ignore[arg-type]
    side.flush()
    side.close()
    assert [type(e).__name__ for e in told] == ["RuntimeError"]  # told once
    assert [_tap_parts(x) for x in lines] == [("agent", b'{"a":1}'), ("agent", b'{"b":2}'), ("client", b'{"c":3}')]

    # and a consumer of the events that raises stops the events, not the relay
    def refuse(events: list[_Core]) -> None:
        raise OSError("disk full")

    told.clear()
    side = RelaySide(Wiretap(protocol="test-turns", clock=fixed_clock), refuse, told.append)
    for _ in range(2):
        assert side.take(b'{"turn":"start"}\n', "agent") == b'{"turn":"start"}\n'
        side.flush()
    side.close()
    assert [str(e) for e in told] == ["disk full"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    protocol=st.sampled_from([None, "claude-stream-json", "codex-app-server", "acp", "hm-json"]),
    chunks=st.lists(
        st.tuples(
            st.sampled_from(["agent", "client"]),
            st.one_of(
                st.binary(max_size=200),
                st.lists(
                    st.sampled_from(
                        [
                            b"\n",
                            b"\r\n",
                            b"{",
                            b"}",
                            b"[",
                            b"]",
                            b'"a":',
                            b"1",
                            b",",
                            b"\xff",
                            b'{"type":"system"}',
                            b'{"jsonrpc":"2.0","id":1,"result":{}}',
                            DEEP,
                        ]
                    ),
                    max_size=30,
                ).map(b"".join),
            ),
        ),
        max_size=12,
    ),
)
# a JSON line with blanks around its value: spliced as it is, read back without them
@example(protocol=None, chunks=[("agent", b"\t"), ("agent", b'{"":""}')])
@example(protocol="acp", chunks=[("client", b'  {"jsonrpc":"2.0","id":1,"result":{}} \r\n')])
def test_any_bytes_both_ways_cross_the_relay_unchanged_and_are_recorded(
    protocol: str | None, chunks: list[tuple[Direction, bytes]]
) -> None:
    live_invariant.check_relay(protocol, chunks)


# ------------------------------------------------- readers that stop, agents that leave


def _agent_writing(capture: Path, times: int, *, then: str = "") -> list[str]:
    """An agent writing a capture's lines ``times`` times, dying of SIGPIPE as a C program would."""
    script = (
        "import signal, sys; signal.signal(signal.SIGPIPE, signal.SIG_DFL)\n"
        f"data = open({str(capture)!r}, 'rb').read()\n"
        f"for _ in range({times}):\n    sys.stdout.buffer.write(data)\n    sys.stdout.buffer.flush()\n{then}"
    )
    return [sys.executable, "-c", script]


def test_cli_tap_whose_reader_stops_ends_quietly_and_completes_its_files(tmp_path: Path) -> None:
    # normalize tap ... | head -1
    capture = _cli_cases()[-1]
    rec, evs = tmp_path / "r.tap.jsonl", tmp_path / "e.jsonl"
    cmd = [*NORMALIZE, "tap", "--protocol", _protocol(capture), "--record", str(rec), "--events", str(evs), "--"]
    with subprocess.Popen(
        [*cmd, *_agent_writing(capture, 2000)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        assert proc.stdout is not None
        proc.stdout.readline()
        proc.stdout.close()  # the reader is gone
        _, err = proc.communicate(timeout=60)
    assert b"Traceback" not in err
    assert err == b""
    assert proc.returncode == 128 + signal.SIGPIPE  # the agent met the closed pipe, as it would without us
    recorded = rec.read_bytes()
    assert recorded.endswith(b"\n")
    assert all(_tap_parts(x)[0] == "agent" for x in recorded.splitlines())
    lines = evs.read_bytes().splitlines()
    assert json.loads(lines[0])["type"] == "stream.header"
    last = json.loads(lines[-1])
    assert (last["type"], last["state"]) in {("session.stateChanged", "failed"), ("session.stateChanged", "ended")}


def test_cli_tap_events_on_stderr_never_block_the_relay(tmp_path: Path) -> None:
    # a client that reads stdout to its end, then stderr: the events (far more than a pipe
    # holds) must wait for it without stopping the agent's output
    capture = _cli_cases()[-1]
    times = max(1, 400_000 // capture.stat().st_size)
    agent = _agent_writing(capture, times)
    cmd = [*NORMALIZE, "tap", "--protocol", _protocol(capture), "--events", "-", "--", *agent]
    with subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        assert proc.stderr is not None
        timer = threading.Timer(60, proc.kill)  # without the fix: a deadlock, ended here
        timer.start()
        try:
            out = proc.stdout.read()
            err = proc.stderr.read()
        finally:
            timer.cancel()
    assert proc.returncode == 0
    assert out == capture.read_bytes() * times
    events = err.splitlines()
    assert len(err) > 1 << 20  # far more than a pipe holds
    assert json.loads(events[0])["type"] == "stream.header"
    assert json.loads(events[-1])["type"] == "session.stateChanged"


def test_cli_tap_ends_when_the_agent_exits_though_a_grandchild_holds_its_stdout(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild"
    script = (
        "import subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "print('{\"last\":1}', flush=True)\n"
    )
    rec = tmp_path / "r.tap.jsonl"
    cmd = [*NORMALIZE, "tap", "--record", str(rec), "--", sys.executable, "-c", script]
    try:
        # (the grandchild holds the stderr it inherited too: a file here, not a pipe read to its end)
        with (tmp_path / "stderr").open("wb") as err:
            done = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, timeout=60)
    finally:
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert (done.returncode, done.stdout) == (0, b'{"last":1}\n')  # what the agent wrote before exiting
    assert [_tap_parts(x) for x in rec.read_bytes().splitlines()] == [("agent", b'{"last":1}')]


def test_the_events_spool_keeps_order_through_memory_and_disk_while_nobody_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from normalize import _cli_live

    monkeypatch.setattr(_cli_live, "SPOOL_MEMORY", 1000)  # the disk takes over early
    r, w = os.pipe()
    with os.fdopen(w, "wb") as target, os.fdopen(r, "rb") as reader:
        spool = _cli_live._Spool(target)
        chunks = [b"%06d " % i * (1 + i % 50) + b"\n" for i in range(5000)]  # far more than the pipe holds
        for chunk in chunks:
            spool.write(chunk)  # never waits, though nothing reads yet
        got: list[bytes] = []
        thread = threading.Thread(target=lambda: got.append(reader.read()))
        thread.start()
        assert spool.close() is None
        target.close()
        thread.join(timeout=60)
    assert got == [b"".join(chunks)]

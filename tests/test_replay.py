"""Replay re-emits a session's events as origin "replay", at the recorded pace, resumable from a seq."""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

import anyio
import pytest
from msgspec import structs

from fakes.wire import NORMALIZE
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
from normalize import CaptureParser, NormalizeError, Pacer, SessionEvent, decode, replay
from normalize._model import _Core

# the fake agents speak a small turn protocol of their own (tests/fakes/wire.py)
pytestmark = pytest.mark.usefixtures("turn_adapter")

TAPS = [c for c in session_captures() if c.name.endswith(".tap.jsonl") and len(companions(c)) == 1]


def _as_replay(events: list[_Core]) -> list[_Core]:
    return [
        structs.replace(e, event=structs.replace(e.event, origin="replay")) if isinstance(e, SessionEvent) else e
        for e in events
    ]


def _event(ts: str) -> SessionEvent:
    line = b'{"t":"' + ts.encode() + b'","from":"agent","msg":{"turn":"start"}}\n'
    return next(e for e in convert_records(CaptureParser().feed(line), "test-turns") if isinstance(e, SessionEvent))


def test_the_pacer_waits_by_recorded_time_divided_by_speed() -> None:
    a, b, c = (_event(f"2026-01-01T00:00:0{s}.000Z") for s in (1, 3, 2))
    pacer = Pacer(2.0)
    assert [pacer.due(a), pacer.due(b), pacer.due(c)] == [0.0, 1.0, None]  # backwards: not waited for
    assert Pacer(0).due(b) is None
    assert Pacer(1.0, untimed=b.event.ts).due(b) is None


async def _replay(capture: Path, *, speed: float, from_seq: int = 0) -> list[_Core]:
    protocol = capture.relative_to(ADAPTERS).parts[0]
    return [e async for e in replay(capture, protocol=protocol, clock=fixed_clock, speed=speed, from_seq=from_seq)]


@pytest.mark.anyio
@pytest.mark.parametrize("capture", TAPS, ids=capture_id)
async def test_replay_gives_the_recorded_events_as_replay_and_resumes_after_a_seq(capture: Path) -> None:
    protocol = capture.relative_to(ADAPTERS).parts[0]
    try:
        want = _as_replay(convert_records(records_of([capture]), protocol, origin="replay"))
    except NormalizeError:  # an adapter unable to read this capture is not replay's concern
        pytest.skip("the adapter cannot convert this capture")
    got = await _replay(capture, speed=0)
    assert to_jsonl(got) == to_jsonl(want)
    assert all(e.event.origin == "replay" for e in got if isinstance(e, SessionEvent))
    seqs = [e.event.seq for e in got if isinstance(e, SessionEvent)]
    n = seqs[len(seqs) // 2]
    after = next(i for i, e in enumerate(got) if isinstance(e, SessionEvent) and e.event.seq == n) + 1
    assert to_jsonl(await _replay(capture, speed=0, from_seq=n)) == to_jsonl(got[after:])


def _paced_file(tmp_path: Path) -> Path:
    path = tmp_path / "paced.tap.jsonl"
    lines = [
        ("00.000", b'{"turn":"start"}'),
        ("00.200", b'{"n":1}'),
        ("00.400", b'{"turn":"end"}'),
    ]
    path.write_bytes(
        b"".join(b'{"t":"2026-01-01T00:00:%s","from":"agent","msg":%s}\n' % (t.encode(), m) for t, m in lines)
    )
    return path


@pytest.mark.anyio
async def test_replay_keeps_the_recorded_pacing(tmp_path: Path) -> None:
    path = _paced_file(tmp_path)
    times = [
        anyio.current_time()
        async for ev in replay(path, protocol="test-turns", speed=2.0)
        if isinstance(ev, SessionEvent)
    ]
    gaps = [round(b - a, 2) for a, b in itertools.pairwise(times)]
    assert all(g >= 0.09 for g in gaps[-2:]), gaps  # 0.2 s recorded at speed 2
    assert times[-1] - times[0] < 0.4
    start = anyio.current_time()
    assert [e async for e in replay(path, protocol="test-turns", speed=0)]
    assert anyio.current_time() - start < 0.1


def test_cli_replay_writes_the_header_then_the_events(tmp_path: Path) -> None:
    capture = TAPS[0]
    out = subprocess.run(
        [*NORMALIZE, "replay", str(capture), "--speed", "0", "--from-seq", "1"],
        capture_output=True,
        check=True,
        timeout=30,
    ).stdout.splitlines()
    assert b'"type":"stream.header"' in out[0]
    events = [decode(x) for x in out[1:]]
    evs = [e for e in events if isinstance(e, SessionEvent)]
    assert evs
    assert evs[0].event.seq == 2
    assert {e.event.origin for e in evs} == {"replay"}


def test_cli_replay_whose_reader_stops_ends_quietly(tmp_path: Path) -> None:
    # normalize replay FILE | head -1
    capture = tmp_path / "many.tap.jsonl"
    capture.write_bytes(TAPS[0].read_bytes() * 50)
    cmd = [*NORMALIZE, "replay", "--speed", "0", str(capture)]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        proc.stdout.readline()
        proc.stdout.close()
        _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (0, b"")  # no BrokenPipeError traceback

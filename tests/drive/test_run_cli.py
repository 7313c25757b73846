"""``normalize run``: prompts in order, approvals by policy, the events written, the exit status."""

from __future__ import annotations

from pathlib import Path

import pytest

import normalize
from normalize._cli import main
from normalize._drive import _core

TINY = "tiny:TinyAcp"


@pytest.fixture(autouse=True)
def tiny_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(_core.BACKENDS, "tiny", TINY)
    monkeypatch.setitem(_core.BACKENDS, "ghost", "tiny:Ghost")


def _events(path: Path) -> list[normalize.SessionEvent]:
    lines = path.read_bytes().splitlines()
    assert b'"type":"stream.header"' in lines[0] or lines[0].startswith(b'{"type":"stream')
    return [e for e in map(normalize.decode, lines[1:]) if isinstance(e, normalize.SessionEvent)]


@pytest.mark.parametrize(("policy", "decision"), [("allow", "allow"), ("deny", "deny")])
def test_two_prompts_and_an_approval_by_policy(tmp_path: Path, policy: str, decision: str) -> None:
    out, rec = tmp_path / "events.jsonl", tmp_path / "run.tap.jsonl"
    argv = ["run", "tiny", "--approve", policy, "--prompt", "one", "--prompt", "ask"]
    code = main([*argv, "--cwd", str(tmp_path), "-o", str(out), "--record", str(rec)])
    assert code == 0
    bodies = [e.event.body for e in _events(out)]
    assert [b.reason for b in bodies if isinstance(b, normalize.TurnComplete)] == ["ok", "ok"]
    (resolved,) = [b for b in bodies if isinstance(b, normalize.RequestResolved)]
    assert resolved.decision == decision
    # the written stream is what converting the recording gives
    converted = [normalize.encode(e) for e in normalize.events(normalize.read_records([rec]))]
    assert out.read_bytes().splitlines()[1:] == converted


def test_prompts_from_standard_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.StringIO("first\n\nsecond\n"))
    out = tmp_path / "events.jsonl"
    assert main(["run", "tiny", "--cwd", str(tmp_path), "-o", str(out)]) == 0
    texts = [e.event.body.text for e in _events(out) if isinstance(e.event.body, normalize.AssistantMessage)]
    assert texts == ["echo: first", "echo: second"]


def test_a_turn_that_fails_is_exit_status_1(tmp_path: Path) -> None:
    out = tmp_path / "events.jsonl"
    assert main(["run", "tiny", "--cwd", str(tmp_path), "-o", str(out), "--prompt", "die", "--prompt", "x"]) == 1
    decoded = [normalize.decode(line) for line in out.read_bytes().splitlines()[1:]]
    assert any(isinstance(e, normalize.SessionFailed) for e in decoded)


def test_a_turn_timeout_cancels_the_turn(tmp_path: Path) -> None:
    out = tmp_path / "events.jsonl"
    argv = ["run", "tiny", "--cwd", str(tmp_path), "-o", str(out), "--turn-timeout", "0.5", "--prompt", "slow"]
    assert main(argv) == 1  # interrupted, not completed
    bodies = [e.event.body for e in _events(out)]
    assert [b.reason for b in bodies if isinstance(b, normalize.TurnComplete)] == ["interrupt"]


def test_a_missing_agent_is_127(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "ghost", "--cwd", str(tmp_path), "--prompt", "x"]) == 127
    assert "no-such-agent-anywhere: not found" in capsys.readouterr().err


def test_acp_needs_a_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "acp", "--prompt", "x"]) == 2
    assert "COMMAND" in capsys.readouterr().err


def test_ctrl_c_cancels_the_turn_then_stops(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    here = Path(__file__).parent
    launcher = (
        f"import sys; sys.path.insert(0, {str(here)!r}); from normalize._drive import _core; "
        f"_core.BACKENDS['tiny'] = {TINY!r}; from normalize._cli import main; sys.exit(main(sys.argv[1:]))"
    )
    out = tmp_path / "events.jsonl"
    argv = [sys.executable, "-c", launcher, "run", "tiny", "--cwd", str(tmp_path), "-o", str(out)]
    proc = subprocess.Popen([*argv, "--prompt", "slow", "--prompt", "next"], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while b"assistant-delta" not in (out.read_bytes() if out.exists() else b""):
        assert time.monotonic() < deadline, "the turn never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert b"cancelling the turn" in err
    assert proc.returncode == 1  # the turn was interrupted, not completed; the next prompt was not sent
    bodies = [e.event.body for e in _events(out)]
    assert [b.reason for b in bodies if isinstance(b, normalize.TurnComplete)] == ["interrupt"]


def test_show_serves_the_run_live(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys
    import urllib.request

    pytest.importorskip("markdown_it")
    here = Path(__file__).parent
    launcher = (
        f"import sys; sys.path.insert(0, {str(here)!r}); from normalize._drive import _core, _cli; "
        f"_core.BACKENDS['tiny'] = {TINY!r}; "
        "_cli._self_command = lambda: [sys.executable, '-c', LAUNCHER]; "
        "from normalize._cli import main; sys.exit(main(sys.argv[1:]))"
    )
    launcher = f"LAUNCHER = {launcher!r}; " + launcher  # the child runs the same launcher
    out = tmp_path / "events.jsonl"
    argv = [sys.executable, "-c", launcher, "run", "tiny", "--show", "--cwd", str(tmp_path), "-o", str(out)]
    with subprocess.Popen([*argv, "--prompt", "one"], stderr=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stderr is not None
            line = proc.stderr.readline()
            url = line[line.index("http://") :].split()[0]
            assert "the agent exited (0)" in proc.stderr.readline()
            with urllib.request.urlopen(url + "events", timeout=20) as stream:
                raw = ""
                while not raw.startswith("data: "):
                    raw = stream.readline().decode()
            assert "echo: one" in json.loads(raw[6:])
        finally:
            proc.terminate()
            assert proc.wait(timeout=10) == 0  # the run's own exit status: every turn completed
    assert b"echo: one" in out.read_bytes()  # the events still went where -o said

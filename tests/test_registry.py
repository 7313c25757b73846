"""Adapters are found through the ``normalize.adapters`` entry points, a third party's too."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import normalize
from normalize import _registry

THIRD_PARTY = """
import normalize

class EchoAdapter(normalize.Adapter):
    protocol = "echo-json"
    agent = "echo"

    @classmethod
    def detect(cls, sample):
        return 1.0 if sample[0][0].startswith(b'{"echo"') else 0.0

    def feed(self, message, from_="agent"):
        self._check_open()
        return [normalize.AssistantMessage(message_id="m", text=message.decode())]
"""


@pytest.fixture
def third_party(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An installed distribution (a dist-info on sys.path) that registers an adapter."""
    (tmp_path / "echo_adapter.py").write_text(THIRD_PARTY)
    info = tmp_path / "echo_adapter-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-adapter\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[normalize.adapters]\necho-json = echo_adapter:EchoAdapter\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(_registry, "_loaded", None)
    yield tmp_path
    _registry._loaded = None  # forget the third party for the tests that follow


def test_a_third_party_adapter_registers_through_the_entry_point_group(third_party: Path) -> None:
    cls = normalize.adapter_class("echo-json")
    assert cls.__name__ == "EchoAdapter"
    assert normalize.detect_protocol([(b'{"echo": 1}', "agent")]) == "echo-json"
    assert "hm-json" in normalize.available()  # the built-in ones are found the same way


def test_the_cli_uses_a_third_party_adapter(third_party: Path, tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    f.write_bytes(b'{"echo": 1}\n')
    env = {**os.environ, "PYTHONPATH": str(third_party)}
    cli = [sys.executable, "-m", "normalize"]
    detected = subprocess.run([*cli, "detect", str(f)], capture_output=True, text=True, env=env, check=True)
    assert detected.stdout.split() == [str(f), "echo-json"]
    converted = subprocess.run([*cli, "convert", str(f)], capture_output=True, text=True, env=env, check=True)
    assert '"kind":"assistant-message"' in converted.stdout and '"agent":"echo"' in converted.stdout


def test_unknown_protocol_and_unknown_format_are_clear_errors() -> None:
    with pytest.raises(normalize.UsageError, match="no adapter for protocol 'nope'"):
        normalize.adapter_class("nope")
    with pytest.raises(normalize.DetectionError, match="unknown format"):
        normalize.detect_protocol([(b'{"certainly": "not an agent"}', "agent")])
    with pytest.raises(normalize.DetectionError, match="empty input"):
        normalize.detect_protocol([])


def test_register_in_process() -> None:
    from scripted import ScriptedAdapter

    normalize.register(ScriptedAdapter)
    try:
        assert normalize.detect_protocol([(b'{"do":[]}', "agent")]) == "scripted"
    finally:
        normalize.unregister("scripted")
    assert "scripted" not in normalize.available()


def test_detection_survives_a_message_nested_too_deeply_to_decode() -> None:
    deep = b'{"jsonrpc":"2.0","method":"x","params":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with pytest.raises(normalize.DetectionError, match="unknown format"):
        normalize.detect_protocol([(deep, "agent")])


def test_a_deep_message_in_the_sample_does_not_hide_the_protocol() -> None:
    deep = b'{"type":"assistant","message":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    first = b'{"v":1,"type":"session_start","session":"S","time":"2026-01-01T00:00:00Z","root":"/","mode":"auto"}'
    assert normalize.detect_protocol([(first, "agent"), (deep, "agent")]) == "hm-json"

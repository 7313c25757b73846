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
from normalize._codec import encode_header

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


# ------------------------------------------------------------ detection tolerates what it does not know

ROOT = Path(__file__).resolve().parent.parent
HM = ROOT / "adapters" / "hm-json" / "captures" / "hm-handwritten" / "01_plain_answer.jsonl"
CODEX_EXEC = ROOT / "adapters" / "codex-exec-json" / "captures" / "codex-0.171.0" / "shell_command.jsonl"
ROLLOUT = ROOT / "adapters" / "codex-rollout" / "captures" / "codex-0.171.0"
BANNER = b"Loading configuration... done"


def _lines(path: Path) -> list[bytes]:
    return [line for line in path.read_bytes().splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("path", "protocol", "unknown"),
    [
        (HM, "hm-json", b'{"v":1,"type":"brand_new_notice","session":"20261106-k3j9x2","level":3}'),
        (CODEX_EXEC, "codex-exec-json", b'{"type":"thread.brand_new","detail":{"level":3}}'),
    ],
    ids=["hm-json", "codex-exec-json"],
)
def test_a_banner_and_an_unknown_line_type_do_not_hide_the_protocol(
    path: Path, protocol: str, unknown: bytes, tmp_path: Path
) -> None:
    lines = _lines(path)
    crafted = [BANNER, lines[0], unknown, *lines[1:]]
    assert normalize.detect_protocol([(x, "agent") for x in crafted[:20]]) == protocol
    f = tmp_path / "s.jsonl"
    f.write_bytes(b"\n".join(crafted) + b"\n")
    (inp,) = normalize.find_inputs([f])
    assert isinstance(inp, normalize.SessionInput) and inp.protocol == protocol
    evs = list(normalize.events(normalize.read_records([f])))
    updates = [e for e in evs if isinstance(e, normalize.SessionUpdate) and e.update.method is not None]
    assert [bytes(u.update.payload) for u in updates if b"brand_new" in bytes(u.update.payload)] == [unknown]
    errors = [e for e in evs if isinstance(e, normalize.SessionEvent) and e.event.kind == "error"]
    assert [e.event.native.payload for e in errors] == [BANNER.decode()]  # the banner is kept, as text
    assert sum(isinstance(e, normalize.SessionEvent) for e in evs) > 5


def test_a_rollout_starting_with_an_unknown_line_type_is_still_a_rollout() -> None:
    first = sorted(ROLLOUT.glob("exec-*.jsonl"))[0]
    lines = _lines(first)
    unknown = b'{"timestamp":"2026-01-01T00:00:00.000Z","type":"brand_new","payload":{"x":1}}'
    assert normalize.detect_protocol([(x, "agent") for x in [unknown, *lines][:20]]) == "codex-rollout"


def test_a_stream_of_lines_nobody_knows_is_still_unknown() -> None:
    with pytest.raises(normalize.DetectionError, match="unknown format"):
        normalize.detect_protocol([(b'{"v":1,"type":"nothing_known","session":"s"}', "agent"), (BANNER, "agent")])
    with pytest.raises(normalize.DetectionError, match="unknown format"):
        normalize.detect_protocol([(BANNER, "agent")])


def test_normalize_output_is_recognised_as_not_a_session(tmp_path: Path) -> None:
    events = list(normalize.events(normalize.read_records([HM])))
    header = encode_header(library_version="1", input="x", protocol="hm-json")
    lines = [header, *(normalize.encode(e) for e in events)]
    with pytest.raises(normalize.NotASession):
        normalize.detect_protocol([(x, "agent") for x in lines[:20]])
    f = tmp_path / "out.jsonl"
    f.write_bytes(b"\n".join(lines) + b"\n")
    (found,) = normalize.find_inputs([f])
    assert isinstance(found, normalize.NotASession) and str(f) in found.message


def _found(item: normalize.SessionInput | normalize.DetectionError) -> tuple[object, ...]:
    if isinstance(item, normalize.DetectionError):
        return (type(item).__name__, item.message)
    return (item.main, item.protocol, tuple(item.companions), item.key)


def test_a_pool_of_workers_finds_the_sessions_one_process_finds(monkeypatch: pytest.MonkeyPatch) -> None:
    """``find_inputs(pool=)``: the workers detect the files, the inputs (companions, errors, order) are the same.

    Over every kit (Claude's sub-agents in both layouts, OpenCode databases, files nobody
    recognises) and the golden outputs (normalize's own streams: not sessions)."""
    import concurrent.futures

    from helpers import ADAPTERS, GOLDEN
    from normalize import _convert

    serial = {root: [_found(i) for i in normalize.find_inputs([root])] for root in (ADAPTERS, GOLDEN)}
    here: list[Path] = []  # the files detected in this process, not by a worker
    protocol_of = _convert._protocol_of

    def counted(path: Path, protocol: str | None, max_line: int) -> str:
        here.append(path)
        return protocol_of(path, protocol, max_line)

    with concurrent.futures.ProcessPoolExecutor(max_workers=2) as pool:
        pool.submit(int).result()  # the workers start before the count does
        monkeypatch.setattr(_convert, "_protocol_of", counted)
        for root, want in serial.items():
            assert [_found(i) for i in normalize.find_inputs([root], pool=pool)] == want
    sessions = sum(1 for found in serial.values() for f in found if len(f) == 4)
    assert sessions > 300
    # what is left to this process: the files that may be another's companion by name, when still needed
    files = sorted(p for p in ADAPTERS.rglob("*.jsonl") if p.is_file())
    folder = _convert._Folder(files)
    assert here and all(folder.may_be_companion(f) for f in here)
    assert len(here) < sessions / 10


# ------------------------------------------------------------ every kit's edge cases are found by detection

EDGE_CAPTURES = sorted(
    p for p in (ROOT / "adapters").glob("*/captures/edge-cases/*") if p.is_file() and p.stat().st_size
)


@pytest.mark.parametrize("capture", EDGE_CAPTURES, ids=lambda p: f"{p.parts[-4]}/{p.name}")
def test_an_edge_case_is_detected_as_its_kit_s_protocol(capture: Path) -> None:
    """A file with a bad line (not UTF-8, nested too deeply, cut, a BOM) is still found as its
    agent's: ``stats`` or ``convert`` over a folder reads it without ``--protocol``."""
    from normalize._convert import detect_file, is_store, store_inputs

    protocol = capture.parts[-4]
    if is_store(capture):
        assert {i.protocol for i in store_inputs(capture)} == {protocol}
    else:
        assert detect_file(capture) == protocol

"""normalize show: every capture renders, the page is built from events, everything from the agent is data."""

from __future__ import annotations

import html
import json
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

import pytest
from rich.console import Console

from helpers import ADAPTERS, capture_files, capture_id, golden_path, protocol_of
from hostile import hostile_jsonl, payloads
from normalize import McpTool, SessionEvent, ToolCall, UserMessage, events, find_inputs, read_records
from normalize._cli import main
from normalize._convert import store_records
from normalize._show._build import Builder, Call, Notice, SessionView, SubagentView, Text, UserItem
from normalize._show._html import render_page
from normalize._show._read import Input, read
from normalize._show._terminal import render_terminal

CAPTURES = capture_files()
STREAM_JSON = ADAPTERS / "claude-stream-json" / "captures" / "claude-code-2.1.332"


def _input(capture: Path) -> Input:
    inp = next(iter(find_inputs([capture], protocol=protocol_of(capture))))
    assert not isinstance(inp, Exception)
    return Input(inp.main, inp.protocol, inp.companions, inp.key)


def _sessions(capture: Path) -> list[SessionView]:
    return read(_input(capture))


class _Tags(HTMLParser):
    """Every start tag of a page with its attributes, and the text of its script and style elements."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _tags(page: str) -> list[tuple[str, dict[str, str | None]]]:
    p = _Tags()
    p.feed(page)
    return p.tags


@pytest.mark.parametrize("capture", CAPTURES, ids=capture_id)
def test_every_capture_renders_with_its_prompts_and_tool_names(capture: Path) -> None:
    inp = _input(capture)
    sessions = read(inp)
    page = render_page(sessions)
    for turn in (t for s in sessions for t in s.real_turns):  # the timeline never shows more time than the turn took
        if turn.start is not None and turn.end is not None:
            assert sum(turn.phases.values()) <= turn.end - turn.start + 1e-6
    prompts: set[str] = set()
    tools: dict[str, str] = {}  # call id -> its last name (a placeholder may come first)
    records = store_records(inp.main, inp.key) if inp.key is not None else read_records(inp.paths)
    for ev in events(records, protocol=inp.protocol):
        if not isinstance(ev, SessionEvent):
            continue
        body = ev.event.body
        if isinstance(body, UserMessage) and body.text.strip():
            prompts.add(body.text)
        elif isinstance(body, ToolCall) and body.tool:
            tools[body.call_id] = body.tool
        elif isinstance(body, McpTool):
            tools.setdefault(body.call_id, f"{body.server}/{body.tool}")  # a tool-call's own name wins
    assert page.startswith("<!DOCTYPE html>") and page.endswith("</html>")
    for text in prompts | set(tools.values()):
        assert html.escape(text) in page, text
    scripts = [a for t, a in _tags(page) if t == "script"]
    assert len(scripts) == 1, "the page's own script only"


def test_a_normalized_stream_shows_what_its_native_capture_shows() -> None:
    capture = STREAM_JSON / "24-subagent-with-tool.jsonl"
    native = _sessions(capture)
    stored = read(Input(golden_path(capture)))

    def shape(sessions: list[SessionView]) -> list[object]:
        out: list[object] = []
        for s in sessions:
            for t in s.turns:
                out.extend((type(i).__name__, getattr(i, "tool", None), getattr(i, "text", None)) for i in t.items)
        return out

    assert shape(stored) == shape(native)
    assert len(shape(native)) > 2


def _calls(session: SessionView) -> list[Call]:
    return [i for t in session.turns for i in t.items if isinstance(i, Call)]


@pytest.mark.parametrize(
    ("case", "outcome"), [("15-permission-stdio-deny", "denied"), ("16-permission-stdio-allow", "allowed")]
)
def test_the_approval_asked_and_its_outcome_belong_to_the_tool_call(case: str, outcome: str) -> None:
    (session,) = _sessions(STREAM_JSON / f"{case}.tap.jsonl")
    (call,) = [c for c in _calls(session) if c.permission is not None and c.permission.request_id is not None]
    assert call.tool == "Bash"
    assert call.permission is not None and call.permission.outcome == outcome
    page = render_page([session])
    assert f"approval: {outcome}" in page


def test_a_subagent_is_nested_under_the_call_that_spawned_it() -> None:
    (session,) = _sessions(STREAM_JSON / "24-subagent-with-tool.jsonl")
    calls = _calls(session)
    assert [c.tool for c in calls] == ["Agent"], "the sub-agent's own calls are not top-level"
    sub = calls[0].subagent
    assert isinstance(sub, SubagentView)
    inner = [i for i in sub.items if isinstance(i, Call)]
    assert [c.tool for c in inner] == ["Bash"]
    assert inner[0].output is not None and "hello.txt" in str(inner[0].output)
    assert any(isinstance(i, UserItem) for i in sub.items)


def test_replayed_history_is_marked() -> None:
    capture = next(c for c in CAPTURES if "claude-transcript" in c.parts and "16-permission-stdio-allow" in c.parts)
    (session,) = _sessions(capture)
    assert session.replayed == session.events > 0
    assert all(t.replay for t in session.real_turns)
    page = render_page([session])
    assert "replayed history" in page
    live = render_page(_sessions(STREAM_JSON / "16-permission-stdio-allow.tap.jsonl"))
    assert "replayed history" not in live


def test_an_error_is_marked_once() -> None:
    (session,) = _sessions(STREAM_JSON / "17-api-error-400.jsonl")
    errors = [i for t in session.turns for i in t.items if isinstance(i, Notice) and i.kind == "error"]
    assert [e.message for e in errors] == ["API Error: 400 fake server: scripted invalid request"]
    assert 'class="item notice error"' in render_page([session])


def test_usage_per_turn_and_for_the_session() -> None:
    (session,) = _sessions(STREAM_JSON / "16-permission-stdio-allow.tap.jsonl")
    (turn,) = session.real_turns
    assert turn.tokens["input"] == 27499 and turn.tokens["output"] == 57
    assert turn.cost == pytest.approx(0.111136)
    assert session.cost == pytest.approx(0.111136)
    assert "27,499 in · 57 out" in render_page([session])


def test_deltas_without_a_final_message_still_give_the_text() -> None:
    b = Builder()
    for ev in events(
        read_records([STREAM_JSON / "16-permission-stdio-allow.tap.jsonl"]), protocol="claude-stream-json"
    ):
        b.feed(ev)
    texts = [i for s in b.sessions.values() for t in s.turns for i in t.items if isinstance(i, Text)]
    assert texts and all(t.text for t in texts)


def test_the_timeline_splits_a_turn_into_model_tool_and_approval_time() -> None:
    (session,) = _sessions(STREAM_JSON / "16-permission-stdio-allow.tap.jsonl")
    phases = session.phases
    assert set(phases) == {"model", "tool", "approval"}
    (turn,) = session.real_turns
    assert turn.start is not None and turn.end is not None
    assert sum(phases.values()) == pytest.approx(turn.end - turn.start)


def test_hostile_values_are_data_in_the_html() -> None:
    page = render_page(read(_write(Path("/nonexistent"), "http://127.0.0.1:9")))
    tags = _tags(page)
    assert [t for t, _ in tags].count("script") == 1
    assert [t for t, _ in tags].count("style") == 1
    assert [t for t, _ in tags].count("svg") == 1  # the timeline's
    for tag, attrs in tags:
        assert tag not in ("img", "iframe", "base", "object", "embed", "link", "form"), tag
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            assert name != "style", tag
            assert not (value or "").strip().lower().startswith(("javascript:", "data:", "http")), (tag, name, value)
        if tag == "meta":
            assert attrs.get("http-equiv") in (None, "Content-Security-Policy")
    csp = next(a["content"] for t, a in tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert csp is not None and "default-src 'none'" in csp and "unsafe-inline" not in csp
    for value in payloads("http://127.0.0.1:9").values():
        assert html.escape(value) in page  # shown, as text, in the prompt


def _write(_unused: Path, beacon: str, folder: Path | None = None) -> Input:
    import tempfile

    d = folder or Path(tempfile.mkdtemp())
    path = d / "hostile.jsonl"
    path.write_text(hostile_jsonl(beacon), "utf-8")
    return Input(path)


def test_terminal_shows_the_same_structure() -> None:
    (session,) = _sessions(STREAM_JSON / "15-permission-stdio-deny.tap.jsonl")
    console = Console(record=True, width=100, force_terminal=False)
    console.print(*render_terminal([session]))
    text = console.export_text()
    assert "touch file please" in text
    assert "Bash" in text and "approval: denied" in text
    assert "turn 1" in text


def test_cli_writes_one_page_for_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "page.html"
    assert main(["show", str(STREAM_JSON / "16-permission-stdio-allow.tap.jsonl"), "-o", str(out)]) == 0
    page = out.read_text("utf-8")
    assert "touch file please" in page and "approval: allowed" in page
    assert main(["show", str(tmp_path / "missing.jsonl")]) == 2


def test_cli_writes_an_index_and_one_page_per_session_for_a_folder(tmp_path: Path) -> None:
    source = tmp_path / "sessions"
    (source / "a").mkdir(parents=True)
    (source / "b").mkdir()
    shutil.copy(STREAM_JSON / "15-permission-stdio-deny.tap.jsonl", source / "a")
    shutil.copy(STREAM_JSON / "16-permission-stdio-allow.tap.jsonl", source / "b")
    shutil.copy(golden_path(STREAM_JSON / "24-subagent-with-tool.jsonl"), source / "b" / "normalized.jsonl")
    (source / "notes.jsonl").write_text('{"hello": "not an agent"}\n')
    out = tmp_path / "site"
    assert main(["show", str(source), "-o", str(out)]) == 1, "one input could not be read"
    index = (out / "index.html").read_text("utf-8")
    links = [a["href"] for t, a in _tags(index) if t == "a"]
    assert len(links) == 3
    pages = set()
    for href in links:
        assert href is not None
        page, _, anchor = href.partition("#")
        pages.add(page)
        assert f'id="{anchor}"' in (out / page).read_text("utf-8")
    assert pages == {"a__15-permission-stdio-deny.html", "b__16-permission-stdio-allow.html", "b__normalized.html"}
    assert "claude-code 2.1.332" in index and "touch file please" in index
    assert "notes.jsonl" in index  # the skipped input is said on the index too


def test_cli_terminal_mode_prints_without_a_pager_when_piped() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "normalize",
            "show",
            "--terminal",
            str(STREAM_JSON / "16-permission-stdio-allow.tap.jsonl"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "touch file please" in proc.stdout and "approval: allowed" in proc.stdout


def _get(url: str, host: str | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""


def test_follow_serves_the_page_and_pushes_new_events(tmp_path: Path) -> None:
    capture = (STREAM_JSON / "16-permission-stdio-allow.tap.jsonl").read_bytes().splitlines(keepends=True)
    live = tmp_path / "live.tap.jsonl"
    live.write_bytes(b"".join(capture[:3]))
    with subprocess.Popen(
        [sys.executable, "-m", "normalize", "show", "--follow", str(live), "--poll", "0.05"],
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stderr is not None
            line = proc.stderr.readline()
            url = line[line.index("http://") :].split()[0]
            status, page = _get(url)
            assert status == 200 and 'data-live="1"' in page
            assert _get(url, host="attacker.example")[0] == 421
            with live.open("ab") as f:  # the agent goes on writing
                f.write(b"".join(capture[3:]))
            deadline = time.monotonic() + 20
            seen = ""
            with urllib.request.urlopen(url + "events", timeout=20) as stream:
                while "touch file please" not in seen and time.monotonic() < deadline:
                    raw = stream.readline().decode()
                    if raw.startswith("data: "):
                        seen = json.loads(raw[6:])
            assert "touch file please" in seen and "approval: allowed" in seen
        finally:
            proc.terminate()
            assert proc.wait(timeout=10) == 0


def test_show_runs_an_agent_command_under_tap_and_serves_its_page(tmp_path: Path) -> None:
    capture = ADAPTERS / "hm-json" / "captures" / "hm-handwritten" / "01_plain_answer.jsonl"
    cat = shutil.which("cat")
    assert cat is not None
    with subprocess.Popen(
        [sys.executable, "-m", "normalize", "show", "--poll", "0.05", "--", cat, str(capture)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stderr is not None and proc.stdout is not None
            line = proc.stderr.readline()
            url = line[line.index("http://") :].split()[0]
            assert "the agent exited (0)" in proc.stderr.readline()
            with urllib.request.urlopen(url + "events", timeout=20) as stream:
                raw = ""
                while not raw.startswith("data: "):
                    raw = stream.readline().decode()
            page = json.loads(raw[6:])
            assert "What&#x27;s the difference between" in page and "hm-json" in page
        finally:
            proc.terminate()
            assert proc.wait(timeout=10) == 0  # the agent's exit status
        assert proc.stdout.read() == capture.read_text("utf-8"), "the agent's stdout relayed untouched"

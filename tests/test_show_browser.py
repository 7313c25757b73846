"""normalize show in a real browser: headless Chromium (Debian's chromium and chromium-driver), driven by Selenium.

For each protocol, the page of its richest capture holds the prompt, the answer,
every tool name and every approval outcome; folds open and close; a screenshot
is not blank.  A hostile session runs nothing, loads nothing and hides nothing.
Set NORMALIZE_SHOW_SCREENSHOTS=DIR to keep the screenshots.
"""

from __future__ import annotations

import functools
import html
import io
import os
import re
import shutil
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from helpers import ADAPTERS, EDGE_CASES, capture_files, capture_id, protocol_of
from hostile import hostile_jsonl, payloads
from normalize import find_inputs
from normalize._show._build import Call, Item, SessionView, SubagentView, Text, UserItem
from normalize._show._html import markdown, render_page
from normalize._show._read import Input, read

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None,
    reason="headless Chromium is not installed here (Debian: apt-get install chromium chromium-driver; .ci/run does)",
)


def _input(capture: Path) -> Input:
    inp = next(iter(find_inputs([capture], protocol=protocol_of(capture))))
    assert not isinstance(inp, Exception)
    return Input(inp.main, inp.protocol, inp.companions, inp.key)


def _walk(items: list[Item]) -> Iterator[Item]:
    for it in items:
        yield it
        sub = it.subagent if isinstance(it, Call) else it if isinstance(it, SubagentView) else None
        if sub is not None:
            yield from _walk(sub.items)


def _all_items(sessions: list[SessionView]) -> list[Item]:
    return [i for s in sessions for t in s.turns for i in _walk(t.items)]


def _richness(capture: Path) -> tuple[int, int, int]:
    """Captures with both a prompt and an answer first, then the most tool calls and approvals, then items."""
    items = _all_items(read(_input(capture)))
    calls = [i for i in items if isinstance(i, Call)]
    talk = any(isinstance(i, UserItem) and i.text.strip() for i in items) + any(
        isinstance(i, Text) and i.kind == "assistant" and i.text.strip() for i in items
    )
    return (talk, len(calls) + 5 * sum(1 for c in calls if c.permission is not None), len(items))


@functools.cache
def _richest() -> dict[str, Path]:
    """Each protocol's richest capture: worked out when a test first asks (every capture is
    read), not when the tests are collected."""
    best: dict[str, tuple[tuple[int, int, int], Path]] = {}
    for c in capture_files():
        if EDGE_CASES in c.relative_to(ADAPTERS).parts:
            continue
        score = _richness(c)
        proto = protocol_of(c)
        if proto not in best or score > best[proto][0]:
            best[proto] = (score, c)
    return {p: c for p, (_, c) in sorted(best.items())}


#: the protocols with a whole session among their captures (one richest capture each)
PROTOCOLS = sorted({protocol_of(c) for c in capture_files() if EDGE_CASES not in c.relative_to(ADAPTERS).parts})


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    assert CHROMIUM is not None and DRIVER is not None
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        opts.add_argument(arg)
    opts.add_argument("--window-size=1200,1500")
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=opts)
    try:
        yield driver
    finally:
        driver.quit()


def _open(browser: Any, page: str, path: Path) -> None:
    path.write_text(page, "utf-8")
    browser.get(path.as_uri())


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_page_holds_prompt_answer_tools_and_approvals(browser: Any, protocol: str, tmp_path: Path) -> None:
    capture = _richest()[protocol]
    sessions = read(_input(capture))
    _open(browser, render_page(sessions, source=capture.name), tmp_path / "page.html")
    items = _all_items(sessions)
    dom = browser.execute_script("return document.getElementById('sessions').textContent")
    prompts = [i.text for i in items if isinstance(i, UserItem) and i.text.strip()]
    answers = [i.text for i in items if isinstance(i, Text) and i.kind == "assistant" and i.text.strip()]
    assert prompts or answers, capture_id(capture)
    for prompt in prompts:
        assert prompt.strip() in dom
    shown = " ".join(_words(browser.execute_script(
        "return Array.from(document.querySelectorAll('[data-kind=assistant]')).map(e => e.textContent).join(' ')"
    )))  # fmt: skip
    for answer in answers:  # as rendered: Markdown's list numbers and fence languages are markup, not text
        rendered = html.unescape(re.sub(r"<[^>]+>", " ", markdown(answer)))
        assert " ".join(_words(rendered)) in shown
    calls = [i for i in items if isinstance(i, Call)]
    tools = browser.execute_script(
        "return Array.from(document.querySelectorAll('[data-tool]')).map(e => e.dataset.tool)"
    )
    assert sorted(tools) == sorted(c.tool for c in calls)
    summaries = browser.execute_script(
        "return Array.from(document.querySelectorAll('details.call > summary')).map(e => e.textContent)"
    )
    for call, summary in zip(calls, summaries, strict=True):
        assert call.tool in summary  # visible even when folded
        if call.permission is not None:
            assert f"approval: {call.permission.outcome or 'pending'}" in summary


def test_folding_opens_and_closes(browser: Any, tmp_path: Path) -> None:
    capture = _richest()["claude-stream-json"]
    _open(browser, render_page(read(_input(capture))), tmp_path / "page.html")
    from selenium.webdriver.common.by import By

    for selector in ("details.call", "details.reasoning"):
        folds = browser.find_elements(By.CSS_SELECTOR, selector)
        if not folds:
            continue
        fold = folds[0]
        browser.execute_script("arguments[0].open = false; arguments[0].scrollIntoView()", fold)
        inner = fold.find_elements(By.CSS_SELECTOR, ":scope > :not(summary)")
        assert inner and not inner[0].is_displayed()
        fold.find_element(By.CSS_SELECTOR, ":scope > summary").click()
        assert fold.get_property("open") and inner[0].is_displayed()
        fold.find_element(By.CSS_SELECTOR, ":scope > summary").click()
        assert not fold.get_property("open") and not inner[0].is_displayed()
    # the toolbar's buttons fold and unfold everything
    browser.find_element(By.ID, "expand").click()
    assert browser.execute_script("return Array.from(document.querySelectorAll('details')).every(d => d.open)")
    browser.find_element(By.ID, "collapse").click()
    assert browser.execute_script("return Array.from(document.querySelectorAll('details')).every(d => !d.open)")


def test_printed_every_fold_is_open_and_the_toolbar_is_gone(browser: Any, tmp_path: Path) -> None:
    capture = _richest()["hm-json"]
    _open(browser, render_page(read(_input(capture))), tmp_path / "page.html")
    heights = (
        "return Array.from(document.querySelectorAll('details:not([open])'))"
        ".map(d => d.getBoundingClientRect().height"
        "  - d.querySelector(':scope > summary').getBoundingClientRect().height)"
    )
    on_screen = browser.execute_script(heights)
    assert on_screen and all(h < 5 for h in on_screen), "folded: the summary only"
    try:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
        on_paper = browser.execute_script(heights)
        assert len(on_paper) == len(on_screen)
        assert all(h > 10 for h in on_paper), "printed: the folded content too"
        assert browser.execute_script("return document.getElementById('toolbar').offsetParent") is None
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})


def test_without_javascript_everything_is_there_but_the_toolbar(browser: Any, tmp_path: Path) -> None:
    capture = _richest()["codex-app-server"]
    sessions = read(_input(capture))
    try:
        browser.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": True})
        _open(browser, render_page(sessions), tmp_path / "page.html")
        from selenium.webdriver.common.by import By

        assert not browser.find_element(By.ID, "toolbar").is_displayed()
        text = browser.find_element(By.ID, "sessions").text
        for item in _all_items(sessions):
            if isinstance(item, UserItem):
                assert item.text.strip().splitlines()[0] in text
            if isinstance(item, Call):
                assert item.tool in text
    finally:
        browser.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": False})


def test_search_and_kind_filters_hide_what_does_not_match(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    capture = _richest()["claude-stream-json"]
    _open(browser, render_page(read(_input(capture))), tmp_path / "page.html")
    visible = "return Array.from(document.querySelectorAll('[data-kind]')).filter(e => e.offsetParent !== null).length"
    before = browser.execute_script(visible)
    browser.find_element(By.CSS_SELECTOR, "input[data-filter=tool]").click()
    assert browser.execute_script("return document.querySelector('[data-kind=tool]').offsetParent") is None
    browser.find_element(By.CSS_SELECTOR, "input[data-filter=tool]").click()
    box = browser.find_element(By.ID, "q")
    box.send_keys("zz-no-such-text-zz")
    time.sleep(0.4)
    assert browser.execute_script(visible) == 0
    assert "0 matches" in browser.find_element(By.ID, "count").text
    box.clear()
    box.send_keys(" ")
    time.sleep(0.4)
    assert browser.execute_script(visible) == before


def _not_blank(png: bytes) -> tuple[int, float]:
    from PIL import Image

    img = Image.open(io.BytesIO(png)).convert("RGB")
    colors = img.getcolors(maxcolors=1 << 20) or []
    total = img.width * img.height
    background = max(colors)[0] if colors else total
    return len(colors), 1 - background / total


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_screenshot_of_the_richest_capture_is_not_blank(browser: Any, protocol: str, tmp_path: Path) -> None:
    capture = _richest()[protocol]
    _open(browser, render_page(read(_input(capture)), source=capture.name), tmp_path / "page.html")
    png = browser.get_screenshot_as_png()
    keep = os.environ.get("NORMALIZE_SHOW_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        (Path(keep) / f"{protocol}.png").write_bytes(png)
    colors, ink = _not_blank(png)
    assert colors > 50, "a page of text and colours, not one flat colour"
    assert ink > 0.05, "more than the background"


class _Beacon(BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        _Beacon.hits.append(self.path)
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def beacon() -> Iterator[str]:
    _Beacon.hits.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Beacon)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("csp", [True, False], ids=["as-written", "without-its-content-security-policy"])
def test_hostile_session_runs_nothing_loads_nothing_hides_nothing(
    browser: Any, beacon: str, tmp_path: Path, csp: bool
) -> None:
    """Escaping alone keeps the page safe: the same holds with the page's CSP removed."""
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    src = tmp_path / "hostile.jsonl"
    src.write_text(hostile_jsonl(beacon), "utf-8")
    page = render_page(read(Input(src)))
    if not csp:
        page, n = re.subn(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
        assert n == 1
    _open(browser, page, tmp_path / "hostile.html")
    browser.find_element(By.ID, "expand").click()  # every fold open: nothing hidden from the payloads
    box = browser.find_element(By.ID, "q")
    box.send_keys('<img src=x onerror="window.__pwned=10">')  # the search box takes text too
    time.sleep(0.5)
    box.clear()
    browser.execute_script("window.scrollTo(0, document.body.scrollHeight)")
    time.sleep(0.5)
    body = browser.find_element(By.TAG_NAME, "body")
    assert browser.execute_script("return window.__pwned") is None
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018 - raises when there is none
    assert browser.current_url.startswith("file://"), "no navigation"
    counts = browser.execute_script(
        "const q = s => document.querySelectorAll(s).length;"
        "return {script: q('script'), style: q('style'), img: q('img'), iframe: q('iframe'), base: q('base'),"
        " refresh: q('meta[http-equiv=refresh]'),"
        " on: Array.from(document.querySelectorAll('*'))"
        "   .filter(e => e.getAttributeNames().some(a => a.startsWith('on'))).length,"
        " styled: q('[style]'),"
        " badLinks: Array.from(document.links).filter(a => !/^(https?:|#)/.test(a.getAttribute('href'))).length}"
    )  # fmt: skip
    assert counts == {
        "script": 1, "style": 1, "img": 0, "iframe": 0, "base": 0, "refresh": 0, "on": 0, "styled": 0, "badLinks": 0
    }  # fmt: skip
    assert body.value_of_css_property("display") == "block"
    assert browser.find_element(By.ID, "sessions").size["height"] > 500
    text = browser.execute_script("return document.getElementById('sessions').textContent")
    for value in payloads(beacon).values():
        assert value in text, value  # shown as text
    time.sleep(0.3)
    assert _Beacon.hits == [], "the page fetched something"


def test_the_live_page_updates_in_the_browser_as_the_file_grows(browser: Any, tmp_path: Path) -> None:
    import subprocess
    import sys

    from selenium.webdriver.common.by import By

    capture = (
        ADAPTERS / "claude-stream-json" / "captures" / "claude-code-2.1.332" / "16-permission-stdio-allow.tap.jsonl"
    )
    lines = capture.read_bytes().splitlines(keepends=True)
    live = tmp_path / "live.tap.jsonl"
    live.write_bytes(b"".join(lines[:3]))
    with subprocess.Popen(
        [sys.executable, "-m", "normalize", "show", "--follow", str(live), "--poll", "0.05"],
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stderr is not None
            line = proc.stderr.readline()
            browser.get(line[line.index("http://") :].split()[0])
            main = browser.find_element(By.ID, "sessions")
            assert "touch file please" not in main.text
            with live.open("ab") as f:
                f.write(b"".join(lines[3:]))
            deadline = time.monotonic() + 20
            while "approval: allowed" not in main.text and time.monotonic() < deadline:
                time.sleep(0.1)
            assert "touch file please" in main.text and "approval: allowed" in main.text
            assert "live · updated" in browser.find_element(By.ID, "live-state").text
        finally:
            proc.terminate()
            assert proc.wait(timeout=10) == 0

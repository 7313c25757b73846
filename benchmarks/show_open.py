"""How long a page of ``normalize show`` takes to build, and to open in headless Chromium.

    .venv/bin/python benchmarks/show_open.py            # prints a Markdown table
    .venv/bin/python benchmarks/show_open.py --rounds 9

Pages: the kit capture with the most native bytes, the one with the most events,
and a synthetic session of several MB of normalized events (many turns, each
with a prompt, reasoning, a Markdown answer, commands with long output, a diff
and an approval).  Opening is measured in the browser itself (Navigation Timing
and Paint Timing of a fresh load from file://), the median of several rounds;
it needs Debian's chromium and chromium-driver.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))

from normalize import (  # noqa: E402
    SCHEMA_VERSION,
    AssistantMessage,
    CommandOutput,
    EventEnvelope,
    FileDiff,
    Native,
    PermissionOption,
    PermissionRequest,
    Reasoning,
    RequestResolved,
    SessionCreated,
    SessionEvent,
    SessionRecord,
    StreamHeader,
    ToolCall,
    ToolCallRef,
    TurnComplete,
    TurnStart,
    Usage,
    UserMessage,
    encode,
    find_inputs,
)
from normalize._model import AnyBody, Tokens  # noqa: E402
from normalize._show._html import render_page  # noqa: E402
from normalize._show._read import Input, read  # noqa: E402

ANSWER = """Here is what I changed, and why.

1. `ledger.py`: the **rounding** now happens once, at the end:

```python
def total(items: list[Item]) -> Decimal:
    return sum((i.price * i.qty for i in items), Decimal(0)).quantize(CENT)
```

2. The tests cover the empty list and a [negative quantity](https://example.org/spec#qty).

| case | before | after |
| --- | --- | --- |
| empty | error | 0.00 |
| 3 x 0.10 | 0.30000000000000004 | 0.30 |
"""


def synthetic(path: Path, turns: int) -> None:
    """A normalized stream of one long session."""
    sid = "s-synthetic"
    seq = 0
    t0 = 1_780_000_000.0

    def ev(body: AnyBody, turn: int, dt: float) -> str:
        nonlocal seq
        seq += 1
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t0 + turn * 60 + dt)) + f".{int(dt * 1000) % 1000:03d}Z"
        env = EventEnvelope(
            session_id=sid,
            agent="claude-code",
            seq=seq,
            ts=ts,
            origin="live",
            native=Native(protocol="core", payload={"n": seq, "pad": "x" * 600}),
            body=body,
            turn_id=f"turn:{turn}",
        )
        return encode(SessionEvent(session_id=sid, event=env)).decode()

    lines = [encode(StreamHeader(schema_version=SCHEMA_VERSION, library="normalize", library_version="bench")).decode()]
    record = SessionRecord(
        id=sid, agent="claude-code", protocol="core", model="claude-opus-5-5", cwd="/home/user/ledger"
    )
    lines.append(encode(SessionCreated(session_id=sid, record=record)).decode())
    output = "\n".join(f"tests/test_ledger.py::test_case_{i} PASSED" for i in range(60))
    diff = "@@ -10,7 +10,7 @@\n" + "\n".join(f" context line {i}" for i in range(6)) + "\n-    old\n+    new\n"
    for n in range(1, turns + 1):
        lines.append(ev(TurnStart(), n, 0))
        lines.append(
            ev(
                UserMessage(message_id=f"u{n}", text=f"Step {n}: fix the rounding in ledger.py and run the tests."),
                n,
                0.01,
            )
        )
        lines.append(
            ev(Reasoning(reasoning_id=f"r{n}", redacted=False, text="I should look at the totals. " * 40), n, 1)
        )
        for k in range(3):
            cid = f"c{n}.{k}"
            cmd = {"command": f"pytest -q tests/test_ledger.py -k case_{k}"}
            lines.append(
                ev(ToolCall(call_id=cid, tool="Bash", phase="started", category="execute", input=cmd), n, 2 + k)
            )
            if k == 0:
                ref = ToolCallRef(call_id=cid, tool="Bash", title=cmd["command"])
                opts = [PermissionOption(id="allow", kind="allow_once", label="Allow")]
                lines.append(ev(PermissionRequest(request_id=f"q{n}", tool_call=ref, options=opts), n, 2.1))
                lines.append(
                    ev(RequestResolved(request_id=f"q{n}", outcome="answered", answer={"behavior": "allow"}), n, 4)
                )
            lines.append(ev(CommandOutput(call_id=cid, stream="merged", delta=output), n, 4.5 + k))
            lines.append(
                ev(ToolCall(call_id=cid, tool="Bash", phase="completed", output=output, exit_code=0), n, 5 + k)
            )
        lines.append(ev(FileDiff(path="ledger.py", diff=diff, call_id=f"c{n}.2", change_kind="update"), n, 8))
        lines.append(ev(AssistantMessage(message_id=f"a{n}", text=ANSWER), n, 9))
        usage = Usage(tokens=Tokens(input=20000 + n, output=800), scope="turn")
        lines.append(ev(usage, n, 9.5))
        lines.append(ev(TurnComplete(reason="ok"), n, 10))
    path.write_text("\n".join(lines) + "\n", "utf-8")


def kit_inputs() -> list[tuple[str, Input]]:
    from helpers import capture_files, protocol_of

    best_bytes: tuple[int, Path] | None = None
    best_events: tuple[int, Path] | None = None
    for c in capture_files():
        inp = next(iter(find_inputs([c], protocol=protocol_of(c))))
        assert not isinstance(inp, Exception)
        size = sum(p.stat().st_size for p in inp.paths)
        events = sum(s.events for s in read(Input(inp.main, inp.protocol, inp.companions)))
        if best_bytes is None or size > best_bytes[0]:
            best_bytes = (size, c)
        if best_events is None or events > best_events[0]:
            best_events = (events, c)
    assert best_bytes is not None
    assert best_events is not None
    out = []
    for label, (_, c) in (("largest kit capture (bytes)", best_bytes), ("kit capture with most events", best_events)):
        inp = next(iter(find_inputs([c], protocol=protocol_of(c))))
        assert not isinstance(inp, Exception)
        out.append((f"{label}: `{c.relative_to(ROOT / 'adapters')}`", Input(inp.main, inp.protocol, inp.companions)))
    return out


def browser() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or driver is None:
        sys.exit("needs chromium and chromedriver (Debian: apt-get install chromium chromium-driver)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1200,1500",
    ):
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service(executable_path=driver), options=opts)


TIMING = """
const nav = performance.getEntriesByType('navigation')[0];
const fcp = performance.getEntriesByName('first-contentful-paint')[0];
return [nav.domContentLoadedEventEnd, nav.loadEventEnd, fcp ? fcp.startTime : null];
"""


def measure(driver: Any, page: Path, rounds: int) -> tuple[float, float, float]:
    dcl, load, fcp = [], [], []
    for _ in range(rounds):
        driver.get("about:blank")
        driver.get(page.as_uri())
        # a frame after load, so that paint timing is in
        driver.execute_async_script("requestAnimationFrame(() => setTimeout(arguments[0], 0))")
        d, ld, f = driver.execute_script(TIMING)
        dcl.append(d)
        load.append(ld)
        fcp.append(f if f is not None else float("nan"))
    return statistics.median(dcl), statistics.median(load), statistics.median(fcp)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--turns", type=int, default=150, help="turns of the synthetic session")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="normalize-show-bench-"))
    synth = tmp / "synthetic.normalized.jsonl"
    synthetic(synth, args.turns)
    cases = [*kit_inputs(), (f"synthetic session, {args.turns} turns", Input(synth))]
    driver = browser()
    rows = []
    try:
        for label, inp in cases:
            size = sum(p.stat().st_size for p in inp.paths)
            start = time.perf_counter()
            sessions = read(inp)
            html = render_page(sessions)
            build = time.perf_counter() - start
            page = tmp / "page.html"
            page.write_text(html, "utf-8")
            events = sum(s.events for s in sessions)
            dcl, load, fcp = measure(driver, page, args.rounds)
            rows.append(
                f"| {label} | {size / 1e6:.2f} MB, {events} events | {len(html.encode()) / 1e6:.2f} MB | "
                f"{build * 1000:.0f} ms | {dcl:.0f} ms | {load:.0f} ms | {fcp:.0f} ms |"
            )
    finally:
        driver.quit()
    print("| input | read | page | read + render (Python) | DOMContentLoaded | load | first contentful paint |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    print(f"\n(median of {args.rounds} fresh loads from file:// in headless Chromium; {tmp})")


if __name__ == "__main__":
    main()

"""``normalize show --follow FILE``: the page served on 127.0.0.1, updated live by server-sent events.

Two halves share one :class:`Published` snapshot:

* the follower (anyio, the main thread) reads the file as it grows, with
  :func:`normalize.follow` for native files or by lines for a normalized stream,
  feeds a :class:`Builder`, and publishes the re-rendered sessions at most every
  :data:`EVERY` seconds while something changed;
* the HTTP server (the standard library's ``ThreadingHTTPServer``, one thread
  per connection) serves the page at ``/`` and the snapshots at ``/events``,
  one ``page`` event per version (its data the sessions' HTML as a JSON string),
  then ``end`` when the file is closed, replaced or truncated.

Only requests whose Host is the loopback address it listens on are answered, so
a web page elsewhere cannot read the session through a rebound DNS name.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import threading
import webbrowser
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio

from normalize import InputError, StreamHeader, decode, follow

from ._build import Builder
from ._html import render_live_page, render_sessions
from ._read import is_normalized

__all__ = ["EVERY", "Published", "run_and_serve", "serve"]

#: Seconds between two publications while events keep coming.
EVERY = 0.2
#: Seconds between keep-alive comments on an idle event stream.
KEEPALIVE = 15.0


class Published:
    """The latest rendering of the sessions, with a version readers wait on."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.version = 0
        self.html = render_sessions([])
        self.ended = False

    def publish(self, html: str, *, ended: bool = False) -> None:
        with self.cond:
            self.version += 1
            self.html = html
            self.ended = self.ended or ended
            self.cond.notify_all()

    def wait(self, seen: int, timeout: float) -> tuple[int, str, bool]:
        with self.cond:
            self.cond.wait_for(lambda: self.version != seen or self.ended, timeout)
            return self.version, self.html, self.ended


def _handler(state: Published, title: str, allowed_hosts: Callable[[], set[str]]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "normalize-show"

        def log_message(self, format: str, *args: object) -> None:  # quiet: the terminal shows the URL only
            return

        def do_GET(self) -> None:
            if self.headers.get("Host", "") not in allowed_hosts():
                self.send_error(421, "wrong host")
                return
            if self.path in ("/", "/index.html"):
                self._page()
            elif self.path == "/events":
                self._events()
            else:
                self.send_error(404)

        def _page(self) -> None:
            with state.cond:
                html = state.html
            body = render_live_page(html, source=title).encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def _events(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            seen = -1
            try:
                while True:
                    version, html, ended = state.wait(seen, KEEPALIVE)
                    if version != seen:
                        seen = version
                        self.wfile.write(b"event: page\ndata: " + json.dumps(html).encode() + b"\n\n")
                    elif not ended:
                        self.wfile.write(b": keep-alive\n\n")
                    if ended:
                        self.wfile.write(b"event: end\ndata: {}\n\n")
                        self.wfile.flush()
                        return
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return  # the browser went away

    return Handler


async def _tail_normalized(path: Path, builder: Builder, changed: Callable[[], None], poll: float) -> None:
    """Feed the lines of a normalized stream as they are appended."""
    buf = b""
    with path.open("rb") as f:
        while True:
            chunk = f.read(1 << 16)
            if not chunk:
                await anyio.sleep(poll)
                continue
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                ev = decode(line)
                if not isinstance(ev, StreamHeader):
                    builder.feed(ev)
            changed()


async def _run(
    path: Path, protocol: str | None, poll: float, state: Published, child: subprocess.Popen[bytes] | None
) -> bool:
    """Follow until a signal (True) or until the file goes wrong (False, said on stderr)."""
    builder = Builder()
    dirty = threading.Event()

    def publish(ended: bool = False) -> None:
        dirty.clear()
        state.publish(render_sessions(list(builder.sessions.values())), ended=ended)

    async def publisher() -> None:
        while True:
            await anyio.sleep(EVERY)
            if dirty.is_set():
                publish()

    async def until_signal(scope: anyio.CancelScope) -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
            async for _ in received:
                scope.cancel()
                return

    async def watch(proc: subprocess.Popen[bytes]) -> None:
        while proc.poll() is None:
            await anyio.sleep(EVERY)
        await anyio.sleep(3 * poll + EVERY)  # the follower reads what the agent wrote last
        publish()
        print(
            f"normalize: the agent exited ({proc.returncode}); the page stays up until Ctrl-C",
            file=sys.stderr,
            flush=True,
        )

    problem: str | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(until_signal, tg.cancel_scope)
        tg.start_soon(publisher)
        if child is not None:
            tg.start_soon(watch, child)
        try:
            if is_normalized(path):
                await _tail_normalized(path, builder, dirty.set, poll)
            else:
                async with follow(path, protocol=protocol, poll=poll) as stream:
                    async for ev in stream:
                        builder.feed(ev)
                        dirty.set()
                for ev in stream.closing:
                    builder.feed(ev)
        except InputError as exc:  # the file was replaced or truncated, or a line could not be read
            problem = exc.message
        tg.cancel_scope.cancel()
    publish(ended=True)
    if problem is not None:
        print(f"normalize: {problem}", file=sys.stderr)
        return False
    return True


def serve(
    path: Path,
    *,
    protocol: str | None = None,
    port: int = 0,
    poll: float = 0.1,
    open_browser: bool = False,
    child: subprocess.Popen[bytes] | None = None,
) -> int:
    """Serve the live page of ``path`` until Ctrl-C (or SIGTERM).

    Returns 0 when stopped, 1 if the file went wrong; with ``child`` (the ``tap``
    writing ``path``), the child's exit status.
    """
    state = Published()
    hosts: set[str] = set()
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(state, path.name, lambda: hosts))
    server.daemon_threads = True
    real_port = server.server_address[1]
    hosts.update({f"127.0.0.1:{real_port}", f"localhost:{real_port}"})
    thread = threading.Thread(target=server.serve_forever, name="normalize-show", daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{real_port}/"
    print(f"normalize: serving {path} live at {url} (Ctrl-C to stop)", file=sys.stderr, flush=True)
    if open_browser:
        webbrowser.open(url)
    ok = True
    try:
        ok = anyio.run(_run, path, protocol, poll, state, child)
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()
    if child is not None:
        try:
            return child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.terminate()
            return child.wait()
    return 0 if ok else 1


def run_and_serve(
    command: list[str], *, protocol: str | None = None, port: int = 0, poll: float = 0.1, open_browser: bool = False
) -> int:
    """``normalize show -- COMMAND``: run the agent under ``normalize tap`` (its stdio relayed), serve its page live."""
    with tempfile.TemporaryDirectory(prefix="normalize-show-") as tmp:
        record = Path(tmp) / "session.tap.jsonl"
        record.touch()  # followed from the start; tap writes into it (same file)
        tap = [sys.executable, "-m", "normalize", "tap", "--record", str(record)]
        if protocol is not None:
            tap += ["--protocol", protocol]
        child = subprocess.Popen([*tap, "--", *command])
        return serve(record, protocol=protocol, port=port, poll=poll, open_browser=open_browser, child=child)

"""Re-record the capture set: real agent CLIs against scripted fake model servers.

    python tools/record/record.py --install --all --out adapters

runs every scenario of ``scenarios.py``, each in a fresh scratch HOME and working
directory (holding one file, ``hello.txt``), against a fake model server on 127.0.0.1:

* Claude Code (``-p`` stream-json, or stream-json on stdin):
  ``<out>/claude-stream-json/captures/claude-code-<version>/<case>.jsonl`` (stdout, byte for
  byte) or ``<case>.tap.jsonl``, and its session files in
  ``<out>/claude-transcript/captures/claude-code-<version>/<case>/``;
* Codex ``exec --json``: ``<out>/codex-exec-json/captures/codex-<version>/<case>.jsonl`` and
  ``<out>/codex-rollout/captures/codex-<version>/exec-<case>.jsonl``;
* Codex ``app-server`` (a JSON-RPC client on its stdio):
  ``<out>/codex-app-server/captures/codex-<version>/<case>.tap.jsonl`` and
  ``<out>/codex-rollout/captures/codex-<version>/app-server-<case>.jsonl``;
* the npm ACP adapters ``claude-agent-acp`` and ``codex-acp`` (a recording ACP client):
  ``<out>/acp/captures/<adapter>-<version>/<case>.tap.jsonl``;
* Gemini CLI (``-p`` stream-json, against the fake Gemini API):
  ``<out>/gemini-stream-json/captures/gemini-cli-<version>/<case>.jsonl`` and its chat files in
  ``<out>/gemini-chat/captures/gemini-cli-<version>/<case>.jsonl``; ``gemini --acp``:
  ``<out>/acp/captures/gemini-cli-<version>/<case>.tap.jsonl`` (``--experimental-acp`` for a
  version whose ``--help`` has no ``--acp``);
* OpenCode (``run --format json``, against the fake Responses server):
  ``<out>/opencode-json/captures/opencode-<version>/<case>.jsonl`` and a copy of its database
  holding only the session tables, ``<out>/opencode-db/captures/opencode-<version>/<case>.db``
  (OpenCode 1.0 and 1.1, which kept no database: the case's ``storage/`` session, message and
  part files, ``<out>/opencode-db/captures/opencode-<version>/<case>/``).

Tap lines splice the wire line into ``{"t":…,"from":…,"msg":<line>}`` as is.
The scratch paths are rewritten to ``/home/user/project`` and ``/home/user``
(also in Claude's encoded project name), and the scratch root (the runs' ``TMPDIR``)
to ``/tmp``; nothing else is edited.  A capture
folder that exists before the run is never written to (``--overwrite`` to do so).

Only 127.0.0.1 is contacted, plus the npm registry with ``--install``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scenarios import (
    ACP_CLAUDE,
    ACP_CODEX,
    ACP_GEMINI,
    APP_ARGS,
    APP_SERVER,
    CLAUDE,
    CODEX,
    GEMINI,
    OPENCODE,
    Scenario,
    dumps,
    fill,
    with_cwd,
)
from servers import AnthropicHandler, FakeServer, GeminiHandler, ResponsesHandler

HOME = b"/home/user"
NL = b"\n"
PROJECT = b"/home/user/project"
KEEP = False  # --keep: leave the scratch folders (requests.jsonl, stderr) for debugging


def now() -> str:
    dt = datetime.now(tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


class Scratch:
    """A run's HOME and working directory, and the rewrite of their paths."""

    def __init__(self, case: str) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=f"nrec-{case}-"))
        self.home = self.root / "home"
        self.cwd = self.root / "project"
        self.home.mkdir()
        self.cwd.mkdir()
        (self.cwd / "hello.txt").write_text("hello world\n")

    def rewrite(self, data: bytes) -> bytes:
        pairs = [
            (str(self.cwd).encode(), PROJECT),
            (str(self.home).encode(), HOME),
            # OpenCode also writes paths relative to / (``tmp/.../project/hello.txt``)
            (str(self.cwd).lstrip("/").encode(), PROJECT.lstrip(b"/")),
            (str(self.home).lstrip("/").encode(), HOME.lstrip(b"/")),
            (re.sub(r"[^A-Za-z0-9]", "-", str(self.cwd)).encode(), b"-home-user-project"),
            # TMPDIR is the scratch root: what a CLI keeps there (Claude Code's task output
            # files) is named as under /tmp
            (str(self.root).encode(), b"/tmp"),
        ]
        for old, new in pairs:
            data = data.replace(old, new)
        return data

    def remove(self) -> None:
        if KEEP:
            print(f"scratch kept: {self.root}", file=sys.stderr)
            return
        shutil.rmtree(self.root, ignore_errors=True)


# ---------------------------------------------------------------- running a CLI


class TapWire:
    """Drives a CLI over stdin/stdout and keeps every line in wire order, as tap lines."""

    def __init__(self, proc: subprocess.Popen[bytes], scratch: Scratch, state: dict[str, Any]) -> None:
        self.proc = proc
        self.scratch = scratch
        self.state = state  # shared by the runs of one chain (a session id to resume)
        self.cwd = scratch.cwd
        self.on_request: Callable[[dict[str, Any]], None] | None = None
        self.lines: list[bytes] = []
        self.received: list[dict[str, Any]] = []
        self._taken: set[int] = set()
        self._lock = threading.Lock()
        self._inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _tap(self, side: str, line: bytes) -> None:
        with self._lock:
            head = json.dumps({"t": now(), "from": side}, separators=(",", ":"))[:-1]
            self.lines.append(head.encode() + b',"msg":' + self.scratch.rewrite(line) + b"}")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.rstrip(b"\n")
            if not line.strip():
                continue
            self._tap("agent", line)
            try:
                self._inbox.put(json.loads(line))
            except ValueError:
                continue
        self._inbox.put(None)

    def send(self, obj: dict[str, Any]) -> None:
        line = dumps(fill(obj, str(self.scratch.cwd)))
        assert self.proc.stdin is not None
        self._tap("client", line)
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def wait(self, pred: Callable[[dict[str, Any]], bool], timeout: float = 60.0) -> dict[str, Any]:
        """The first agent message, in wire order, that matches and no earlier wait returned.

        Messages read while waiting for something else are kept, so a notification that
        overtakes the response awaited first is still found.  Agent requests are answered
        by ``on_request`` (when set) as soon as they are read.
        """
        for i, msg in enumerate(self.received):
            if i not in self._taken and pred(msg):
                self._taken.add(i)
                return msg
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the agent did not send the awaited line in time")
            try:
                msg = self._inbox.get(timeout=left)
            except queue.Empty:
                raise TimeoutError("the agent did not send the awaited line in time") from None
            if msg is None:
                raise EOFError("the agent closed its stdout")
            self.received.append(msg)
            if self.on_request is not None and "method" in msg and "id" in msg:
                self.on_request(msg)
            if pred(msg):
                self._taken.add(len(self.received) - 1)
                return msg

    def drain(self, seconds: float) -> None:
        """Keep reading (and answering) for a while: late notifications end up in the capture."""
        with contextlib.suppress(TimeoutError, EOFError):
            self.wait(lambda m: False, seconds)

    def finish(self, timeout: float = 60.0) -> int:
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.close()
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.terminate()  # an agent that outlives its stdin
            try:
                rc = self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                rc = self.proc.wait()
        self._reader.join(timeout)
        return rc


def run_cli(
    argv: list[str], sc: Scenario, scratch: Scratch, env: dict[str, str], state: dict[str, Any]
) -> tuple[int, bytes, bool]:
    """Run one scenario: (exit code, capture bytes, is a tap file)."""
    if sc.drive is None:
        proc = subprocess.run(
            argv, cwd=scratch.cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=300, check=False
        )
        if proc.stderr:
            (scratch.root / f"stderr-{sc.case}.txt").write_bytes(proc.stderr)
        for line in proc.stdout.splitlines():
            with contextlib.suppress(ValueError):
                obj = json.loads(line)
                sid = obj.get("session_id", obj.get("sessionID")) if isinstance(obj, dict) else None
                if isinstance(sid, str):
                    state.setdefault("session", sid)
                    break
        return proc.returncode, scratch.rewrite(proc.stdout), False
    with (
        (scratch.root / f"stderr-{sc.case}.txt").open("wb") as err,
        subprocess.Popen(
            argv, cwd=scratch.cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err
        ) as p,
    ):
        wire = TapWire(p, scratch, state)
        try:
            sc.drive(wire)
        finally:
            rc = wire.finish()
            closer = state.pop("close", None)
            if closer is not None:
                closer()
    return rc, b"".join(line + b"\n" for line in wire.lines), True


def base_env(scratch: Scratch) -> dict[str, str]:
    keep = {k: os.environ[k] for k in ("PATH", "LANG", "TERM") if k in os.environ}
    return {**keep, "HOME": str(scratch.home), "TMPDIR": str(scratch.root), "NO_COLOR": "1"}


def version_of(binary: Path) -> str:
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60, check=True).stdout
    m = re.search(r"\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?", out)
    if m is None:
        raise SystemExit(f"cannot read the version of {binary}: {out!r}")
    return m.group(0)


def package_version(npm_dir: Path, package: str) -> str:
    meta = json.loads((npm_dir / "node_modules" / package / "package.json").read_text())
    return str(meta["version"])


def _bin_of(npm_dir: Path, package: str) -> str:
    """The command an installed package provides (``claude-code-acp`` for the older claude-agent-acp)."""
    meta = npm_dir / "node_modules" / package / "package.json"
    bins = json.loads(meta.read_text()).get("bin") if meta.exists() else None
    if isinstance(bins, dict) and bins:
        return str(next(iter(bins)))
    return package.rsplit("/", 1)[-1]


class Output:
    """Where captures go: a capture folder that existed before this run is never written to.

    A folder holds the captures a golden was reviewed against, so a re-recording of the same
    agent version goes elsewhere (``--out /tmp/rec-out``) unless ``--overwrite`` says otherwise.
    """

    def __init__(self, root: Path, overwrite: bool, log: Callable[[str], None]) -> None:
        self.root = root
        self.overwrite = overwrite
        self.log = log
        self._mine: set[Path] = set()
        self._refused: set[Path] = set()

    def folder(self, protocol: str, name: str) -> Path | None:
        path = self.root / protocol / "captures" / name
        if path in self._mine:
            return path
        if path.exists() and any(path.iterdir()) and not self.overwrite and path not in self._refused:
            self._refused.add(path)
            self.log(f"skip {path}: it exists (record with --out elsewhere to compare, or --overwrite)")
        if path in self._refused:
            return None
        path.mkdir(parents=True, exist_ok=True)
        self._mine.add(path)
        return path

    def any_writable(self, *targets: tuple[str, str]) -> bool:
        """Whether a run would write anything; when not, it says so and the run is skipped."""
        for protocol, name in targets:
            path = self.root / protocol / "captures" / name
            if self.overwrite or path in self._mine or not (path.exists() and any(path.iterdir())):
                return True
        for protocol, name in targets:
            self.folder(protocol, name)  # logs the skip
        return False

    def write(self, protocol: str, name: str, file: str, data: bytes) -> bool:
        folder = self.folder(protocol, name)
        if folder is None:
            return False
        target = folder / file
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        return True


Setup = Callable[[Scenario, Scratch, str], tuple[dict[str, str], list[str]]]
Collect = Callable[[Scenario, Scratch], None]


def run_chains(
    scenarios: list[Scenario],
    cases: set[str] | None,
    handler: type[BaseHTTPRequestHandler],
    setup: Setup,
    write: Callable[[Scenario, bytes, bool], None],
    collect: Collect,
    log: Callable[[str], None],
    label: str,
) -> None:
    """Run the scenarios in order; a scenario that ``follows`` another reuses its scratch HOME and state.

    ``setup`` gives a run's environment and argv (with the fake server's URL), ``write`` stores its
    capture, ``collect`` copies the agent's own session files once a chain's last run is over.
    """
    wanted = _with_predecessors(scenarios, cases)
    scratch: Scratch | None = None
    state: dict[str, Any] = {}
    chain: list[Scenario] = []
    for k, sc in enumerate(scenarios):
        if sc.case not in wanted:
            continue
        if scratch is None or sc.follows != (chain[-1].case if chain else None):
            scratch, state, chain = Scratch(sc.case), {}, []
        chain.append(sc)
        with FakeServer(with_cwd(sc.script(), str(scratch.cwd)), scratch.root / "requests.jsonl", handler) as srv:
            srv.ids.skip(state.get("ids", 0))  # a continued session gets new message ids
            env, argv = setup(sc, scratch, srv.url)
            if any("{session}" in a for a in argv) and not state.get("session"):
                log(f"{label} {sc.case}: FAILED (no session to continue); scratch kept in {scratch.root}")
                scratch = None
                continue
            argv = [a.replace("{session}", str(state.get("session", ""))) for a in fill(argv, str(scratch.cwd))]
            try:
                rc, data, tap = run_cli(argv, sc, scratch, env, state)
            except (TimeoutError, EOFError, subprocess.TimeoutExpired) as e:
                log(f"{label} {sc.case}: FAILED ({e}); scratch kept in {scratch.root}")
                scratch = None
                continue
        state["ids"] = srv.ids.last
        write(sc, data, tap)
        log(f"{label} {sc.case}: exit {rc}, {data.count(NL)} lines")
        nxt = next((s for s in scenarios[k + 1 :] if s.case in wanted), None)
        if nxt is None or nxt.follows != sc.case:
            collect(chain[-1], scratch)
            scratch.remove()
            scratch = None


def _with_predecessors(scenarios: list[Scenario], cases: set[str] | None) -> set[str]:
    if cases is None:
        return {sc.case for sc in scenarios}
    by_case = {sc.case: sc for sc in scenarios}
    wanted = set(cases)
    for case in list(cases):
        sc = by_case.get(case)
        while sc is not None and sc.follows is not None:
            wanted.add(sc.follows)
            sc = by_case.get(sc.follows)
    return wanted


# ---------------------------------------------------------------- Claude Code


def record_claude(binary: Path, out: Output, cases: set[str] | None, log: Callable[[str], None]) -> None:
    version = version_of(binary)
    name = f"claude-code-{version}"
    if not out.any_writable(("claude-stream-json", name), ("claude-transcript", name)):
        return

    def setup(sc: Scenario, scratch: Scratch, url: str) -> tuple[dict[str, str], list[str]]:
        env = {
            **base_env(scratch),
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": "sk-ant-fake-key",
            "IS_SANDBOX": "1",  # bypassPermissions as root
            "DISABLE_AUTOUPDATER": "1",
            **sc.env,
        }
        return env, [str(binary), *sc.args]

    def write(sc: Scenario, data: bytes, tap: bool) -> None:
        out.write("claude-stream-json", name, f"{sc.case}.tap.jsonl" if tap else f"{sc.case}.jsonl", data)

    def collect(sc: Scenario, scratch: Scratch) -> None:
        folder = out.folder("claude-transcript", name)
        if folder is not None:
            log(f"claude-code {version} {sc.case}: {_claude_transcripts(scratch, folder / sc.case)} session file(s)")

    run_chains(CLAUDE, cases, AnthropicHandler, setup, write, collect, log, f"claude-code {version}")


def _claude_transcripts(scratch: Scratch, dest: Path) -> int:
    projects = scratch.home / ".claude" / "projects"
    files = [p for p in sorted(projects.rglob("*")) if p.is_file()] if projects.is_dir() else []
    if dest.exists():
        shutil.rmtree(dest)
    for f in files:
        rel = f.relative_to(projects)
        target = dest.joinpath(*rel.parts[1:])  # drop the encoded project folder
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(scratch.rewrite(f.read_bytes()))
    return len(files)


# ---------------------------------------------------------------- Codex


CODEX_CONFIG = """\
model = "gpt-5.5"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.mock]
name = "mock"
base_url = "{url}/v1"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 1
"""


def _codex_home(scratch: Scratch, url: str) -> Path:
    codex_home = scratch.home / ".codex"
    codex_home.mkdir(exist_ok=True)
    (codex_home / "config.toml").write_text(CODEX_CONFIG.format(url=url))
    return codex_home


def _rollouts(scratch: Scratch) -> list[Path]:
    sessions = scratch.home / ".codex" / "sessions"
    return sorted(sessions.rglob("rollout-*.jsonl")) if sessions.is_dir() else []


def _codex_collect(out: Output, name: str, prefix: str, log: Callable[[str], None]) -> Collect:
    def collect(sc: Scenario, scratch: Scratch) -> None:
        rollouts = _rollouts(scratch)
        for i, r in enumerate(rollouts):
            suffix = "" if i == 0 else f"-{i + 1}"
            out.write("codex-rollout", name, f"{prefix}-{sc.case}{suffix}.jsonl", scratch.rewrite(r.read_bytes()))
        log(f"codex {name} {sc.case}: {len(rollouts)} rollout file(s)")

    return collect


def record_codex(binary: Path, out: Output, cases: set[str] | None, log: Callable[[str], None]) -> None:
    version = version_of(binary)
    name = f"codex-{version}"
    if not out.any_writable(("codex-exec-json", name), ("codex-rollout", name)):
        return

    def setup(sc: Scenario, scratch: Scratch, url: str) -> tuple[dict[str, str], list[str]]:
        env = {**base_env(scratch), "CODEX_HOME": str(_codex_home(scratch, url)), **sc.env}
        return env, [str(binary), *sc.args]

    def write(sc: Scenario, data: bytes, tap: bool) -> None:
        out.write("codex-exec-json", name, f"{sc.case}.jsonl", data)

    collect = _codex_collect(out, name, "exec", log)
    run_chains(CODEX, cases, ResponsesHandler, setup, write, collect, log, f"codex {version} exec")


def _feature_args(binary: Path, args: list[str], env: dict[str, str]) -> list[str]:
    """``args``, with ``multi_agent_v2`` enabled under the older sub-agents' feature name for a
    Codex that has only those (``spawn_agent``, ``send_input``, ``wait``, ``close_agent``):
    ``collab`` in 0.96, ``multi_agent`` in 0.107."""
    if "multi_agent_v2" not in args:
        return args
    listed = subprocess.run(
        [str(binary), "features", "list"], env=env, capture_output=True, text=True, timeout=120, check=False
    ).stdout
    features = {line.split()[0] for line in listed.splitlines() if line.strip()}
    older = next((f for f in ("multi_agent", "collab") if f in features), None)
    if "multi_agent_v2" in features or older is None:
        return args
    return [older if a == "multi_agent_v2" else a for a in args]


def _without_threads(binary: Path) -> str | None:
    """Why this Codex's app-server cannot run the scenarios, or None.

    The scenarios speak the thread API (``thread/start``, ``turn/start``); an app-server older
    than it (0.55: ``newConversation``, ``sendUserMessage``) refuses ``thread/start`` as an
    unknown method.  Asked with params it cannot take, a newer one refuses them instead, so
    the probe starts no thread.  Up to 0.4x there is no ``app-server`` subcommand at all (the
    word would be taken as a prompt for the terminal UI): its ``--help`` does not list it.
    """
    with tempfile.TemporaryDirectory(prefix="nrec-probe-") as tmp:
        env = {**{k: os.environ[k] for k in ("PATH", "LANG") if k in os.environ}, "HOME": tmp, "CODEX_HOME": tmp}
        usage = subprocess.run(
            [str(binary), "--help"], env=env, cwd=tmp, capture_output=True, text=True, timeout=60, check=False
        )
        commands = {line.split()[0] for line in usage.stdout.splitlines() if line.startswith("  ") and line.strip()}
        if APP_ARGS[0] not in commands:
            return f"it has no {APP_ARGS[0]} subcommand (not in codex --help)"
        lines = [
            {"id": 0, "method": "initialize", "params": {"clientInfo": {"name": "probe", "version": "0"}}},
            {"id": 1, "method": "thread/start", "params": "probe"},
        ]
        try:
            done = subprocess.run(
                [str(binary), *APP_ARGS],
                input="".join(json.dumps(x) + "\n" for x in lines),
                env=env,
                cwd=tmp,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return None
    for line in done.stdout.splitlines():
        with contextlib.suppress(ValueError):
            msg = json.loads(line)
            text = str(msg.get("error", {}).get("message", "")) if isinstance(msg, dict) else ""
            if "unknown variant `thread/start`" in text:
                return "its app-server has no thread/start (an older JSON-RPC API)"
    return None


def record_app_server(binary: Path, out: Output, cases: set[str] | None, log: Callable[[str], None]) -> None:
    version = version_of(binary)
    name = f"codex-{version}"
    if not out.any_writable(("codex-app-server", name), ("codex-rollout", name)):
        return
    why = _without_threads(binary)
    if why is not None:
        log(f"codex {version} app-server: not recorded: {why}")
        return

    def setup(sc: Scenario, scratch: Scratch, url: str) -> tuple[dict[str, str], list[str]]:
        env = {**base_env(scratch), "CODEX_HOME": str(_codex_home(scratch, url)), **sc.env}
        return env, [str(binary), *_feature_args(binary, list(sc.args), env)]

    def write(sc: Scenario, data: bytes, tap: bool) -> None:
        out.write("codex-app-server", name, f"{sc.case}.tap.jsonl", data)

    collect = _codex_collect(out, name, "app-server", log)
    run_chains(APP_SERVER, cases, ResponsesHandler, setup, write, collect, log, f"codex {version} app-server")


# ---------------------------------------------------------------- ACP adapters


def record_acp(
    agent: str,
    binary: Path,
    npm_dir: Path,
    out: Output,
    cases: set[str] | None,
    log: Callable[[str], None],
    package: str | None = None,
) -> None:
    """The npm ACP adapter ``agent`` (claude-agent-acp or codex-acp) driven by a recording ACP client.

    ``package`` is the npm package it was installed from when that is not the current name (the
    same adapters were published as ``@zed-industries/claude-code-acp`` and
    ``@zed-industries/codex-acp`` before); the capture folder is named after the package.
    """
    package = package or PACKAGES[agent]
    version = package_version(npm_dir, package)
    name = f"{package.rsplit('/', 1)[-1]}-{version}"
    if not out.any_writable(("acp", name)):
        return
    claude = agent == "claude-agent-acp"
    scenarios = ACP_CLAUDE if claude else ACP_CODEX

    def setup(sc: Scenario, scratch: Scratch, url: str) -> tuple[dict[str, str], list[str]]:
        env = base_env(scratch)
        if claude:
            env |= {
                "ANTHROPIC_BASE_URL": url,
                "ANTHROPIC_API_KEY": "sk-ant-fake-key",
                "IS_SANDBOX": "1",
                "DISABLE_AUTOUPDATER": "1",
            }
        else:
            env |= {"CODEX_HOME": str(_codex_home(scratch, url))}
        return env | sc.env, [str(binary), *sc.args]

    def write(sc: Scenario, data: bytes, tap: bool) -> None:
        out.write("acp", name, f"{sc.case}.tap.jsonl", data)

    def collect(sc: Scenario, scratch: Scratch) -> None:
        return

    run_chains(scenarios, cases, AnthropicHandler if claude else ResponsesHandler, setup, write, collect, log, name)


# ---------------------------------------------------------------- Gemini CLI


def _env_of(sc: Scenario) -> dict[str, str]:
    """The scenario's environment variables (keys starting with ``_`` are recorder settings)."""
    return {k: v for k, v in sc.env.items() if not k.startswith("_")}


def _gemini_home(sc: Scenario, scratch: Scratch, url: str) -> dict[str, str]:
    """``~/.gemini/settings.json`` choosing API-key auth (a policy file when the case has one); the env."""
    gemini = scratch.home / ".gemini"
    gemini.mkdir(exist_ok=True)
    settings: dict[str, Any] = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    # older CLIs read other keys: NREC_GEMINI_SETTINGS (a JSON object) is merged in, e.g. 0.20's
    # {"enableMessageBusIntegration": true}, without which its policy rules do not apply
    extra = os.environ.get("NREC_GEMINI_SETTINGS")
    if extra:
        settings = _merged(settings, json.loads(extra))
    (gemini / "settings.json").write_text(json.dumps(settings))
    if "_gemini_policy" in sc.env:
        (gemini / "policies").mkdir(exist_ok=True)
        (gemini / "policies" / "normalize-record.toml").write_text(sc.env["_gemini_policy"])
    return {
        **base_env(scratch),
        "GEMINI_API_KEY": "fake-gemini-key",
        "GOOGLE_GEMINI_BASE_URL": url,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        **_env_of(sc),
    }


def _merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """``extra`` merged into ``base``, nested objects key by key."""
    out = dict(base)
    for k, v in extra.items():
        out[k] = _merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _gemini_chats(scratch: Scratch) -> list[Path]:
    """The chat files: ``*.jsonl``, or one ``*.json`` document each before Gemini CLI 0.39."""
    tmp = scratch.home / ".gemini" / "tmp"
    return sorted(p for p in tmp.glob("*/chats/*.json*") if p.suffix in (".json", ".jsonl")) if tmp.is_dir() else []


def record_gemini(binary: Path, out: Output, cases: set[str] | None, log: Callable[[str], None]) -> None:
    version = version_of(binary)
    name = f"gemini-cli-{version}"
    if not out.any_writable(("gemini-stream-json", name), ("gemini-chat", name)):
        return

    def setup(sc: Scenario, scratch: Scratch, url: str) -> tuple[dict[str, str], list[str]]:
        return _gemini_home(sc, scratch, url), [str(binary), *sc.args]

    def write(sc: Scenario, data: bytes, tap: bool) -> None:
        out.write("gemini-stream-json", name, f"{sc.case}.jsonl", data)

    def collect(sc: Scenario, scratch: Scratch) -> None:
        chats = _gemini_chats(scratch)
        for i, c in enumerate(chats):
            suffix = "" if i == 0 else f"-{i + 1}"
            out.write("gemini-chat", name, f"{sc.case}{suffix}{c.suffix}", scratch.rewrite(c.read_bytes()))
        log(f"gemini-cli {version} {sc.case}: {len(chats)} chat file(s)")

    run_chains(GEMINI, cases, GeminiHandler, setup, write, collect, log, f"gemini-cli {version}")


def record_gemini_acp(binary: Path, out: Output, cases: set[str] | None, log: Callable[[str], None]) -> None:
    """``gemini --acp`` driven by the recording ACP client."""
    version = version_of(binary)
    name = f"gemini-cli-{version}"
    if not out.any_writable(("acp", name)):
        return
    # before --acp (0.38 and older) the flag was --experimental-acp: this version's --help lists it
    help_text = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=60)
    flag = "--acp" if re.search(r"^\s*--acp\b", help_text.stdout + help_text.stderr, re.M) else "--experimental-acp"

    def setup(sc: Scenario, scratch: Scratch, url: str) -> tuple[dict[str, str], list[str]]:
        return _gemini_home(sc, scratch, url), [str(binary), flag, *sc.args]

    def write(sc: Scenario, data: bytes, tap: bool) -> None:
        out.write("acp", name, f"{sc.case}.tap.jsonl", data)

    def collect(sc: Scenario, scratch: Scratch) -> None:
        return

    run_chains(ACP_GEMINI, cases, GeminiHandler, setup, write, collect, log, name)


# ---------------------------------------------------------------- OpenCode


def _opencode_home(sc: Scenario, scratch: Scratch, url: str) -> dict[str, str]:
    """``~/.config/opencode/opencode.json``: the openai provider at the fake server, ``openai/gpt-5``."""
    config: dict[str, Any] = {
        "model": "openai/gpt-5",
        "provider": {"openai": {"options": {"baseURL": f"{url}/v1", "apiKey": "sk-fake-key"}}},
        "autoupdate": False,
        "share": "disabled",
    }
    if "_opencode_permission" in sc.env:
        config["permission"] = json.loads(sc.env["_opencode_permission"])
    folder = scratch.home / ".config" / "opencode"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "opencode.json").write_text(json.dumps(config, indent=2))
    return {**base_env(scratch), "OPENAI_API_KEY": "sk-fake-key", **_env_of(sc)}


#: The tables of a session's content; the others (account, credential, control_account,
#: session_share, permission...) are never copied.
OPENCODE_TABLES = ("project", "session", "message", "part")


def _opencode_db(scratch: Scratch, dest: Path) -> int:
    """A small copy of OpenCode's database holding only the session tables, paths rewritten."""
    import sqlite3

    src = scratch.home / ".local" / "share" / "opencode" / "opencode.db"
    if not src.exists():
        return 0
    dest.unlink(missing_ok=True)
    with (
        contextlib.closing(sqlite3.connect(f"file:{src}?mode=ro", uri=True)) as db,
        contextlib.closing(sqlite3.connect(dest)) as copy,
    ):
        n = 0
        for table in OPENCODE_TABLES:
            (sql,) = db.execute("select sql from sqlite_master where type='table' and name=?", (table,)).fetchone()
            copy.execute(sql)
            rows = db.execute(f"select * from {table}").fetchall()
            for row in rows:
                vals = [scratch.rewrite(v.encode()).decode() if isinstance(v, str) else v for v in row]
                copy.execute(f"insert into {table} values ({','.join('?' * len(vals))})", vals)
            n += len(rows) if table == "session" else 0
        copy.commit()
        copy.execute("vacuum")
    return n


def _opencode_storage(scratch: Scratch, dest: Path) -> int:
    """OpenCode 1.0 / 1.1's ``storage/`` files of the case's sessions (session, message and
    part JSON only, paths rewritten) into ``dest``, laid out as OpenCode laid them out."""
    src = scratch.home / ".local" / "share" / "opencode" / "storage"
    sessions = sorted(src.glob("session/*/*.json"))
    if not sessions:
        return 0
    if dest.exists():
        shutil.rmtree(dest)
    files = list(sessions)
    for session in sessions:
        for message in sorted((src / "message" / session.stem).glob("*.json")):
            files.append(message)
            files.extend(sorted((src / "part" / message.stem).glob("*.json")))
    for f in files:
        target = dest / f.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(scratch.rewrite(f.read_bytes()))
    return len(sessions)


def _opencode_session(scratch: Scratch) -> str | None:
    """The id of the first session a run stored in this HOME (database, or 1.0 / 1.1 ``storage/``)."""
    import sqlite3

    data = scratch.home / ".local" / "share" / "opencode"
    if (data / "opencode.db").exists():
        with contextlib.closing(sqlite3.connect(f"file:{data / 'opencode.db'}?mode=ro", uri=True)) as db:
            row = db.execute("select id from session order by time_created, id limit 1").fetchone()
        return str(row[0]) if row else None
    stored = [json.loads(f.read_bytes()) for f in data.glob("storage/session/*/*.json")]
    stored.sort(key=lambda s: (s.get("time", {}).get("created", 0), s.get("id", "")))
    return str(stored[0]["id"]) if stored else None


def record_opencode(binary: Path, out: Output, cases: set[str] | None, log: Callable[[str], None]) -> None:
    version = version_of(binary)
    name = f"opencode-{version}"
    if not out.any_writable(("opencode-json", name), ("opencode-db", name)):
        return

    # `--thinking` came after 1.0 (1.0.185 has no such flag and would stop): pass it only when
    # this version's `run --help` lists it
    run_help = subprocess.run([str(binary), "run", "--help"], capture_output=True, text=True, timeout=60)
    has_thinking = "--thinking" in run_help.stdout + run_help.stderr

    def setup(sc: Scenario, scratch: Scratch, url: str) -> tuple[dict[str, str], list[str]]:
        args = [a for a in sc.args if has_thinking or a != "--thinking"]
        if any("{session}" in a for a in args):
            # the session to continue is the one stored by the run before: some releases
            # (1.15) can exit before printing any line that names it
            stored = _opencode_session(scratch)
            args = [a.replace("{session}", stored) if stored else a for a in args]
        return _opencode_home(sc, scratch, url), [str(binary), *args]

    def write(sc: Scenario, data: bytes, tap: bool) -> None:
        out.write("opencode-json", name, f"{sc.case}.jsonl", data)

    def collect(sc: Scenario, scratch: Scratch) -> None:
        folder = out.folder("opencode-db", name)
        if folder is not None:
            n = _opencode_db(scratch, folder / f"{sc.case}.db") or _opencode_storage(scratch, folder / sc.case)
            log(f"opencode {version} {sc.case}: {n} session(s)")

    run_chains(OPENCODE, cases, ResponsesHandler, setup, write, collect, log, f"opencode {version}")


# ---------------------------------------------------------------- command line


PACKAGES = {
    "claude": "@anthropic-ai/claude-code",
    "codex": "@openai/codex",
    "claude-agent-acp": "@agentclientprotocol/claude-agent-acp",
    "codex-acp": "@agentclientprotocol/codex-acp",
    "gemini": "@google/gemini-cli",
    "opencode": "opencode-ai",
}
AGENTS = ["claude", "codex", "codex-app-server", "claude-agent-acp", "codex-acp", "gemini", "gemini-acp", "opencode"]
PACKAGE_OF = {"claude": "claude", "codex": "codex", "codex-app-server": "codex", "gemini-acp": "gemini"}


def install(prefix: Path, versions: dict[str, str], packages: dict[str, str] | None = None) -> None:
    prefix.mkdir(parents=True, exist_ok=True)
    names = PACKAGES | (packages or {})
    specs = [f"{names[a]}@{v}" for a, v in versions.items()]
    subprocess.run(["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", *specs], check=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--all", action="store_true", help="every agent and scenario")
    p.add_argument("--agent", action="append", choices=AGENTS, help="only this agent (repeatable)")
    p.add_argument("--case", action="append", help="only this case (repeatable; a resumed case brings its first run)")
    p.add_argument("--out", type=Path, default=Path("adapters"), help="the kits' root (default: adapters)")
    p.add_argument("--overwrite", action="store_true", help="write into capture folders that already exist")
    p.add_argument("--npm-dir", type=Path, default=Path("/tmp/normalize-record-npm"), help="where the CLIs are")
    p.add_argument("--install", action="store_true", help="npm install the CLIs into --npm-dir first")
    p.add_argument("--claude-version", default="latest", help="npm version of Claude Code to install")
    p.add_argument("--codex-version", default="latest", help="npm version of Codex to install")
    p.add_argument("--claude-agent-acp-version", default="latest", help="npm version of claude-agent-acp")
    p.add_argument("--codex-acp-version", default="latest", help="npm version of codex-acp")
    p.add_argument(
        "--claude-agent-acp-package",
        default=PACKAGES["claude-agent-acp"],
        help="npm package of claude-agent-acp (older releases: @zed-industries/claude-code-acp)",
    )
    p.add_argument(
        "--codex-acp-package",
        default=PACKAGES["codex-acp"],
        help="npm package of codex-acp (older releases: @zed-industries/codex-acp)",
    )
    p.add_argument("--gemini-version", default="latest", help="npm version of Gemini CLI")
    p.add_argument("--opencode-version", default="latest", help="npm version of OpenCode")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    p.add_argument("--keep", action="store_true", help="keep the scratch folders (requests.jsonl, stderr)")
    args = p.parse_args(argv)
    global KEEP
    KEEP = args.keep
    table = {
        "claude": CLAUDE,
        "codex": CODEX,
        "codex-app-server": APP_SERVER,
        "claude-agent-acp": ACP_CLAUDE,
        "codex-acp": ACP_CODEX,
        "gemini": GEMINI,
        "gemini-acp": ACP_GEMINI,
        "opencode": OPENCODE,
    }
    if args.list:
        for agent in AGENTS:
            for sc in table[agent]:
                print(f"{agent}\t{sc.case}\t{sc.about}")
        return 0
    agents = AGENTS if args.all or not args.agent else args.agent
    packages = sorted({PACKAGE_OF.get(a, a) for a in agents})
    renamed = {"claude-agent-acp": args.claude_agent_acp_package, "codex-acp": args.codex_acp_package}
    if args.install:
        install(args.npm_dir, {pkg: getattr(args, f"{pkg.replace('-', '_')}_version") for pkg in packages}, renamed)
    bin_dir = args.npm_dir / "node_modules" / ".bin"
    cases = set(args.case) if args.case else None

    def log(line: str) -> None:
        print(line, flush=True)

    out = Output(args.out, args.overwrite, log)
    for agent in agents:
        binary = bin_dir / PACKAGE_OF.get(agent, agent)
        if agent in renamed:
            binary = bin_dir / _bin_of(args.npm_dir, renamed[agent])
        if not binary.exists():
            print(f"record: {binary} not found (use --install)", file=sys.stderr)
            return 2
        started = time.monotonic()
        if agent == "claude":
            record_claude(binary, out, cases, log)
        elif agent == "codex":
            record_codex(binary, out, cases, log)
        elif agent == "codex-app-server":
            record_app_server(binary, out, cases, log)
        elif agent == "gemini":
            record_gemini(binary, out, cases, log)
        elif agent == "gemini-acp":
            record_gemini_acp(binary, out, cases, log)
        elif agent == "opencode":
            record_opencode(binary, out, cases, log)
        else:
            record_acp(agent, binary, args.npm_dir, out, cases, log, renamed[agent])
        log(f"{agent}: {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

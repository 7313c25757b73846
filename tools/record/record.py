"""Re-record the capture set: real agent CLIs against scripted fake model servers.

    python tools/record/record.py --install --all --out adapters

runs every scenario of ``scenarios.py`` with Claude Code (stream-json) and
Codex (``exec --json``), each in a fresh scratch HOME and working directory
(holding one file, ``hello.txt``), against a fake server on 127.0.0.1, and
writes:

* ``<out>/claude-stream-json/captures/claude-code-<version>/<case>.jsonl`` (stdout,
  byte for byte) or ``<case>.tap.jsonl`` (both directions, for stdin-driven runs);
* ``<out>/claude-transcript/captures/claude-code-<version>/<case>/`` (the session
  files under ``~/.claude/projects/<project>/``);
* ``<out>/codex-exec-json/captures/codex-<version>/<case>.jsonl`` and
  ``<out>/codex-rollout/captures/codex-<version>/exec-<case>.jsonl``.

Tap lines splice the wire line into ``{"t":…,"from":…,"msg":<line>}`` as is.
The scratch paths are rewritten to ``/home/user/project`` and ``/home/user``
(also in Claude's encoded project name); nothing else is edited.

Only 127.0.0.1 is contacted, plus the npm registry with ``--install``.
"""

from __future__ import annotations

import argparse
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
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scenarios import CLAUDE, CODEX, Scenario, dumps, fill, with_cwd
from servers import AnthropicHandler, FakeServer, ResponsesHandler

HOME = b"/home/user"
NL = b"\n"
PROJECT = b"/home/user/project"
PACKAGES = {"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex"}


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
            (re.sub(r"[^A-Za-z0-9]", "-", str(self.cwd)).encode(), b"-home-user-project"),
        ]
        for old, new in pairs:
            data = data.replace(old, new)
        return data

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


# ---------------------------------------------------------------- running a CLI


class TapWire:
    """Drives a CLI over stdin/stdout and keeps every line in wire order, as tap lines."""

    def __init__(self, proc: subprocess.Popen[bytes], scratch: Scratch) -> None:
        self.proc = proc
        self.scratch = scratch
        self.lines: list[bytes] = []
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
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the agent did not send the awaited line in time")
            msg = self._inbox.get(timeout=left)
            if msg is None:
                raise EOFError("the agent closed its stdout")
            if pred(msg):
                return msg

    def finish(self, timeout: float = 60.0) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        rc = self.proc.wait(timeout)
        self._reader.join(timeout)
        return rc


def run_cli(argv: list[str], sc: Scenario, scratch: Scratch, env: dict[str, str]) -> tuple[int, bytes, bool]:
    """Run one scenario: (exit code, capture bytes, is a tap file)."""
    if sc.drive is None:
        proc = subprocess.run(
            argv, cwd=scratch.cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=300, check=False
        )
        if proc.stderr:
            (scratch.root / "stderr.txt").write_bytes(proc.stderr)
        return proc.returncode, scratch.rewrite(proc.stdout), False
    with subprocess.Popen(
        argv, cwd=scratch.cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as p:
        wire = TapWire(p, scratch)
        try:
            sc.drive(wire)
        finally:
            rc = wire.finish()
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


# ---------------------------------------------------------------- Claude Code


def record_claude(binary: Path, out: Path, cases: set[str] | None, log: Callable[[str], None]) -> None:
    version = version_of(binary)
    stream_dir = out / "claude-stream-json" / "captures" / f"claude-code-{version}"
    transcript_dir = out / "claude-transcript" / "captures" / f"claude-code-{version}"
    for sc in CLAUDE:
        if cases and sc.case not in cases:
            continue
        scratch = Scratch(sc.case)
        with FakeServer(
            with_cwd(sc.script(), str(scratch.cwd)), scratch.root / "requests.jsonl", AnthropicHandler
        ) as srv:
            env = {
                **base_env(scratch),
                "ANTHROPIC_BASE_URL": srv.url,
                "ANTHROPIC_API_KEY": "sk-ant-fake-key",
                "IS_SANDBOX": "1",  # bypassPermissions as root
                "DISABLE_AUTOUPDATER": "1",
                **sc.env,
            }
            argv = [str(binary), *fill(sc.args, str(scratch.cwd))]
            rc, data, tap = run_cli(argv, sc, scratch, env)
        name = f"{sc.case}.tap.jsonl" if tap else f"{sc.case}.jsonl"
        stream_dir.mkdir(parents=True, exist_ok=True)
        (stream_dir / name).write_bytes(data)
        copied = _claude_transcripts(scratch, transcript_dir / sc.case)
        log(f"claude-code {version} {sc.case}: exit {rc}, {data.count(NL)} lines, {copied} session file(s)")
        scratch.remove()


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


def record_codex(binary: Path, out: Path, cases: set[str] | None, log: Callable[[str], None]) -> None:
    version = version_of(binary)
    exec_dir = out / "codex-exec-json" / "captures" / f"codex-{version}"
    rollout_dir = out / "codex-rollout" / "captures" / f"codex-{version}"
    for sc in CODEX:
        if cases and sc.case not in cases:
            continue
        scratch = Scratch(sc.case)
        codex_home = scratch.home / ".codex"
        codex_home.mkdir()
        with FakeServer(
            with_cwd(sc.script(), str(scratch.cwd)), scratch.root / "requests.jsonl", ResponsesHandler
        ) as srv:
            (codex_home / "config.toml").write_text(CODEX_CONFIG.format(url=srv.url))
            env = {**base_env(scratch), "CODEX_HOME": str(codex_home), **sc.env}
            argv = [str(binary), *fill(sc.args, str(scratch.cwd))]
            rc, data, _ = run_cli(argv, sc, scratch, env)
        exec_dir.mkdir(parents=True, exist_ok=True)
        (exec_dir / f"{sc.case}.jsonl").write_bytes(data)
        rollouts = (
            sorted((codex_home / "sessions").rglob("rollout-*.jsonl")) if (codex_home / "sessions").is_dir() else []
        )
        for i, r in enumerate(rollouts):
            rollout_dir.mkdir(parents=True, exist_ok=True)
            suffix = "" if i == 0 else f"-{i + 1}"
            (rollout_dir / f"exec-{sc.case}{suffix}.jsonl").write_bytes(scratch.rewrite(r.read_bytes()))
        log(f"codex {version} {sc.case}: exit {rc}, {data.count(NL)} lines, {len(rollouts)} rollout file(s)")
        scratch.remove()


# ---------------------------------------------------------------- command line


def install(prefix: Path, versions: dict[str, str]) -> None:
    prefix.mkdir(parents=True, exist_ok=True)
    specs = [f"{PACKAGES[a]}@{v}" for a, v in versions.items()]
    subprocess.run(["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", *specs], check=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--all", action="store_true", help="every agent and scenario")
    p.add_argument("--agent", action="append", choices=sorted(PACKAGES), help="only this agent (repeatable)")
    p.add_argument("--case", action="append", help="only this case (repeatable)")
    p.add_argument("--out", type=Path, default=Path("adapters"), help="the kits' root (default: adapters)")
    p.add_argument("--npm-dir", type=Path, default=Path("/tmp/normalize-record-npm"), help="where the CLIs are")
    p.add_argument("--install", action="store_true", help="npm install the CLIs into --npm-dir first")
    p.add_argument("--claude-version", default="latest", help="npm version of Claude Code to install")
    p.add_argument("--codex-version", default="latest", help="npm version of Codex to install")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    args = p.parse_args(argv)
    if args.list:
        for agent, scs in (("claude", CLAUDE), ("codex", CODEX)):
            for sc in scs:
                print(f"{agent}\t{sc.case}\t{sc.about}")
        return 0
    agents = sorted(PACKAGES) if args.all or not args.agent else args.agent
    if args.install:
        install(args.npm_dir, {a: getattr(args, f"{a}_version") for a in agents})
    bin_dir = args.npm_dir / "node_modules" / ".bin"
    cases = set(args.case) if args.case else None

    def log(line: str) -> None:
        print(line, flush=True)

    for agent in agents:
        binary = bin_dir / agent
        if not binary.exists():
            print(f"record: {binary} not found (use --install)", file=sys.stderr)
            return 2
        recorder = record_claude if agent == "claude" else record_codex
        recorder(binary, args.out, cases, log)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

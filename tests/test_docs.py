"""Every code block of README.md and docs/*.md runs as written.

Each document's blocks run in order in one sandbox folder, as a reader would type
them: ``sh`` blocks in bash (the ``normalize`` command of this checkout on PATH),
``python`` blocks as scripts, ``sql`` blocks in DuckDB against the files the
document's own commands exported, ``json`` and ``toml`` blocks parsed (normalized
lines decoded).  ``text`` blocks are synopses and listings: the options a
``normalize`` synopsis names must exist.

The sandbox holds what the examples name: a home folder with Claude Code and
Codex sessions (``HOME`` points there), ``session.jsonl`` and ``SESSION.jsonl``
(an hm session), ``ROLLOUT.jsonl`` (a Codex rollout), ``RECORDING.tap.jsonl``,
``EVENTS.jsonl``, ``FOLDER/`` and ``recordings/`` (sessions), and on PATH the
agent commands ``claude``, ``codex``, ``npx`` and ``hm`` as fakes that play a
recorded session of that agent (tests/fakes/play_capture.py).

A block that cannot run here says why in the document, on the line above it:
``<!-- docs-test: skip: REASON -->``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import ADAPTERS
from helpers import EDGE_CASES as EDGE
from normalize import decode

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FAKES = Path(__file__).resolve().parent / "fakes"
BIN = Path(sys.executable).parent

_BLOCK = re.compile(
    r"^(?:<!-- docs-test: (?P<mark>[^\n]*?) -->\n)?```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^```[ \t]*$",
    re.S | re.M,
)

#: What each fake agent command plays.
AGENTS = {
    "claude": "claude-stream-json/captures/claude-code-2.1.332/01-print-text.jsonl",
    "codex": "codex-app-server/captures/codex-0.169.0/a_simple_turn_streaming.tap.jsonl",
    "npx": "acp/captures/acp-handwritten/a_initialize_new_prompt_streaming.tap.jsonl",
    "hm": "hm-json/captures/hm-handwritten/01_plain_answer.jsonl",
    "gemini": "gemini-stream-json/captures/gemini-cli-0.61.0/text_thinking.jsonl",
    "opencode": "opencode-json/captures/opencode-1.18.33/text_thinking.jsonl",
}
#: Blocks allowed to be skipped, at most (each with its reason in the document).
MAX_SKIPS = 12  # five are docs/scale.md's real clusters (Kubernetes, SLURM, Spark, S3); one docs/drive.md's real agents


@dataclass
class Block:
    doc: Path
    line: int
    lang: str
    body: str
    mark: str | None

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def blocks(doc: Path) -> list[Block]:
    text = doc.read_text()
    out = []
    for m in _BLOCK.finditer(text):
        line = text.count("\n", 0, m.start("lang")) + 1
        out.append(Block(doc, line, m.group("lang"), m.group("body"), m.group("mark")))
    return out


def _sandbox(root: Path) -> dict[str, str]:
    """The folder the examples run in, and their environment."""
    home = root / "home"
    claude = ADAPTERS / "claude-transcript" / "captures"
    shutil.copytree(claude, home / ".claude" / "projects", ignore=shutil.ignore_patterns(EDGE))
    example = next((home / ".claude" / "projects").rglob("4dda36e4-8c20-43d3-84b0-30bf272f951f.jsonl"))
    project = home / ".claude" / "projects" / "-home-user-project"
    project.mkdir()
    shutil.copy(example, project / example.name)
    day = home / ".codex" / "sessions" / "2026" / "11" / "29"
    day.mkdir(parents=True)
    rollouts = sorted(f for f in (ADAPTERS / "codex-rollout" / "captures").rglob("*.jsonl") if EDGE not in f.parts)
    for f in rollouts:
        shutil.copy(f, day / f.name)
    (home / ".claude" / "history.jsonl").write_text('{"display":"hello","timestamp":1764443000000}\n')
    (home / ".codex" / "history.jsonl").write_text('{"session_id":"x","ts":1764443000,"text":"hello"}\n')

    work = root / "work"
    hm = ADAPTERS / "hm-json" / "captures" / "hm-handwritten"
    shutil.copytree(hm, work / "recordings")
    shutil.copytree(hm, work / "FOLDER")
    shutil.copy(hm / "01_plain_answer.jsonl", work / "session.jsonl")
    shutil.copy(hm / "01_plain_answer.jsonl", work / "SESSION.jsonl")
    shutil.copy(rollouts[0], work / "ROLLOUT.jsonl")
    shutil.copy(ADAPTERS / AGENTS["codex"], work / "RECORDING.tap.jsonl")
    bin_dir = root / "bin"
    bin_dir.mkdir()
    for name, capture in AGENTS.items():
        played = ADAPTERS / capture
        if name == "codex":  # its agent lines only: an example that sends nothing still sees the agent work
            played = root / "codex-agent-lines.jsonl"
            lines = [json.loads(ln) for ln in (ADAPTERS / capture).read_text().splitlines() if ln.strip()]
            played.write_text("".join(json.dumps(ln["msg"]) + "\n" for ln in lines if ln["from"] == "agent"))
        script = bin_dir / name
        play = FAKES / "play_capture.py"
        script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{play}" "{played}" --speed 0\n')
        script.chmod(0o755)
    # pip in a doc installs nothing here (the test environment has every extra) and may name only
    # this distribution: `pip install 'normalize[...]'` would install an unrelated project
    pip = bin_dir / "pip"
    pip.write_text(
        '#!/bin/sh\n[ "$1" = install ] || exit 2\nshift\nfor r in "$@"; do case "$r" in\n'
        "  -*) ;;\n  agent-normalize|agent-normalize\\[*) ;;\n"
        '  *) echo "docs: pip install names $r, not agent-normalize" >&2; exit 1 ;;\nesac; done\n'
    )
    pip.chmod(0o755)
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "COLUMNS")},
        "HOME": str(home),
        "PATH": f"{bin_dir}{os.pathsep}{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(ROOT / "src"),
    }
    events = subprocess.run(
        [str(BIN / "normalize"), "convert", "SESSION.jsonl"], cwd=work, env=env, capture_output=True, check=True
    )
    (work / "EVENTS.jsonl").write_bytes(events.stdout)
    return env


def _run(block: Block, work: Path, env: dict[str, str]) -> None:
    if block.lang == "sh":
        cmd = ["bash", "-euo", "pipefail", "-c", block.body]
        done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, f"{block.where}: exit {done.returncode}\n{done.stderr[-3000:]}"
    elif block.lang == "python":
        script = work / f"_block_{block.line}.py"
        script.write_text(block.body)
        done = subprocess.run(
            [sys.executable, str(script)], cwd=work, env=env, capture_output=True, text=True, timeout=300, check=False
        )
        assert done.returncode == 0, f"{block.where}:\n{done.stderr[-3000:]}"
    elif block.lang == "sql":
        duckdb = pytest.importorskip("duckdb")
        con = duckdb.connect(str(work / "sessions.duckdb"), read_only=True)
        try:
            with contextlib.chdir(work):  # paths in the queries are the reader's, relative to the sandbox
                for statement in (s.strip() for s in block.body.split(";")):
                    if statement:
                        rows = con.execute(statement).fetchall()
                        assert rows, f"{block.where}: no rows from {statement!r}"
        finally:
            con.close()
    elif block.lang == "json":
        for line in block.body.splitlines():
            decode(line.encode())  # a normalized stream line, one per line
    elif block.lang == "toml":
        tomllib.loads(block.body)
    elif block.lang == "text":
        _check_synopsis(block, env)
    else:
        raise AssertionError(f"{block.where}: a code block says its language (sh, python, sql, json, toml, text)")


def _check_synopsis(block: Block, env: dict[str, str]) -> None:
    """A ``normalize`` synopsis names only options its command has."""
    first = block.body.split()
    if len(first) < 2 or first[0] != "normalize":
        return
    helped = subprocess.run(
        [str(BIN / "normalize"), first[1], "--help"], env=env, capture_output=True, text=True, check=False
    )
    for option in re.findall(r"(?<![\w-])--[a-z][\w-]*", block.body):
        assert option in helped.stdout, f"{block.where}: normalize {first[1]} has no {option}"


@pytest.mark.parametrize("doc", DOCS, ids=[d.relative_to(ROOT).as_posix() for d in DOCS])
def test_every_code_block_runs_as_written(doc: Path, tmp_path: Path) -> None:
    env = _sandbox(tmp_path)
    work = tmp_path / "work"
    for block in blocks(doc):
        if block.mark is not None:
            continue
        _run(block, work, env)


def test_skipped_blocks_say_why_and_are_few() -> None:
    marked = [b for doc in DOCS for b in blocks(doc) if b.mark is not None]
    for b in marked:
        assert re.fullmatch(r"skip: \S.{8,}", b.mark or ""), f"{b.where}: say why: <!-- docs-test: skip: REASON -->"
    assert len(marked) <= MAX_SKIPS, [b.where for b in marked]


def test_the_docs_have_code_blocks() -> None:
    found = {d.name: len(blocks(d)) for d in DOCS}
    assert found["README.md"] >= 3 and found["analytics.md"] >= 4 and found["live.md"] >= 4, found
    # a block the pattern missed would not run: every fence is accounted for
    for doc in DOCS:
        fences = len(re.findall(r"^```", doc.read_text(), re.M))
        assert fences == 2 * len(blocks(doc)), doc

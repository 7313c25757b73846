"""``export --dask``: a real scheduler and two workers on 127.0.0.1 give the local export's dataset, row for row."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from helpers import ADAPTERS, GOLDEN
from normalize.analytics import (
    EVENT_COLUMNS,
    TABLES,
    ExportReport,
    InputSpec,
    arrow_schema,
    discover,
    event_batch,
    export,
    read_input,
    record_batches,
    session_events,
)

distributed = pytest.importorskip("distributed")
pa = pytest.importorskip("pyarrow")
pytest.importorskip("duckdb")

import pyarrow.dataset as pads  # type: ignore[import-untyped, unused-ignore]  # noqa: E402

from normalize.analytics import _dask  # noqa: E402
from normalize.analytics._dask import Task, plan  # noqa: E402
from normalize.analytics._listing import ListedInput, list_inputs  # noqa: E402
from normalize.analytics._load import rows_of  # noqa: E402
from normalize.analytics._store import ParquetStore  # noqa: E402

#: Small tasks, so that the kits make dozens of them and both workers get some.
TASK_BYTES = 256 << 10


def _rows(root: Path, table: str) -> list[dict[str, Any]]:
    """Every row of a table of a dataset, partition columns included, in a canonical order."""
    folder = root / table
    if not folder.is_dir():
        return []
    t = pads.dataset(str(folder), format="parquet", partitioning="hive").to_table()
    return sorted(t.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _same_report(report: ExportReport, want: dict[str, Any], name: Any = str) -> None:
    """The counts of the local export, and the same inputs reported (the wording is the worker's)."""
    got = report.as_json()
    assert {k: got[k] for k in ("added", "replaced", "skipped", "sessions")} == {
        k: want[k] for k in ("added", "replaced", "skipped", "sessions")
    }
    assert sorted(p.split(": ")[0] for p in got["problems"]) == sorted(name(p.split(": ")[0]) for p in want["problems"])


def _same_dataset(got: Path, want: Path) -> None:
    for table in TABLES:
        a, b = _rows(got, table), _rows(want, table)
        assert len(a) == len(b), table
        assert a == b, table
    assert not (got / "_staging").exists()


@pytest.fixture(scope="module")
def kits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A third of the kits, copied as laid out in adapters/: of each protocol's captures
    folders, every third one, its edge cases (inputs an adapter must report) and the
    folders holding an empty capture. Every protocol and every kind of input, in about 7 of
    the kits' 23 MB: the runs below export it five times over, and the whole kits would
    add nothing the export does differently, only time."""
    root = tmp_path_factory.mktemp("kits")
    for protocol in sorted(p for p in ADAPTERS.iterdir() if (p / "captures").is_dir()):
        for n, entry in enumerate(sorted((protocol / "captures").iterdir())):
            files = [f for f in entry.rglob("*") if f.is_file()] if entry.is_dir() else [entry]
            if n % 3 and entry.name != "edge-cases" and all(f.stat().st_size for f in files):
                continue
            to = root / entry.relative_to(ADAPTERS)
            if entry.is_dir():
                shutil.copytree(entry, to)
            else:
                to.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(entry, to)
    return root


@pytest.fixture(scope="module")
def local(kits: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The kits exported on this machine, in one process: the dataset every cluster run must give."""
    out = tmp_path_factory.mktemp("local") / "dataset"
    report = export([kits], out, jobs=1)
    assert report.result.added > 50
    return out, report.as_json()


class Cluster:
    """``dask scheduler`` and ``dask worker`` processes on 127.0.0.1 (no nanny: a killed worker stays dead)."""

    def __init__(self, folder: Path, workers: int) -> None:
        self.folder = folder
        self.file = folder / "scheduler.json"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.log = (folder / "cluster.log").open("wb")
        common = ["--no-dashboard", "--host", "127.0.0.1"]
        self._start(["scheduler", "--scheduler-file", str(self.file), "--port", "0", *common])
        for _ in range(100):
            if self.file.exists() and self.file.stat().st_size:
                break
            time.sleep(0.1)
        for _ in range(workers):
            self.add_worker()
        self.address = json.loads(self.file.read_text())["address"]
        assert self.address.startswith("tcp://127.0.0.1:")

    def add_worker(self) -> None:
        name = f"w{len(self.procs)}"
        worker = ["worker", "--scheduler-file", str(self.file), "--nthreads", "1", "--no-nanny", "--name", name]
        self._start([*worker, "--no-dashboard", "--host", "127.0.0.1", "--local-directory", str(self.folder / name)])

    def _start(self, args: list[str]) -> None:
        # the workers import normalize from this tree, as a user's cluster imports the installed package
        self.procs.append(subprocess.Popen([sys.executable, "-m", "dask", *args], stdout=self.log, stderr=self.log))

    def client(self, workers: int) -> Any:
        client = distributed.Client(self.address, timeout="30s")
        client.wait_for_workers(workers, timeout=60)
        return client

    def stop(self) -> None:
        # nothing to save in the workers: killed at once, then the scheduler
        for p in reversed(self.procs):
            if p.poll() is None:
                p.kill()
            p.wait()
        self.log.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(tmp_path_factory.mktemp("cluster"), 2)
    try:
        c.client(2).close()
        yield c
    finally:
        c.stop()


def _normalize(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "normalize", *args], capture_output=True, text=True, timeout=300, check=False
    )


def test_the_cli_on_a_scheduler_with_two_workers_gives_the_local_dataset(
    cluster: Cluster, kits: Path, local: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    want, counts = local
    out = tmp_path / "dataset"
    args = ["export", str(kits), "--parquet", str(out), "--dask", cluster.address, "--task-mb", "0.25"]
    run = _normalize(*args)
    assert run.returncode == 1, run.stderr  # the kits hold one empty capture, reported as the local export does
    assert f"{counts['added']} added, 0 replaced, {counts['skipped']} already there" in run.stderr
    assert run.stderr.count("normalize: skipped:") == len(counts["problems"])
    _same_dataset(out, want)


def test_from_python_the_tasks_are_spread_over_both_workers(
    cluster: Cluster, kits: Path, local: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    want, counts = local
    with cluster.client(2) as client:
        with distributed.get_task_stream(client) as stream:
            report = export([kits], tmp_path / "dataset", client=client, task_bytes=TASK_BYTES)
        workers = {t["worker"] for t in stream.data if str(t["key"]).startswith("normalize-export-")}
        assert len(workers) == 2
        assert report.tasks > 10
        _same_report(report, counts)
        _same_dataset(tmp_path / "dataset", want)
        # incremental: a second run reads only the inputs it could not read before (the
        # kits' broken captures), adds nothing and rewrites nothing
        files = {p: p.stat().st_mtime_ns for p in (tmp_path / "dataset").rglob("*.parquet")}
        again = export([kits], tmp_path / "dataset", client=client, task_bytes=TASK_BYTES)
        assert again.result.as_json() == {"added": 0, "replaced": 0, "skipped": 0}
        assert again.sessions == 0
        assert len(again.problems) == len(counts["problems"])
        assert again.unchanged == again.inputs - len(counts["problems"]) == report.inputs - len(counts["problems"])
        assert {p: p.stat().st_mtime_ns for p in (tmp_path / "dataset").rglob("*.parquet")} == files
        # reread: every input read again, every session found already there as fully
        full = export([kits], tmp_path / "dataset", client=client, task_bytes=TASK_BYTES, reread=True)
        assert full.unchanged == 0
        assert full.result.as_json() == {"added": 0, "replaced": 0, "skipped": counts["added"] + counts["skipped"]}
        assert {p: p.stat().st_mtime_ns for p in (tmp_path / "dataset").rglob("*.parquet")} == files
        _same_dataset(tmp_path / "dataset", want)


def test_inputs_named_by_url_are_listed_by_the_client_and_read_by_the_workers(
    cluster: Cluster, kits: Path, tmp_path: Path
) -> None:
    """``file://`` goes through fsspec as ``s3://`` would: the same rows, ``source`` the URL.

    Over the Claude and Codex kits: a URL listing reads no file, so it cannot open a session
    database (OpenCode's) the way a local listing does."""
    kits_read = [kits / "claude-transcript", kits / "codex-rollout", kits / "codex-app-server"]
    want = tmp_path / "local"
    counts = export(kits_read, want, jobs=1).as_json()
    with cluster.client(2) as client:
        report = export([k.as_uri() for k in kits_read], tmp_path / "dataset", client=client, task_bytes=TASK_BYTES)
        # the listing's times are the stamps: a second run reads no file again
        again = export([k.as_uri() for k in kits_read], tmp_path / "dataset", client=client, task_bytes=TASK_BYTES)
    assert (again.unchanged, again.sessions) == (report.inputs - len(report.problems), 0)
    assert again.tasks == (1 if report.problems else 0)  # only the inputs it could not read are read again
    _same_report(report, counts, name=lambda p: Path(p).as_uri())
    for table in TABLES:
        got = _rows(tmp_path / "dataset", table)
        expected = _rows(want, table)
        if table == "sessions":
            expected = sorted(
                ({**r, "source": Path(r["source"]).as_uri()} for r in expected),
                key=lambda r: json.dumps(r, sort_keys=True, default=str),
            )
        assert got == expected, table


def test_a_url_listing_reads_json_session_documents_and_passes_over_other_json(
    cluster: Cluster, tmp_path: Path
) -> None:
    """Gemini CLI's chats before 0.39 (one JSON document each) below a URL are exported as from a local folder.

    The client lists every ``*.json`` unread; the worker reads the documents an adapter
    reads, and passes over the rest without a report, as a local listing does."""
    folder = tmp_path / "chats"
    shutil.copytree(ADAPTERS / "gemini-chat" / "captures" / "gemini-cli-0.38.2", folder)
    chats = sorted(folder.glob("*.json"))
    assert chats and all(c.read_bytes().startswith(b"{\n") for c in chats)
    (folder / "settings.json").write_text('{\n  "theme": "dark",\n  "model": {"name": "gemini-2.5-pro"}\n}\n')
    (folder / "projects.json").write_text('{"projects": {}}\n')
    (folder / "notes.json").write_text("not JSON at all\n")
    want = tmp_path / "local"
    counts = export([folder], want, jobs=1).as_json()
    assert counts["sessions"] == len(chats) and not counts["problems"]
    listed = list_inputs(folder.as_uri())
    assert len(listed) == len(chats) + 3  # listed unread: the worker tells
    with cluster.client(2) as client:
        report = export([folder.as_uri()], tmp_path / "dataset", client=client, task_bytes=TASK_BYTES)
    _same_report(report, counts, name=lambda p: Path(p).as_uri())
    sessions = _rows(tmp_path / "dataset", "sessions")
    assert sorted(r["source"] for r in sessions) == sorted(c.as_uri() for c in chats)
    for table in TABLES:
        if table != "sessions":
            assert _rows(tmp_path / "dataset", table) == _rows(want, table), table


def test_listing_joins_companions_as_local_discovery_does() -> None:
    """The client groups a Claude transcript with its sub-agent files from the names alone, paths or URLs."""
    kit = ADAPTERS / "claude-transcript" / "captures" / "claude-code-2.1.332"  # subagents/ folders: named by path
    local = [s for s in discover([kit]) if isinstance(s, InputSpec)]
    want = sorted((s.main, s.companions) for s in local)
    assert any(c for _, c in want)
    assert sorted((r.main, r.companions) for r in list_inputs(kit)) == want
    as_url = sorted((r.main, r.companions) for r in list_inputs(kit.as_uri()))
    # and, listed unread, the *.json files (here the sub-agents' .meta.json) a worker tells from sessions
    json_files = sorted((p.as_uri(), ()) for p in kit.rglob("*.json"))
    assert json_files and all(m.endswith(".meta.json") for m, _ in json_files)
    assert [i for i in as_url if i not in json_files] == sorted(
        (Path(m).as_uri(), tuple(Path(c).as_uri() for c in cs)) for m, cs in want
    )
    assert set(json_files) <= set(as_url)
    sizes = {s.main: sum(Path(p).stat().st_size for p in [s.main, *s.companions]) for s in local}
    assert {r.main: r.size for r in list_inputs(kit)} == sizes
    # a session file named alone brings its companions, as discover does
    main, comps = next((m, c) for m, c in want if c)
    assert [(r.main, r.companions) for r in list_inputs(Path(main))] == [(main, comps)]


def test_listing_a_session_named_with_glob_characters_joins_its_own_companions(tmp_path: Path) -> None:
    capture = ADAPTERS / "claude-transcript" / "captures" / "claude-code-2.1.332" / "12-subagent-task"
    (main,) = capture.glob("*.jsonl")
    (agent,) = capture.glob("*/subagents/agent-*.jsonl")
    for stem in ("[x]", "x"):  # "[x]" as a pattern matches "x": each must get its own sub-agent only
        (tmp_path / f"{stem}.jsonl").write_bytes(main.read_bytes())
        (tmp_path / stem / "subagents").mkdir(parents=True)
        (tmp_path / stem / "subagents" / agent.name).write_bytes(agent.read_bytes())
    want = sorted((s.main, s.companions) for s in discover([tmp_path]) if isinstance(s, InputSpec))
    assert [(Path(m).name, [Path(c).relative_to(tmp_path).as_posix() for c in cs]) for m, cs in want] == [
        ("[x].jsonl", [f"[x]/subagents/{agent.name}"]),
        ("x.jsonl", [f"x/subagents/{agent.name}"]),
    ]
    assert sorted((r.main, r.companions) for r in list_inputs(tmp_path)) == want
    assert [(r.main, r.companions) for r in list_inputs(tmp_path / "[x].jsonl")] == [want[0]]


def test_a_local_listing_joins_the_files_that_name_their_session_inside() -> None:
    """Claude Code 2.0.x writes agent-*.jsonl beside the session, naming it only inside: read for local paths."""
    kit = ADAPTERS / "claude-transcript" / "captures" / "claude-code-2.0.76"
    want = sorted((s.main, s.companions) for s in discover([kit]) if isinstance(s, InputSpec))
    assert any(any("agent-" in c for c in cs) for _, cs in want)
    assert sorted((r.main, r.companions) for r in list_inputs(kit)) == want


def test_a_richer_input_replaces_a_stored_session_as_locally(cluster: Cluster, tmp_path: Path) -> None:
    """The live stream of a Claude session exported first, its fuller transcript later: replaced, all tables."""
    live = ADAPTERS / "claude-stream-json" / "captures" / "claude-code-2.1.332" / "28-resume-pre.jsonl"
    stored = ADAPTERS / "claude-transcript" / "captures" / "claude-code-2.1.332" / "28-resume"
    other = live.with_name("01-print-text.jsonl")  # stored in the same files as the live one
    assert live.is_file() and stored.is_dir() and other.is_file()
    export([live, other], tmp_path / "local", jobs=1)
    local = export([stored], tmp_path / "local", jobs=1)
    with cluster.client(2) as client:
        export([live, other], tmp_path / "dask", client=client)
        report = export([stored], tmp_path / "dask", client=client)
    assert report.result.as_json() == local.result.as_json() == {"added": 0, "replaced": 1, "skipped": 0}
    _same_dataset(tmp_path / "dask", tmp_path / "local")
    assert len(_rows(tmp_path / "dask", "sessions")) == 2


@pytest.mark.parametrize("holding", [False, True], ids=["running-a-task", "holding-results"])
def test_a_worker_killed_mid_run_loses_and_duplicates_no_row(
    cluster: Cluster, kits: Path, local: tuple[Path, dict[str, Any]], tmp_path: Path, holding: bool
) -> None:
    """A worker dies while it runs a task, or while it holds finished results the client has not fetched yet."""
    want, counts = local
    killed: list[tuple[int, int]] = []
    in_hand: list[str] = []  # the tasks the killed worker was running, or whose results it held
    try:
        with cluster.client(2) as client:
            pids = client.run(os.getpid)

            def kill_one(done: int, total: int) -> None:
                if killed:
                    return
                if holding:
                    # the client waits here while the other tasks finish, their results left on the workers;
                    # meanwhile the scheduler's memory manager (every 2 s) drops extra replicas of any data
                    time.sleep(3)
                    held = [(w, keys) for w, keys in client.has_what().items() if keys]
                    if not held:
                        return
                    worker, keys = max(held, key=lambda wk: len(wk[1]))
                else:
                    busy = [(w, keys) for w, keys in client.processing().items() if keys]
                    if not busy:  # between two tasks: the next progress call tries again
                        return
                    worker, keys = busy[0]
                os.kill(pids[worker], signal.SIGKILL)
                killed.append((done, total))
                in_hand.extend(str(k) for k in keys)

            with distributed.get_task_stream(client) as stream:
                report = export([kits], tmp_path / "dataset", client=client, task_bytes=TASK_BYTES, progress=kill_one)
            survivors = set(client.scheduler_info()["workers"])
    finally:
        cluster.add_worker()  # two again, for the tests after this one
    assert killed and killed[0][0] < killed[0][1]
    assert len(survivors) == 1
    # what the killed worker had in hand was done again by the other one
    redone = {str(t["key"]) for t in stream.data if t["worker"] in survivors}
    assert in_hand and set(in_hand) <= redone
    assert report.split == 0  # a worker's death is not a failure of its tasks: nothing was split
    _same_report(report, counts)
    _same_dataset(tmp_path / "dataset", want)


def test_a_file_that_fails_twice_is_reported_and_the_others_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task of several inputs that fails twice is split; the input that fails twice alone is named."""
    kit = ADAPTERS / "hm-json"
    bad = kit / "captures" / "hm-handwritten" / "01_plain_answer.jsonl"
    assert bad.is_file()
    want = export([kit], tmp_path / "local", jobs=1)
    calls: list[str] = []

    def flaky(stream: Any, source: str) -> Any:
        if source == str(bad):
            calls.append(source)
            raise RuntimeError("the converter crashed")
        return rows_of(stream, source)

    # workers in this process (threads), so that they run the patched converter
    monkeypatch.setattr(_dask, "rows_of", flaky)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0"
        ) as lc,
        distributed.Client(lc) as client,
    ):
        report = export([kit], tmp_path / "dataset", client=client, task_bytes=1 << 20)
    assert len(calls) == 4  # twice in its task, twice alone
    assert report.split == 1
    failed = [p for p in report.problems if "failed twice on the cluster" in p]
    assert failed == [f"{bad}: failed twice on the cluster (RuntimeError: the converter crashed)"]
    # every other session is there, as in the local export of the kit, and only the bad file's are missing
    lost = {s.key for s in read_input(InputSpec("native", str(bad), "hm-json"))}
    got = _rows(tmp_path / "dataset", "sessions")
    expected = [r for r in _rows(tmp_path / "local", "sessions") if r["root_key"] not in lost]
    assert lost and got == expected
    assert report.result.added == want.result.added - len(lost)


def test_tasks_are_grouped_by_size_largest_first() -> None:
    sizes = [5, 100, 30, 30, 1, 250, 60, 20]
    specs = [ListedInput(f"f{i}.jsonl", size=size) for i, size in enumerate(sizes)]
    tasks = plan(specs, sizes, 100)
    assert sorted(s.main for t in tasks for s in t.specs) == sorted(s.main for s in specs)
    assert [t.index for t in tasks] == list(range(len(tasks)))
    assert [t.size for t in tasks] == sorted((t.size for t in tasks), reverse=True)
    assert tasks[0] == Task(0, (specs[5],), 250)  # the huge one alone, first
    assert all(t.size <= 100 or len(t.specs) == 1 for t in tasks)
    assert len(tasks) == 4  # 250 | 100 | 60+30 | 30+20+5+1


def _native_kit_files() -> list[Path]:
    files = [
        next((ADAPTERS / protocol / "captures").rglob("*.jsonl"))
        for protocol in ("hm-json", "codex-rollout", "acp", "claude-stream-json")
    ]
    return [*files, next((GOLDEN / "hm-json").rglob("*.jsonl"))]


def test_the_pure_functions_on_file_bytes_give_the_export_rows() -> None:
    """What a Spark ``mapInArrow`` over ``binaryFile`` computes: bytes in, the export's rows out, per table."""
    for path in _native_kit_files():
        spec = InputSpec("normalized" if path.is_relative_to(GOLDEN) else "native", str(path))
        want = read_input(spec)
        batches = record_batches(session_events(path.read_bytes(), name=str(path)), source=str(path))
        assert set(batches) == set(TABLES)
        for table, batch in batches.items():
            assert batch.schema == arrow_schema(table)
            assert (
                batch.to_pylist()
                == pa.Table.from_batches([record_batches(session_events(spec), source=str(path))[table]]).to_pylist()
            )
        assert batches["sessions"].num_rows == sum(len(s.tables["sessions"]) for s in want) > 0
        assert batches["events"].num_rows == sum(len(s.tables["events"]) for s in want)


def test_local_n_starts_its_own_cluster(tmp_path: Path) -> None:
    kit = ADAPTERS / "codex-rollout"
    want = export([kit], tmp_path / "local", jobs=1)
    run = _normalize("export", str(kit), "--parquet", str(tmp_path / "dask"), "--dask", "local[1]", "--task-mb", "0.1")
    assert run.returncode == 0, run.stderr
    assert f"{want.result.added} added, 0 replaced, {want.result.skipped} already there" in run.stderr
    _same_dataset(tmp_path / "dask", tmp_path / "local")


def test_event_batch_keeps_each_event_whole() -> None:
    path = ADAPTERS / "hm-json" / "captures" / "hm-handwritten" / "01_plain_answer.jsonl"
    lines = {line.strip() for line in path.read_bytes().splitlines() if line.strip()}
    batch = event_batch(session_events(path.read_bytes()))
    assert batch.schema.names == list(EVENT_COLUMNS)
    rows = batch.to_pylist()
    table = record_batches(session_events(path.read_bytes()), source=str(path))["events"].to_pylist()
    assert [(r["seq"], r["ts"], r["kind"], r["method"]) for r in rows] == [
        (r["seq"], r["ts"], r["kind"], r["method"]) for r in table
    ]
    for r in rows:
        assert json.loads(r["body"])["kind"] == r["kind"]
        assert r["native"] in lines  # the native line, byte for byte
    assert {r["kind"] for r in rows} > {"turn-start", "turn-complete"}


def test_dask_refuses_duckdb_and_jobs(tmp_path: Path) -> None:
    base = ["export", str(ADAPTERS / "hm-json"), "--dask", "local[1]"]
    duck = _normalize(*base, "--duckdb", str(tmp_path / "x.duckdb"))
    assert duck.returncode == 2 and "--dask writes a Parquet dataset" in duck.stderr
    jobs = _normalize(*base, "--parquet", str(tmp_path / "d"), "-j", "2")
    assert jobs.returncode == 2 and "--jobs is for one machine" in jobs.stderr


def test_redact_on_the_cluster_leaves_no_secret_in_any_table(cluster: Cluster, tmp_path: Path) -> None:
    """``--redact`` is done by the workers: the dataset is the local ``--redact`` export's, no secret in it."""
    pytest.importorskip("detect_secrets")
    key, password = "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0EdCbA", "export-s3cret-v4lue"
    capture = ADAPTERS / "claude-stream-json" / "captures" / "claude-code-2.1.332" / "12-subagent-task.jsonl"
    text = capture.read_text().replace("general-purpose", f"general-purpose {key}")
    text = text.replace("Answer a tiny question", f"Answer a tiny question, DB_PASSWORD={password}")
    assert key in text and password in text
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "s.jsonl").write_text(text)

    def dump(root: Path) -> str:
        return json.dumps([_rows(root, t) for t in TABLES], default=str)

    local = export([folder], tmp_path / "local", jobs=1, redact=True)
    assert local.redacted["anthropic-key"] >= 1
    assert key not in dump(tmp_path / "local") and password not in dump(tmp_path / "local")
    export([folder], tmp_path / "plain", jobs=1)
    assert key in dump(tmp_path / "plain") and password in dump(tmp_path / "plain")  # the rows do carry them

    args = ["export", str(folder), "--parquet", str(tmp_path / "cli"), "--dask", cluster.address, "--redact"]
    run = _normalize(*args)
    assert run.returncode == 0, run.stderr
    assert f"normalize: redacted {', '.join(f'{n} {k}' for k, n in sorted(local.redacted.items()))}" in run.stderr
    assert "not redacted by this run" not in run.stderr
    _same_dataset(tmp_path / "cli", tmp_path / "local")
    with cluster.client(2) as client:
        report = export([folder], tmp_path / "api", client=client, redact=True)
        assert report.redacted == local.redacted
        _same_dataset(tmp_path / "api", tmp_path / "local")
        # a session stored unredacted is not rewritten: the run says so
        again = _normalize(*args[:3], str(tmp_path / "plain"), *args[4:])
    assert again.returncode == 0, again.stderr
    assert "the 1 session(s) already there were left as they were, not redacted" in again.stderr


def test_a_run_reads_again_only_the_inputs_changed_since_the_last(cluster: Cluster, tmp_path: Path) -> None:
    """The client stamps what it listed (size, time), the workers read only what changed; the
    local export and the cluster's share the stamps."""
    kit = tmp_path / "in"
    shutil.copytree(ADAPTERS / "codex-rollout" / "captures", kit)
    out = tmp_path / "dataset"
    with cluster.client(2) as client:
        first = export([kit], out, client=client, task_bytes=TASK_BYTES)
        assert first.unchanged == 0 and first.result.added > 20
        broken = len(first.problems)  # read again each time, as locally
        touched = next(p for p in sorted(kit.rglob("*.jsonl")) if str(p) not in " ".join(first.problems))
        st = touched.stat()
        os.utime(touched, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))  # same bytes, a new time
        second = export([kit], out, client=client, task_bytes=TASK_BYTES)
    assert second.unchanged == first.inputs - broken - 1
    assert second.sessions >= 1 and second.result.added == second.result.replaced == 0
    assert second.result.skipped == second.sessions  # its sessions are there as fully
    # the local export finds the cluster's stamps: nothing read but the broken inputs
    local = export([kit], out, jobs=1)
    assert (local.unchanged, local.sessions, len(local.problems)) == (first.inputs - broken, 0, broken)
    run = _normalize("export", str(kit), "--parquet", str(out), "--dask", cluster.address)
    assert f"normalize: {first.inputs - broken} files unchanged since the last export, not read again" in run.stderr
    assert "0 added, 0 replaced, 0 already there" in run.stderr
    assert run.returncode == (1 if broken else 0), run.stderr  # found sessions: unchanged ones count
    every = _normalize("export", str(kit), "--parquet", str(out), "--dask", cluster.address, "--all")
    assert "unchanged since the last export" not in every.stderr
    assert f"0 added, 0 replaced, {first.result.added + first.result.skipped} already there" in every.stderr


def test_an_input_is_unchanged_only_as_listed_when_stamped() -> None:
    """Size, time and an object store's version tag must all be the stamped ones; a listing without a time never is."""
    from normalize.analytics._listing import Listed, _modified_ns
    from normalize.analytics._store import _Buffered

    spec = ListedInput("s3://b/a.jsonl", ("s3://b/a/subagents/x.jsonl",), files=(Listed(10, 5, "e1"), Listed(3, 6)))
    store = _Buffered()
    store._save_files = lambda: None  # type: ignore[method-assign]
    assert not store.unchanged_listed(spec)
    store.remember_listed([spec])
    assert store.unchanged_listed(spec)
    for changed in [
        ListedInput(spec.main, spec.companions, files=(Listed(11, 5, "e1"), Listed(3, 6))),  # size
        ListedInput(spec.main, spec.companions, files=(Listed(10, 7, "e1"), Listed(3, 6))),  # time
        ListedInput(spec.main, spec.companions, files=(Listed(10, 5, "e2"), Listed(3, 6))),  # tag
        ListedInput(spec.main, spec.companions, files=(Listed(10, 5, "e1"), Listed(4, 6))),  # a companion
        ListedInput(spec.main, (), files=(Listed(10, 5, "e1"),)),  # a companion gone
    ]:
        assert not store.unchanged_listed(changed), changed
    timeless = ListedInput("s3://b/c.jsonl", files=(Listed(10, 0),))
    store.remember_listed([timeless])
    assert not store.unchanged_listed(timeless)
    # the forms fsspec file systems give a modification time
    when = datetime(2026, 12, 3, 12, 0, 0, 250000, tzinfo=UTC)
    ns = 1796299200_250000000
    assert _modified_ns(when) == _modified_ns("2026-12-03T12:00:00.250Z") == _modified_ns(when.timestamp()) == ns
    assert _modified_ns(when.replace(tzinfo=None)) == ns  # naive: UTC
    assert _modified_ns(None) == _modified_ns("yesterday") == _modified_ns(True) == 0


def test_without_a_path_the_agents_folders_are_exported_as_locally(cluster: Cluster, tmp_path: Path) -> None:
    """No path: the agents' own folders; their prompt history beside the sessions is no session, on the cluster too."""
    home = tmp_path / "home"
    day = home / ".codex" / "sessions" / "2026" / "11" / "29"
    day.mkdir(parents=True)
    for f in sorted((ADAPTERS / "codex-rollout" / "captures" / "codex-0.171.0").glob("*.jsonl")):
        shutil.copy(f, day / f.name)
    (home / ".codex" / "history.jsonl").write_text('{"session_id":"x","ts":1764443000,"text":"fix the tests"}\n')
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME")}
    env["HOME"] = str(home)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "normalize", "export", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False, env=env)

    local = cli("--parquet", str(tmp_path / "local"), "-j", "1")
    assert local.returncode == 0, local.stderr
    assert "~/.codex/sessions (codex)" in local.stderr
    dask = cli("--parquet", str(tmp_path / "dask"), "--dask", cluster.address)
    assert dask.returncode == 0, dask.stderr
    assert "~/.codex/sessions (codex)" in dask.stderr
    assert len(_rows(tmp_path / "dask", "sessions")) > 3
    _same_dataset(tmp_path / "dask", tmp_path / "local")
    # the agent's folder named: its history file is left out, not reported
    named = cli(str(home / ".codex"), "--parquet", str(tmp_path / "named"), "--dask", cluster.address)
    assert named.returncode == 0, named.stderr
    assert "skipped" not in named.stderr
    _same_dataset(tmp_path / "named", tmp_path / "local")


def test_two_tasks_that_stage_the_same_sessions_each_keep_the_ones_they_won(tmp_path: Path) -> None:
    """A Codex thread and its sub-agent's, from the live app-server recording in one task and
    from their rollouts in another: both tasks stage the same two sessions under the same file
    name, and each wins one (the sub-agent's rollout says more). Both land in the dataset, as
    the local export gives them, none replaced by the other task's file."""
    live = ADAPTERS / "codex-app-server" / "captures" / "codex-0.150.0" / "i_collab_agent.tap.jsonl"
    stored = tmp_path / "rollouts"  # the two rollouts of that run, alone in their folder
    stored.mkdir()
    for name in ("app-server-i_collab_agent.jsonl", "app-server-i_collab_agent-2.jsonl"):
        shutil.copy(ADAPTERS / "codex-rollout" / "captures" / "codex-0.150.0" / name, stored / name)
    export([live, stored], tmp_path / "local", jobs=1)
    store = ParquetStore(tmp_path / "dask")
    run = tmp_path / "dask" / "_staging" / "run"
    known = _dask.write_stored(run / "stored.json", {})
    results = [
        _dask.convert_task(n, list_inputs(path), os.getcwd(), str(run / f"{n:06d}"), known)
        for n, path in enumerate((live, stored))
    ]
    staged = [{s.key for s in r.staged} for r in results]
    assert staged[0] == staged[1] and len(staged[0]) == 2  # the same sessions, in both tasks
    _dask._commit(store, run, results)
    shutil.rmtree(run.parent)
    _same_dataset(tmp_path / "dask", tmp_path / "local")
    assert len(_rows(tmp_path / "dask", "sessions")) == 2

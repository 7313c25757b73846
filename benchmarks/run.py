"""normalize's performance harness: throughput against the msgspec floor and the
upstream SDK parsers, peak memory, import time, streaming of a big file.

    .venv/bin/python benchmarks/run.py            # the full report (several minutes)
    .venv/bin/python benchmarks/run.py --write    # ... and put it into docs/performance.md
    .venv/bin/python benchmarks/run.py --quick    # regression guard against baseline.json (seconds)
    .venv/bin/python benchmarks/run.py --quick --record   # write a new baseline.json
    .venv/bin/python benchmarks/run.py --compiled --write # the compiled build, into its own section
    .venv/bin/python benchmarks/run.py --mix REV          # sessions made of the captures of revision REV

Everything is measured in one process and one run, so the ratios (normalize
against the floor, normalize against a peer) hold on any machine even when the
absolute times do not.  Each timing is the best of several rounds, the paths
interleaved round by round.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

import _gen
import _peers
import msgspec

HERE = Path(__file__).resolve().parent
BASELINE = HERE / "baseline.json"
DOC = _gen.ROOT / "docs" / "performance.md"
#: where --write puts the report, per build
MARKS = {
    "pure": ("<!-- results:start -->", "<!-- results:end -->"),
    "compiled": ("<!-- results-compiled:start -->", "<!-- results-compiled:end -->"),
    "pure-mix": ("<!-- results-mix:start -->", "<!-- results-mix:end -->"),
    "compiled-mix": ("<!-- results-compiled-mix:start -->", "<!-- results-compiled-mix:end -->"),
}
#: a quick-mode ratio may fall this far below the recorded one before the guard fails
MARGIN = 0.35
#: quick mode: input per adapter and rounds (short rounds, so the best of them escapes
#: the moments a shared machine is busy)
QUICK_BYTES = 1_500_000
QUICK_ROUNDS = 9


# ----------------------------------------------------------------- the paths


def floor(data: bytes, out: BinaryIO) -> None:
    """Decode each line and encode it again with msgspec: nothing else."""
    dec = msgspec.json.Decoder()
    enc = msgspec.json.Encoder()
    write = out.write
    for line in io.BytesIO(data):
        write(enc.encode(dec.decode(line)) + b"\n")


def convert(stream: Any, protocol: str, out: BinaryIO) -> None:
    """What ``normalize convert -p PROTOCOL`` does for one file: records -> Session -> JSONL."""
    from normalize import iter_records
    from normalize._codec import encode_header
    from normalize._convert import NormalizedLines
    from normalize._version import __version__

    write = out.write
    write(encode_header(library_version=__version__, input="bench", protocol=protocol) + b"\n")
    for chunk in NormalizedLines(iter_records(stream), protocol=protocol).chunks():
        if chunk:
            write(chunk)


def _best(rounds: int, fns: dict[str, Callable[[], object]]) -> dict[str, float]:
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def throughput(protocol: str, lines: int, max_bytes: int, rounds: int) -> dict[str, Any]:
    template = _gen.load(protocol)
    data, n = _gen.blob(template, lines, max_bytes)
    sink = open(os.devnull, "wb")  # noqa: SIM115 - closed below
    fns: dict[str, Callable[[], object]] = {
        "floor": lambda: floor(data, sink),
        "normalize": lambda: convert(io.BytesIO(data), protocol, sink),
    }
    peer_name = None
    peer_failed = None
    if protocol in _peers.PEERS:
        peer_name, factory = _peers.PEERS[protocol]
        peer = factory()
        peer_failed = peer(data.splitlines())  # warm up, and count what it rejects
        fns["peer"] = lambda: peer(io.BytesIO(data))
    try:
        times = _best(rounds, fns)
    finally:
        sink.close()
    res: dict[str, Any] = {
        "protocol": protocol,
        "format": template.fmt,
        "captures": len(template.files),
        "capture_lines": template.size,
        "lines": n,
        "mb": len(data) / 1e6,
        "times": times,
        "floor_ratio": times["floor"] / times["normalize"],
    }
    if peer_name is not None:
        res["peer"] = peer_name
        res["peer_rejected"] = peer_failed
        res["peer_ratio"] = times["peer"] / times["normalize"]
    return res


# ----------------------------------------------------------------- memory


def _status_kb(field: str) -> int:
    """A memory figure of this process from /proc/self/status, in KiB.

    ``VmHWM`` is the peak RSS of this process image; ``ru_maxrss`` is not used because
    Linux carries the parent's peak into a child across fork and exec.
    """
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


def _rss_kb() -> int:
    return _status_kb("VmRSS")


def rss_child(protocol: str, n: int) -> None:
    """In a fresh interpreter: convert ``n`` generated lines, never holding the input."""
    template = _gen.load(protocol)
    with open(os.devnull, "wb") as sink:
        convert(_gen.Stream(template, template.size), protocol, sink)  # warm: imports, lazy tables
        base = _rss_kb()
        stream = _gen.Stream(template, n)
        t0 = time.perf_counter()
        convert(stream, protocol, sink)
        secs = time.perf_counter() - t0
    peak = _status_kb("VmHWM")
    print(json.dumps({"base_kb": base, "peak_kb": peak, "lines": n, "mb": stream.bytes / 1e6, "seconds": secs}))


def rss(protocol: str, n: int) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "_rss", protocol, str(n)], capture_output=True, text=True, check=True
    )
    res: dict[str, Any] = json.loads(proc.stdout)
    res["above_mb"] = (res["peak_kb"] - res["base_kb"]) / 1024
    return res


#: ``normalize ARGS...``, then the process's own peak RSS (KiB) on the last line of stderr
_CLI_WITH_HWM = (
    "import sys\n"
    "from normalize._cli import main\n"
    "status = main(sys.argv[1:])\n"
    "hwm = next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM:'))\n"
    "print(hwm, file=sys.stderr)\n"
    "sys.exit(status)\n"
)


def _cli_rss(args: list[str]) -> tuple[int, float, float]:
    """Run ``normalize ARGS``; its exit status, peak RSS (MB) and wall time."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _CLI_WITH_HWM, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    secs = time.perf_counter() - t0
    return proc.returncode, int(proc.stderr.split()[-1]) / 1024, secs


def big_folder(protocol: str, mb: int) -> dict[str, Any]:
    """``normalize convert`` on a folder holding one generated file of ``mb`` MB: peak RSS."""
    template = _gen.load(protocol)
    with tempfile.TemporaryDirectory(prefix="normalize-bench-") as tmp:
        folder = Path(tmp) / "sessions"
        folder.mkdir()
        path = folder / "big.jsonl"
        size = 0
        with path.open("wb") as f:
            for line in _gen.lines(template, 1 << 40):
                f.write(line)
                size += len(line)
                if size >= mb * 1_000_000:
                    break
        small = folder / "small.jsonl"
        small.write_bytes(b"".join(_gen.lines(template, template.size)))
        status_s, rss_small, _ = _cli_rss(["convert", str(small), "-o", os.devnull])
        status, rss_big, secs = _cli_rss(["convert", str(folder), "-o", os.devnull])
    return {
        "protocol": protocol,
        "mb": size / 1e6,
        "status": status,
        "small_status": status_s,
        "peak_mb": rss_big,
        "small_peak_mb": rss_small,
        "seconds": secs,
    }


def import_time(runs: int) -> dict[str, float]:
    """``import normalize`` in fresh interpreters, the least of ``runs``, minus a bare one's.

    As installed: with the bytecode caches written (pip writes them when it installs; a first
    import writes them for an editable install).  Also with normalize's own modules compiled
    from their source at each start (the other packages' caches read), as where
    ``PYTHONDONTWRITEBYTECODE`` is set before normalize was first imported: this machine's
    environment sets it, and an earlier version of this harness measured that case alone.
    """
    cached = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}

    def best(code: str, env: dict[str, str]) -> float:
        out = float("inf")
        for _ in range(runs):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True, env=env)
            out = min(out, time.perf_counter() - t0)
        return out

    subprocess.run([sys.executable, "-c", "import normalize"], check=True, env=cached)  # writes the caches
    bare = best("pass", cached)
    imported = best("import normalize", cached)
    # normalize's own modules compiled at each start (the other packages' caches read, as
    # before): a copy of the package without its caches, none written
    with tempfile.TemporaryDirectory(prefix="normalize-nocache-") as site:
        package = Path(normalize_package())
        shutil.copytree(package, Path(site) / "normalize", ignore=shutil.ignore_patterns("__pycache__"))
        for lib in package.parent.glob("*__mypyc*"):  # the compiled build's shared library
            shutil.copy2(lib, site)
        env = {
            **cached,
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPATH": os.pathsep.join([site, *filter(None, [cached.get("PYTHONPATH")])]),
        }
        uncached = best("import normalize", env)
    return {"bare_ms": bare * 1000, "import_ms": (imported - bare) * 1000, "uncached_ms": (uncached - bare) * 1000}


# ----------------------------------------------------------------- the build


def normalize_package() -> str:
    """The directory normalize is imported from here."""
    import normalize

    return os.path.dirname(normalize.__file__ or "")


def compiled_modules() -> tuple[str, ...]:
    """The modules of the compiled build that run here (none: the pure-Python build)."""
    import normalize

    return normalize.compiled_modules()


def build_name() -> str:
    mods = compiled_modules()
    if not mods:
        return "pure Python"
    return f"compiled with mypyc ({', '.join(m.removeprefix('normalize.') for m in mods)})"


def run_compiled(argv: list[str]) -> int:
    """This command again, on the compiled build (built into a temporary directory)."""
    with tempfile.TemporaryDirectory(prefix="normalize-compiled-") as site:
        subprocess.run(
            [str(_gen.ROOT / "scripts" / "build-compiled"), site],
            check=True,
            env={**os.environ, "PYTHON": sys.executable},
        )
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [site, os.environ.get("PYTHONPATH")]))}
        return subprocess.run([sys.executable, __file__, *argv], env=env).returncode


# ----------------------------------------------------------------- another mix


def revision(rev: str) -> str:
    """Git revision ``rev`` of this repository as ``<short hash> (<commit date>)``."""
    said = subprocess.run(
        ["git", "-C", str(_gen.ROOT), "log", "-1", "--format=%h (%cs)", rev], capture_output=True, text=True
    )
    if said.returncode != 0:
        raise SystemExit(f"no revision {rev!r} in {_gen.ROOT}: {said.stderr.strip()}")
    return said.stdout.strip()


def git_archive(rev: str, path: str, into: str) -> Path:
    """The folder ``path`` of git revision ``rev``, written under ``into``: its copy."""
    tar = subprocess.run(
        ["git", "-C", str(_gen.ROOT), "archive", "--format=tar", rev, path], capture_output=True, check=True
    )
    with tarfile.open(fileobj=io.BytesIO(tar.stdout)) as archive:
        if hasattr(tarfile, "data_filter"):  # (Python 3.11.4 and later: paths kept inside ``into``)
            archive.extractall(into, filter="data")
        else:
            archive.extractall(into)  # (git's own archive of this repository)
    return Path(into) / path


def extract_kits(rev: str, into: str) -> tuple[Path, str]:
    """The kits (``adapters/``) of git revision ``rev``, written under ``into``: their folder,
    and the revision as :func:`revision` names it.

    A ratio to the floor depends on what is converted as much as on the code: a mix of
    shorter lines weighs the cost per line more.  A target set on the sessions of one day
    is checked on those sessions, whatever was recorded since."""
    said = revision(rev)
    return git_archive(rev, "adapters", into), said


# ----------------------------------------------------------------- report


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, msgspec {msgspec.__version__}, "
        f"{platform.system()} {platform.release()}"
    )


def table(results: list[dict[str, Any]]) -> str:
    rows = [
        "| adapter | format | lines | MB | floor MB/s | normalize MB/s | normalize/floor | peer | peer MB/s "
        "| normalize/peer |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |",
    ]
    for r in results:
        t = r["times"]
        peer = f"{r['peer']} | {r['mb'] / t['peer']:.1f} | {r['peer_ratio']:.2f}x" if "peer" in r else "none | | "
        rows.append(
            f"| {r['protocol']} | {r['format']} | {r['lines']:,} | {r['mb']:.1f} | {r['mb'] / t['floor']:.1f} "
            f"| {r['mb'] / t['normalize']:.1f} | {r['floor_ratio']:.2f} | {peer} |"
        )
    return "\n".join(rows)


def report(args: argparse.Namespace) -> str:
    started = datetime.now(UTC)
    names = args.protocols or _gen.protocols()
    parts = []
    results = []
    for p in names:
        r = throughput(p, args.lines, args.max_mb * 1_000_000, args.rounds)
        results.append(r)
        peer = f", peer ratio {r['peer_ratio']:.2f}" if "peer_ratio" in r else ""
        print(f"{p}: floor ratio {r['floor_ratio']:.2f}{peer}", flush=True)
    parts.append("### Throughput\n\n" + table(results))
    mem = ["| adapter | " + " | ".join(f"{n:,} lines: RSS above baseline" for n in args.rss_lines) + " | time |"]
    mem.append("| --- |" + " ---: |" * (len(args.rss_lines) + 1))
    for p in names:
        cells = []
        secs = 0.0
        for n in args.rss_lines:
            r = rss(p, n)
            cells.append(f"{r['above_mb']:.1f} MB ({r['mb']:,.0f} MB in)")
            secs = r["seconds"]
            print(f"{p}: {n} lines, {r['above_mb']:.1f} MB above baseline", flush=True)
        mem.append(f"| {p} | " + " | ".join(cells) + f" | {secs:.1f} s |")
    parts.append("### Peak memory (RSS above interpreter + imports, input generated on the fly)\n\n" + "\n".join(mem))
    imp = import_time(args.import_runs)
    parts.append(
        f"### Import\n\n`import normalize`: {imp['import_ms']:.0f} ms "
        f"(min of {args.import_runs} fresh interpreters, minus a bare interpreter's {imp['bare_ms']:.0f} ms; "
        f"bytecode cached, as installed); {imp['uncached_ms']:.0f} ms with normalize's modules compiled from "
        "their source at each start (no bytecode cache of its own, as where `PYTHONDONTWRITEBYTECODE` is set "
        "before the first import)"
    )
    if args.big_mb:
        b = big_folder(args.big_protocol, args.big_mb)
        parts.append(
            f"### Streaming a big folder\n\n`normalize convert FOLDER -o /dev/null` over a folder holding a "
            f"{b['mb']:,.0f} MB {b['protocol']} session: peak RSS {b['peak_mb']:.0f} MB in {b['seconds']:.0f} s "
            f"(exit {b['status']}); the same command on one copy of the captures: {b['small_peak_mb']:.0f} MB."
        )
        print(parts[-1], flush=True)
    finished = datetime.now(UTC)
    mix = f"--mix {args.mix} " if args.mix else ""
    head = (
        f"Run {started:%Y-%m-%d %H:%M}-{finished:%H:%M} UTC on {_machine()}.\n"
        f"normalize build: {build_name()}.\n"
        f"Command: `.venv/bin/python benchmarks/run.py {'--compiled ' if compiled_modules() else ''}{mix}--write` "
        f"(throughput over at most {args.lines:,} lines or {args.max_mb} MB per adapter, best of {args.rounds}).\n"
        + (f"Sessions made of the captures of {args.mix_said}, not of this tree's.\n" if args.mix else "")
        + "Ratios are throughput ratios: above 1 means normalize is faster."
    )
    return head + "\n\n" + "\n\n".join(parts) + "\n"


def write_doc(text: str, mix: bool = False) -> None:
    mark_start, mark_end = MARKS[("compiled" if compiled_modules() else "pure") + ("-mix" if mix else "")]
    doc = DOC.read_text()
    start, end = doc.index(mark_start) + len(mark_start), doc.index(mark_end)
    DOC.write_text(doc[:start] + "\n" + text + doc[end:])


# ----------------------------------------------------------------- quick guard


def _quick_ratios(protocol: str) -> dict[str, float]:
    r = throughput(protocol, 20_000, QUICK_BYTES, QUICK_ROUNDS)
    out = {f"{protocol}/floor": round(r["floor_ratio"], 3)}
    if "peer_ratio" in r:
        out[f"{protocol}/peer"] = round(r["peer_ratio"], 3)
    return out


def quick(args: argparse.Namespace) -> int:
    names = args.protocols or _gen.protocols()
    ratios: dict[str, float] = {}
    for p in names:
        ratios.update(_quick_ratios(p))
    if compiled_modules():  # the baseline is the pure-Python build's: the ratios, no verdict
        if args.record:
            print("the guard's baseline is the pure-Python build's: --record without --compiled", file=sys.stderr)
            return 2
        print(f"build: {build_name()}")
        for key, value in sorted(ratios.items()):
            print(f"     {key:36} {value:6.2f}")
        return 0
    if args.record:
        BASELINE.write_text(json.dumps({"margin": MARGIN, "ratios": ratios}, indent=2, sort_keys=True) + "\n")
        print(f"recorded {len(ratios)} ratios in {BASELINE}")
        return 0
    base = json.loads(BASELINE.read_text())
    margin = base.get("margin", MARGIN)

    def low(key: str) -> bool:
        return key in ratios and ratios[key] < base["ratios"][key] * (1 - margin)

    # A slow ratio is measured again (twice at most), its best kept: a real regression
    # is slow every time, a busy moment of a shared machine is not.
    for _ in range(2):
        again = sorted({key.split("/")[0] for key in base["ratios"] if low(key)})
        for p in again:
            for key, value in _quick_ratios(p).items():
                ratios[key] = max(ratios[key], value)
    bad = 0
    for key, was in sorted(base["ratios"].items()):
        if key not in ratios:
            continue
        bad += low(key)
        verdict = "SLOW" if low(key) else "ok  "
        print(f"{verdict} {key:36} {ratios[key]:6.2f} (baseline {was:.2f}, lowest accepted {was * (1 - margin):.2f})")
    if bad:
        print(f"{bad} ratio(s) fell more than {margin:.0%} below benchmarks/baseline.json", file=sys.stderr)
        return 1
    return 0


def main(argv: Iterable[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["_rss"]:
        rss_child(argv[1], int(argv[2]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("protocols", nargs="*", help="adapters to measure (default: all with captures)")
    ap.add_argument("--quick", action="store_true", help="ratios only, compared with baseline.json")
    ap.add_argument("--record", action="store_true", help="with --quick: write baseline.json")
    ap.add_argument("--write", action="store_true", help="put the report into docs/performance.md")
    ap.add_argument("--lines", type=int, default=100_000, help="throughput: lines per adapter")
    ap.add_argument("--max-mb", type=int, default=48, help="throughput: at most this many MB per adapter")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rss-lines", type=int, nargs="*", default=[100_000, 1_000_000])
    ap.add_argument("--import-runs", type=int, default=15)
    ap.add_argument("--big-mb", type=int, default=1024, help="size of the big-folder file (0: skip)")
    ap.add_argument("--big-protocol", default="claude-transcript")
    ap.add_argument("--compiled", action="store_true", help="measure the compiled build (scripts/build-compiled)")
    ap.add_argument(
        "--mix",
        metavar="REV",
        help="make the sessions of the captures of git revision REV (a target set on that day's mix); "
        "--write puts the report into its own section",
    )
    args = ap.parse_args(argv)
    if args.compiled:
        return run_compiled([a for a in argv if a != "--compiled"])
    if args.mix is None:
        return _measure(args)
    if args.quick:
        ap.error("--quick compares with baseline.json, recorded on this tree's mix: not with --mix")
    env_before, kits_before = os.environ.get(_gen.MIX_ENV), _gen.CAPTURES
    with tempfile.TemporaryDirectory(prefix="normalize-mix-") as tmp:
        kits, args.mix_said = extract_kits(args.mix, tmp)
        os.environ[_gen.MIX_ENV] = str(kits)  # (the processes the harness starts read it too)
        _gen.CAPTURES = kits
        try:
            return _measure(args)
        finally:  # (as they were: main may be called again in this process)
            if env_before is None:
                del os.environ[_gen.MIX_ENV]
            else:
                os.environ[_gen.MIX_ENV] = env_before
            _gen.CAPTURES = kits_before


def _measure(args: argparse.Namespace) -> int:
    if args.quick:
        return quick(args)
    text = report(args)
    print(text)
    if args.write:
        write_doc(text, mix=args.mix is not None)
    return 0


if __name__ == "__main__":
    sys.exit(main())

# Invariant: any bytes from either side, in any chunking, pass the live relay's side channel (RelaySide around a Wiretap) unchanged and without raising; the recording gives the wire lines back; every event encodes to valid JSON and seq has no gap.  # noqa: E501
"""Coverage-guided fuzzing of the live relay (``normalize tap``), seeded from the two-way captures (see README.md).

An input is read with atheris' FuzzedDataProvider: a protocol (or none: detected), then
chunks, each a side and some bytes.  The seeds are the captures' wire lines, cut into
chunks at arbitrary places.
"""

from __future__ import annotations

import sys

import atheris
from _harness import ROOT, normalize  # imports normalize instrumented
from _live import check_relay

PROTOCOLS: list[str | None] = [None, *sorted(normalize.available())]


def chunks(data: bytes) -> tuple[str | None, list[tuple[normalize.Direction, bytes]]]:
    fdp = atheris.FuzzedDataProvider(data)
    protocol = PROTOCOLS[fdp.ConsumeIntInRange(0, len(PROTOCOLS) - 1)]
    out: list[tuple[normalize.Direction, bytes]] = []
    while fdp.remaining_bytes():
        from_: normalize.Direction = "client" if fdp.ConsumeBool() else "agent"
        out.append((from_, fdp.ConsumeBytes(fdp.ConsumeIntInRange(1, 4096))))
    return protocol, out


def one(data: bytes) -> None:
    protocol, pieces = chunks(data)
    check_relay(protocol, pieces)


def seeds() -> list[bytes]:
    """Each two-way capture's first wire lines, as raw bytes (the provider cuts them its own way)."""
    out: list[bytes] = []
    for path in sorted(ROOT.glob("adapters/*/captures/**/*.tap.jsonl")):
        lines = [r.data for r in normalize.read_records([path]) if isinstance(r, normalize.Message)][:24]
        out.append(b"\x00" + b"\n".join(lines)[:32768] + b"\n")
    return out


if __name__ == "__main__":
    corpus = ROOT / "fuzz" / "corpus" / "wiretap"
    if not corpus.is_dir():
        corpus.mkdir(parents=True)
        for i, seed in enumerate(seeds()):
            (corpus / f"seed-{i:03d}").write_bytes(seed)
    argv = list(sys.argv)
    if not any(not a.startswith("-") for a in argv[1:]):
        argv.append(str(corpus))
    if not any(a.startswith("-max_len=") for a in argv[1:]):
        argv.append("-max_len=65536")
    atheris.Setup(argv, one)
    atheris.Fuzz()

"""``export``: the Parquet export from Python, on this machine or on a dask.distributed cluster."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from normalize import UsageError

from ._load import Scan
from ._store import ExportResult, ParquetStore
from ._tables import new_redactor, redact_rows

__all__ = ["ExportReport", "export"]


@dataclass
class ExportReport:
    """What an export did: sessions added, replaced, skipped (``result``), the inputs it could not read."""

    result: ExportResult
    problems: list[str]
    inputs: int
    sessions: int
    tasks: int = 0
    split: int = 0
    #: input files not read again: unchanged since the export that stamped them
    unchanged: int = 0
    #: secrets replaced, by kind (``redact=True``)
    redacted: dict[str, int] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            **self.result.as_json(),
            "inputs": self.inputs,
            "sessions": self.sessions,
            "problems": list(self.problems),
            "tasks": self.tasks,
            "split": self.split,
            "unchanged": self.unchanged,
            "redacted": dict(self.redacted),
        }


def export(
    paths: Iterable[str | Path],
    parquet: str | Path,
    *,
    client: Any = None,
    protocol: str | None = None,
    jobs: int | None = None,
    task_bytes: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    reread: bool = False,
    redact: bool = False,
) -> ExportReport:
    """Export the sessions under ``paths`` to the Parquet dataset folder ``parquet`` (incremental).

    With ``client`` (a ``distributed.Client``) the inputs are converted on its cluster,
    in tasks of about ``task_bytes`` of input; workers must see ``parquet`` and the local
    ``paths`` at the same paths, or read ``paths`` given as fsspec URLs (``s3://...``).
    Without, on ``jobs`` processes of this machine (all cores by default), and, as
    ``normalize export`` does, a file unchanged since the export that stamped it (same
    size and time, or same content) is not read again unless ``reread``.  On a cluster
    the client reads no file: an input is not read again when its files are listed
    with the size and time (and version tag, on object stores) the export that read
    them stamped.  Either way the dataset gets the same rows.

    With ``redact`` (needs detect-secrets, the ``redact`` extra) the secrets of every
    text cell are replaced before a row is written, on the cluster's workers too, and
    every file is read (a session written unredacted before is not rewritten, as for
    ``normalize export --redact``); ``report.redacted`` counts them by kind.
    """
    sources = list(paths)
    if client is not None:
        from ._dask import TASK_BYTES, export_on

        return export_on(
            client,
            sources,
            Path(parquet),
            protocol=protocol,
            task_bytes=task_bytes or TASK_BYTES,
            progress=progress,
            redact=redact,
            reread=reread,
        )
    urls = [s for s in sources if isinstance(s, str) and "://" in s]
    if urls:
        raise UsageError(f"{urls[0]}: URLs are read by the workers of a cluster: pass client=")
    roots = [Path(p) for p in sources]
    redactor = new_redactor() if redact else None
    store = ParquetStore(Path(parquet))
    skip = None if reread or redactor is not None else store.unchanged
    scan = Scan(roots, protocol=protocol, jobs=jobs, progress=progress, skip=skip)
    found = 0
    for rows in scan:
        found += 1
        store.offer(redact_rows(rows, redactor))
    store.flush()
    store.remember(scan.read)
    report = ExportReport(store.result, scan.problems, scan.inputs, found, unchanged=scan.unchanged)
    if redactor is not None:
        report.redacted = dict(sorted(redactor.counts.items()))
    return report

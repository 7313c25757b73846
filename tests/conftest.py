from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

# The property tests draw new examples at every local run (and replay the failures
# hypothesis kept in .hypothesis/), where a rare failure is worth finding.  CI
# (``.ci/run``: HYPOTHESIS_PROFILE=ci) draws the same examples at every run, so that
# whether a change lands does not depend on the examples of that run; a failure
# prints the blob that reproduces it (``@reproduce_failure``).  Loaded here, before
# any test module builds its own settings on the profile's.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def golden_extension(path: Path) -> type[SingleFileSnapshotExtension]:
    """A syrupy extension storing one snapshot as the JSONL file at ``path``.

    Snapshots live under golden/ mirroring the captures, not next to the tests;
    discovery is pointed at an empty place so syrupy never treats another
    capture's snapshot as unused (tests/test_golden.py pairs them itself).
    """

    class GoldenJsonl(SingleFileSnapshotExtension):
        _write_mode = WriteMode.TEXT
        file_extension = "jsonl"

        @classmethod
        def dirname(cls, *, test_location: Any) -> str:
            return str(path.parent)

        @classmethod
        def discovery_dirname(cls, *, test_location: Any) -> str:
            return str(path.parent / ".syrupy-none")

        @classmethod
        def get_file_basename(cls, *, test_location: Any, index: Any) -> str:
            return path.name[: -len(".jsonl")]

        @classmethod
        def get_snapshot_name(cls, *, test_location: Any, index: Any = 0) -> str:
            return path.name[: -len(".jsonl")]

        @classmethod
        def matches_test_location(cls, *, test_location: Any, snapshot_location: str) -> bool:
            return Path(snapshot_location) == path

        @classmethod
        def write_snapshot_collection(cls, *, snapshot_collection: Any, name_order: Any = None) -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            super().write_snapshot_collection(snapshot_collection=snapshot_collection, name_order=name_order)

    return GoldenJsonl


@pytest.fixture
def golden(snapshot: Any) -> Any:
    """``golden(path)`` -> a snapshot assertion stored at ``path``."""

    def make(path: Path) -> Any:
        return snapshot.use_extension(golden_extension(path))

    return make


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Every anyio test runs on both backends (the per-capture ones: every capture on asyncio,
    one of each protocol and shape on trio, ``helpers.on_both_backends``)."""
    return str(request.param)


@pytest.fixture
def turn_adapter() -> Iterator[None]:
    """The fake agents' small turn protocol (tests/fakes/wire.py), registered for one test."""
    from fakes.wire import TurnAdapter
    from normalize import register, unregister

    register(TurnAdapter)
    yield
    unregister(TurnAdapter.protocol)

"""The distribution: its own name on the index, the metadata an index page shows, install hints that work."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import normalize
from helpers import ROOT

DIST = "agent-normalize"


def _pyproject() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def test_the_distribution_has_its_own_name_and_keeps_the_import_name_and_the_command() -> None:
    meta = importlib.metadata.metadata(DIST)
    assert meta["Name"] == DIST
    # the adapters register under the distribution's name, so no old "normalize" install shadows them
    adapters = {
        ep.name for ep in importlib.metadata.distribution(DIST).entry_points if ep.group == "normalize.adapters"
    }
    assert adapters == set(normalize.available())
    scripts = {
        ep.name: ep.value
        for ep in importlib.metadata.entry_points(group="console_scripts")
        if ep.dist and ep.dist.name == DIST
    }
    assert scripts == {"normalize": "normalize._cli:main"}
    assert meta["Version"] == normalize.__version__


def test_the_metadata_says_what_it_is_where_it_lives_and_that_it_is_typed() -> None:
    meta = importlib.metadata.metadata(DIST)
    classifiers = meta.get_all("Classifier") or []
    assert "Typing :: Typed" in classifiers
    assert any(c.startswith("Programming Language :: Python :: 3.11") for c in classifiers)
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL") or [])
    assert {"Homepage", "Documentation", "Repository", "Issues"} <= set(urls)
    assert (Path(normalize.__file__).parent / "py.typed").is_file()


def test_every_install_hint_names_the_distribution_and_an_extra_it_has() -> None:
    extras = set(_pyproject()["project"]["optional-dependencies"])  # type: ignore[index]
    hint = re.compile(r"pip install '?([A-Za-z0-9_.\-]+)(?:\[([a-z,]+)\])?'?")
    files = [*(ROOT / "src").rglob("*.py"), *(ROOT / "docs").glob("*.md"), ROOT / "README.md"]
    seen = 0
    for path in files:
        for m in hint.finditer(path.read_text()):
            name, wanted = m.group(1), m.group(2)
            if name in ("-e", "-q", "atheris", "detect-secrets", "-U") or name.startswith("."):
                continue
            seen += 1
            assert name == DIST, f"{path.relative_to(ROOT)}: {m.group(0)}"
            for extra in (wanted or "").split(","):
                assert not extra or extra in extras, f"{path.relative_to(ROOT)}: no extra {extra!r}"
    assert seen >= 5

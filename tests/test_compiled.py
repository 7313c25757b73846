"""The compiled build (docs/performance.md, "The compiled build").

The wheel built with ``HATCH_BUILD_HOOK_ENABLE_MYPYC=1`` compiles the core's modules and
the line adapters with mypyc; every other module, and every .py file, stays as it is.
``scripts/test-compiled`` runs the tests of what it compiles against that wheel, with
``NORMALIZE_EXPECT_COMPILED=1``.
"""

from __future__ import annotations

import importlib
import os
import tomllib

import msgspec
import pytest

from helpers import ROOT, compiled

COMPILED_BUILD = os.environ.get("NORMALIZE_EXPECT_COMPILED") == "1"


def _compiled_files() -> list[str]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        hooks = tomllib.load(f)["tool"]["hatch"]["build"]["targets"]["wheel"]["hooks"]
    files: list[str] = hooks["mypyc"]["include"]
    return files


def _module(path: str) -> str:
    return path.removeprefix("src/").removesuffix(".py").replace("/", ".")


def test_the_compiled_modules_exist() -> None:
    files = _compiled_files()
    assert files
    for path in files:
        assert path.startswith("src/normalize/") and (ROOT / path).is_file(), path


@pytest.mark.parametrize("path", _compiled_files())
def test_no_msgspec_struct_is_defined_in_a_compiled_module(path: str) -> None:
    """A msgspec Struct defined in a mypyc-compiled module decodes wrongly: the views
    and the bodies live in interpreted modules."""
    module = importlib.import_module(_module(path))
    structs = [
        name
        for name, obj in vars(module).items()
        if isinstance(obj, type) and issubclass(obj, msgspec.Struct) and obj.__module__ == module.__name__
    ]
    assert structs == []


@pytest.mark.parametrize("path", _compiled_files())
def test_the_build_tested_is_the_one_meant(path: str) -> None:
    """Pure Python unless the compiled build is asked for (the default wheel and the
    editable install compile nothing)."""
    module = importlib.import_module(_module(path))
    assert compiled(module) == COMPILED_BUILD, module.__file__

"""The version of normalize, and which build of it runs here."""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.util

__version__ = "0.1.0"

#: The packages whose modules the compiled build compiles (pyproject.toml, the mypyc hook).
_COMPILED_IN = ("normalize", "normalize.adapters")


@functools.cache
def compiled_modules() -> tuple[str, ...]:
    """The modules of normalize that run compiled here, sorted; ``()`` on the pure-Python build.

    The wheel built with ``HATCH_BUILD_HOOK_ENABLE_MYPYC=1`` compiles the core and the line
    adapters (docs/performance.md, "The compiled build"); every other wheel, and an editable
    install, is pure Python.  Found from where each module would be imported from, without
    importing it; the build does not change while a process runs, so it is found once.
    """
    import pkgutil  # here: ``import normalize`` does without it

    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    found: list[str] = []
    for package in _COMPILED_IN:
        spec = importlib.util.find_spec(package)
        if spec is None or spec.submodule_search_locations is None:  # pragma: no cover - normalize is installed
            continue
        for info in pkgutil.iter_modules(spec.submodule_search_locations, package + "."):
            module = importlib.util.find_spec(info.name)
            if module is not None and (module.origin or "").endswith(suffixes):
                found.append(info.name)
    return tuple(sorted(found))


def describe_build() -> str:
    """The build in a few words, as ``normalize --version`` prints it."""
    mods = compiled_modules()
    if not mods:
        return "pure Python"
    return f"compiled: {len(mods)} modules"

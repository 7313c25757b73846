"""The compiled build's C module, ``normalize._scan`` (src/normalize/_scan.c).

Built with the mypyc modules, when the wheel is built with
``HATCH_BUILD_HOOK_ENABLE_MYPYC=1`` (scripts/build-compiled; docs/performance.md, "The
compiled build"): one switch for the whole compiled build.  Any other wheel, and the
editable install, are pure Python and do without it (``_session`` checks UTF-8 by
decoding, ``_lines`` splits lines with ``bytes`` methods).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

_SETUP = """
import sys
from setuptools import Extension, setup
setup(name="normalize-scan", ext_modules=[Extension("normalize._scan", [sys.argv.pop(1)])])
"""


class CompiledModuleHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"
    _built: str | None = None

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable":
            return
        if os.environ.get("HATCH_BUILD_HOOK_ENABLE_MYPYC") != "1":
            return
        source = Path(self.root, "src", "normalize", "_scan.c")
        self._built = tempfile.mkdtemp(prefix="normalize-scan-")  # until the wheel is written
        out, temp = Path(self._built, "lib"), Path(self._built, "temp")
        # setuptools knows the compiler and the flags of this interpreter; run away from
        # pyproject.toml, which it would read as its own configuration
        cmd = [sys.executable, "-c", _SETUP, str(source), "build_ext", "--build-lib", str(out)]
        cmd += ["--build-temp", str(temp)]
        done = subprocess.run(cmd, cwd=self._built, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"building normalize._scan failed:\n{done.stdout}{done.stderr}")
        name = "_scan" + sysconfig.get_config_var("EXT_SUFFIX")
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        build_data["force_include"][str(out / "normalize" / name)] = f"normalize/{name}"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if self._built is not None:
            shutil.rmtree(self._built, ignore_errors=True)
            self._built = None

"""The public surface is what ``normalize.__all__`` says, and nothing private leaks into it."""

from __future__ import annotations

import subprocess
import sys

import normalize


def test_all_is_honest() -> None:
    for name in normalize.__all__:
        assert hasattr(normalize, name), name
    assert len(set(normalize.__all__)) == len(normalize.__all__)
    public = {n for n in vars(normalize) if not n.startswith("_")}
    # every public attribute of the package is either exported, a submodule, or one of the two
    # names kept for the spec's kinds that a star import must not bring (they shadow builtins)
    assert public - set(normalize.__all__) <= {"adapters", "analytics", "models", "Warning", "Error"}


def test_a_star_import_shadows_no_builtin() -> None:
    import builtins

    assert not set(normalize.__all__) & set(dir(builtins))
    assert normalize.WarningBody is normalize.Warning
    assert normalize.ErrorBody is normalize.Error


def test_importing_normalize_does_not_import_pydantic_anyio_or_any_adapter() -> None:
    code = (
        "import sys, normalize; "
        "print(' '.join(m for m in ('pydantic', 'anyio', 'normalize.adapters.hm_json') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""

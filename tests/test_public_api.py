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
    """What ``import normalize`` leaves for first use: the live parts (anyio), the schema
    (pydantic), the adapters, the adapters of other packages (importlib.metadata, a quarter
    of the import's time) and the redactor's rules (a tenth)."""
    lazy = ("pydantic", "anyio", "normalize.adapters.hm_json", "importlib.metadata", "normalize._redact")
    code = f"import sys, normalize; print(' '.join(m for m in {lazy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_what_import_normalize_leaves_for_later_comes_when_used() -> None:
    code = (
        "import sys, normalize; normalize.adapter_class('hm-json'); normalize.Redactor; "
        "print(' '.join(m for m in ('importlib.metadata', 'normalize._redact') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["importlib.metadata", "normalize._redact"]

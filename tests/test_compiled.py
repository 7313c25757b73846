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
from hypothesis import given
from hypothesis import strategies as st

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


def test_compiled_modules_names_the_build_that_runs() -> None:
    """``normalize.compiled_modules()``: every module the mypyc hook compiles and the UTF-8
    scan on the compiled build, nothing on the pure-Python one."""
    import normalize

    expected = sorted({_module(path) for path in _compiled_files()} | {"normalize._scan"})
    assert list(normalize.compiled_modules()) == (expected if COMPILED_BUILD else [])
    for name in normalize.compiled_modules():  # the modules imported are the ones it names
        assert compiled(importlib.import_module(name)), name


def test_version_says_which_build_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """What a bug report needs: ``normalize --version`` gives the version and the build."""
    import normalize
    from normalize._cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    build = f"compiled: {len(normalize.compiled_modules())} modules" if COMPILED_BUILD else "pure Python"
    assert out == f"normalize {normalize.__version__} ({build})\n"


# -- the compiled build's scans of bytes (src/normalize/_scan.c) -------------------------------


def test_the_scans_are_in_the_compiled_build_only() -> None:
    """Built with the mypyc modules (hatch_build.py), used by the Session and the reader when present."""
    from normalize import _lines, _pipeline, _session

    try:
        from normalize._scan import first_invalid, split_lines, tap_split
    except ImportError:
        assert not COMPILED_BUILD
        assert _session._first_invalid is None
        assert _lines._split_lines is None
        assert _pipeline._TAP_SPLIT is None
    else:
        assert COMPILED_BUILD
        assert _session._first_invalid is first_invalid
        assert _lines._split_lines is split_lines
        assert _pipeline._TAP_SPLIT is tap_split


def _decoder_start(data: bytes) -> int:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start
    return -1


# every byte after each lead that narrows its second byte, and the edges of the ranges
_EDGES = bytes([0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF])
_EDGES += bytes([0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xED, 0xF0, 0xF4, 0xF5, 0xFF])


def _sequences() -> list[bytes]:
    out = [bytes([a]) for a in range(256)]
    out += [bytes([a, b]) for a in range(256) for b in range(256)]
    out += [bytes([a, b, c]) for a in range(0xC0, 0x100) for b in range(256) for c in _EDGES]
    out += [bytes([a, b, c, d]) for a in range(0xE0, 0x100) for b in _EDGES for c in _EDGES for d in _EDGES]
    return out


@pytest.mark.skipif(not COMPILED_BUILD, reason="the pure-Python build has no C module (scripts/test-compiled)")
def test_the_utf8_scan_finds_what_pythons_decoder_refuses_where_it_does() -> None:
    from normalize._scan import first_invalid

    pads = [b"", b"a" * 31, b"a" * 32]  # the scan reads ASCII 32 bytes at a time
    wrong = [
        data
        for seq in _sequences()
        for pad in pads
        for data in (pad + seq, pad + seq + b"z", pad + seq + b"\xe2\x86\x92" + b"a" * 40)
        if first_invalid(data) != _decoder_start(data)
    ]
    assert wrong == []


@pytest.mark.skipif(not COMPILED_BUILD, reason="the pure-Python build has no C module (scripts/test-compiled)")
def test_the_utf8_scan_finds_a_wrong_sequence_anywhere_in_ascii_text() -> None:
    # the scan skips ASCII a word at a time, then a byte at a time up to the non-ASCII
    # byte that stopped it: every place of that byte in and across the words, with
    # characters before it that pass and bytes that fail at or after it
    from normalize._scan import first_invalid

    chars = [b"\xc3\xa9", b"\xe2\x86\x92", b"\xf0\x9f\x98\x80"]
    bad = [b"\x80", b"\xc3", b"\xc3(", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xff"]
    wrong = [
        data
        for place in range(100)
        for before in (b"", *chars)
        for seq in (*chars, *bad)
        for data in (b"a" * place + before + seq, b"a" * place + before + seq + b"b" * 70)
        if first_invalid(data) != _decoder_start(data)
    ]
    assert wrong == []


@pytest.mark.skipif(not COMPILED_BUILD, reason="the pure-Python build has no C module (scripts/test-compiled)")
def test_the_utf8_scan_takes_bytes_only() -> None:
    from normalize._scan import first_invalid

    assert first_invalid(b"") == -1
    with pytest.raises(TypeError, match="takes bytes, not bytearray"):
        first_invalid(bytearray(b"x"))  # type: ignore[arg-type]


@pytest.mark.skipif(not COMPILED_BUILD, reason="the pure-Python build has no C module (scripts/test-compiled)")
@given(st.lists(st.sampled_from([b"\n", b"\r", b"a", b"{}", b"\xff", b"\x00", b"x" * 300]), max_size=40))
def test_the_line_split_is_bytes_split(pieces: list[bytes]) -> None:
    from normalize._scan import split_lines

    data = b"".join(pieces)
    assert split_lines(data) == data.split(b"\n")
    assert split_lines(bytearray(data)) == data.split(b"\n")
    assert split_lines(memoryview(data)) == data.split(b"\n")


@pytest.mark.skipif(not COMPILED_BUILD, reason="the pure-Python build has no C module (scripts/test-compiled)")
def test_the_line_split_takes_buffers_only() -> None:
    from normalize._scan import split_lines

    assert split_lines(b"") == [b""]
    with pytest.raises(TypeError, match="bytes-like object"):
        split_lines("a\nb")  # type: ignore[arg-type]


# the tap record's parts: a time as normalize writes it, others of every length around the
# 24 characters the cut looks at first (quotes, escapes, control and non-ASCII characters)
_tap_times = st.one_of(st.just("2026-11-29T19:05:39.123Z"), st.text(max_size=30))
_tap_messages = st.one_of(
    st.just(b'{"jsonrpc":"2.0","method":"session/update","params":{}}'),
    st.binary(max_size=12),  # not JSON, or nothing: the adapter's to report
)


@pytest.mark.skipif(not COMPILED_BUILD, reason="the pure-Python build has no C module (scripts/test-compiled)")
@given(_tap_times, st.sampled_from([b"agent", b"client", b"Agent", b"user"]), _tap_messages, st.integers(0, 3))
def test_the_tap_cut_takes_what_the_python_cut_takes_and_gives_the_same(
    t: str, from_: bytes, msg: bytes, cut: int
) -> None:
    """The C cut gives what tap_cut (the Python rules) gives, or None and leaves the line to
    it: only for a time of other characters than printable ASCII."""
    from normalize._lines import Message
    from normalize._pipeline import tap_cut, tap_record
    from normalize._scan import tap_split

    line = b'{"t":' + msgspec.json.encode(t) + b',"from":"' + from_ + b'","msg":' + msg + b"}"
    line = line[: len(line) - cut]  # and cut short by up to 3 bytes
    python = tap_cut(line, 7, Message)
    got = tap_split(line)
    if got is not None:
        assert python == Message(got[2], got[1], got[0], 7)  # type: ignore[arg-type]
    elif python is not None:
        assert not all(" " <= c <= "~" for c in python.t)  # left to the Python rules
    assert tap_record(line, 7, Message) == python


@pytest.mark.skipif(not COMPILED_BUILD, reason="the pure-Python build has no C module (scripts/test-compiled)")
def test_the_tap_cut_takes_bytes_only() -> None:
    from normalize._scan import tap_split

    line = b'{"t":"2026-11-29T19:05:39.123Z","from":"agent","msg":{}}'
    assert tap_split(line) == ("2026-11-29T19:05:39.123Z", "agent", b"{}")
    with pytest.raises(TypeError, match="takes bytes, not bytearray"):
        tap_split(bytearray(line))  # type: ignore[arg-type]

"""`cairn.hot.jsonc` is `json` for what the hook reads and writes: the same text out, the same objects in, and
`json`'s own errors for what `json` refuses, without importing `json` (and `re`) when nothing goes wrong."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cairn.hot import jsonc

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x2FFF)),
)
KEYS = st.one_of(st.text(), st.sampled_from(["a", "b", "é", "\u2028", "\ud800", "\x00", ""]))
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(KEYS, inner, max_size=5)),
    max_leaves=30,
)
OPTIONS = st.fixed_dictionaries(
    {
        "ensure_ascii": st.booleans(),
        "separators": st.sampled_from([None, (",", ":"), (", ", ": "), (";", "=")]),
        "sort_keys": st.booleans(),
    }
)


def same(a: object, b: object) -> bool:
    """Equal, with NaN equal to itself (json.dumps of both tells)."""
    return json.dumps(a, sort_keys=False) == json.dumps(b, sort_keys=False) and type(a) is type(b)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None)
@given(VALUES, OPTIONS)
def test_dumps_is_json_dumps(value: object, options: dict[str, object]) -> None:
    assert jsonc.dumps(value, **options) == json.dumps(value, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "value",
    [
        {"time": "2026-01-01T00:00:00Z", "score": 0.1 + 0.2, "ids": ["a/b", "é"], "error": None, "stale": False},
        {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "Cairn: \u2028 <x>\n"}},
        {"cards": [], "abstained": True},
        "plain string",
        1e300 * 10,
        -0.0,
        [{"b": 1, "a": {"d": 2, "c": 3}}],
    ],
)
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"ensure_ascii": False},
        {"ensure_ascii": False, "separators": (",", ":")},
        {"ensure_ascii": False, "sort_keys": True},
    ],
)
def test_what_the_hook_writes_is_byte_identical(value: object, options: dict[str, object]) -> None:
    assert jsonc.dumps(value, **options) == json.dumps(value, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [{1, 2}, {"a": object()}, b"bytes", {(1, 2): 3}])
def test_what_json_cannot_encode_raises_json_s_error(value: object) -> None:
    with pytest.raises(TypeError) as ours:
        jsonc.dumps(value)
    with pytest.raises(TypeError) as theirs:
        json.dumps(value)
    assert str(ours.value) == str(theirs.value)


def test_a_cycle_raises_json_s_error() -> None:
    cycle: list[object] = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="Circular reference"):
        jsonc.dumps(cycle)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None)
@given(VALUES, OPTIONS)
def test_loads_reads_what_json_writes(value: object, options: dict[str, object]) -> None:
    text = json.dumps(value, **options)  # type: ignore[arg-type]
    if options["separators"] == (";", "="):
        return  # not JSON
    assert same(jsonc.loads(text), json.loads(text))
    assert same(jsonc.loads(text.encode("utf-8", "surrogatepass")), json.loads(text.encode("utf-8", "surrogatepass")))


JSONISH = st.text(alphabet=st.sampled_from(list('{}[]",:0123456789.eE+-tfalsenuIiyNT \t\n\r\\/ubx\ufeff\u00e9')))


def _outcome(call: object, document: object) -> tuple[str, object]:
    try:
        return "ok", json.dumps(call(document))  # type: ignore[operator]
    except Exception as exc:  # compare the error json raises: type, message, position
        return type(exc).__name__, (str(exc), getattr(exc, "pos", None))


@pytest.mark.slow
@settings(max_examples=3000, deadline=None)
@given(st.one_of(JSONISH, st.text(max_size=20), VALUES.map(json.dumps).map(lambda t: " \n" + t + "\t ")))
@example("")
@example(" ")
@example("\ufeff{}")
@example('{"a": 1} x')
@example('{"a": 1}}')
@example("[1,]")
@example('{"a" 1}')
@example('"abc')
@example("NaN")
@example("-Infinity")
@example("1e400")
@example('"\\ud800"')
@example('"\x00"')
@example("[" * 100_000)
def test_loads_accepts_and_refuses_what_json_does(document: str) -> None:
    assert _outcome(jsonc.loads, document) == _outcome(json.loads, document)


@settings(max_examples=1000, deadline=None)
@given(st.one_of(st.binary(max_size=30), JSONISH.map(lambda t: t.encode("utf-8"))))
@example(b"\xef\xbb\xbf{}")
@example('{"a": "é"}'.encode("utf-16"))
@example('{"a": "é"}'.encode("utf-16-le"))
@example('{"a": "é"}'.encode("utf-16-be"))
@example('{"a": "é"}'.encode("utf-32"))
@example('{"a": "é"}'.encode("utf-32-le"))
@example('{"a": "é"}'.encode("utf-32-be"))
@example(b"1\x00")
@example(b"\x001")
def test_loads_reads_bytes_as_json_does(document: bytes) -> None:
    assert _outcome(jsonc.loads, document) == _outcome(json.loads, document)
    assert _outcome(jsonc.loads, bytearray(document)) == _outcome(json.loads, bytearray(document))


def test_a_bad_document_raises_json_decode_error() -> None:
    with pytest.raises(json.JSONDecodeError) as caught:
        jsonc.loads('{"prompt": ')
    assert caught.value.pos == 11


def test_a_document_that_is_not_text_raises_json_s_type_error() -> None:
    with pytest.raises(TypeError, match="the JSON object must be str, bytes or bytearray, not int"):
        jsonc.loads(1)  # type: ignore[arg-type]


def test_constants_and_numbers() -> None:
    assert math.isnan(jsonc.loads("NaN")) and jsonc.loads("-Infinity") == -math.inf
    assert jsonc.loads("[1, 1.5, 1e2, -0]") == [1, 1.5, 100.0, 0]
    assert type(jsonc.loads("1")) is int and type(jsonc.loads("1.0")) is float


def test_reading_and_writing_imports_no_json_package() -> None:
    code = (
        "import sys; from cairn.hot import jsonc; "
        'v = jsonc.loads(b\'{"a": [1, 2.5, "\\\\u00e9", null, true]}\'); '
        "jsonc.dumps(v); jsonc.dumps(v, ensure_ascii=False, separators=(',', ':'), sort_keys=True); "
        "print(sorted(m for m in ('json', 're', 'json.decoder') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True, env=_env())
    assert done.stdout.strip() == "[]"


def _env() -> dict[str, str]:
    import os
    from pathlib import Path

    import cairn

    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(cairn.__file__).resolve().parent.parent)
    return env

"""The hook's reading of the warm encoder's answer (`cairn.hot.semantic._reply`), standard library only: similarities
kept as numbers, the z-scores' unit in cosine (`Similarities.scale`) taken only when it can be one (over 0, at most 1:
a spread of cosines), anything else read as no unit, so the agreement pick stays off rather than trusting it."""

from __future__ import annotations

import socket

import pytest

from cairn.hot.semantic import Similarities, _reply


def _answer(raw: bytes) -> dict[str, float] | None:
    ours, theirs = socket.socketpair()
    try:
        theirs.sendall(raw)
        theirs.close()
        return _reply(ours)
    finally:
        ours.close()


@pytest.mark.parametrize(
    ("scale", "kept"),
    [("0.031", 0.031), ("1", 1.0), ("0", None), ("-0.2", None), ("1.5", None), ('"0.03"', None), ("null", None)],
)
def test_the_z_scores_unit_is_taken_only_when_it_can_be_one(scale: str, kept: float | None) -> None:
    got = _answer(b'{"ok": true, "sims": {"a": 2.5, "b": "x", "c": 1}, "scale": ' + scale.encode() + b"}\n")
    assert isinstance(got, Similarities)
    assert got == {"a": 2.5, "c": 1.0}  # a value that is not a number is dropped
    assert got.scale == kept


def test_an_answer_without_a_unit_or_not_ok_or_not_json() -> None:
    plain = _answer(b'{"ok": true, "sims": {"a": 0.8}}\n')
    assert isinstance(plain, Similarities) and plain.scale is None
    assert _answer(b'{"ok": false, "error": "stale vectors"}\n') is None
    with pytest.raises(ValueError):
        _answer(b"\xff\xfe not json\n")  # the callers catch it: ask() and similarities() fail open

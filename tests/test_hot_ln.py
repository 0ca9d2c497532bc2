"""`cairn.hot.ln`, the hot path's natural logarithm without `math`: within one unit in the last place of `math.log`
for positive normal floats, `math.log` itself for everything else."""

from __future__ import annotations

import math
import random
import struct

import pytest

from cairn.hot import ln


def ulps(a: float, b: float) -> int:
    """How many representable doubles apart a and b are (both finite, same sign)."""
    ia: int = struct.unpack("<q", struct.pack("<d", a))[0]
    ib: int = struct.unpack("<q", struct.pack("<d", b))[0]
    return abs(ia - ib)


def test_within_one_ulp_of_math_log_across_the_range() -> None:
    rng = random.Random(16)
    values = [rng.uniform(0.5, 4.0) for _ in range(20_000)]
    values += [math.exp(rng.uniform(-700.0, 700.0)) for _ in range(20_000)]
    for _ in range(20_000):  # recall's own arguments: 1 + (n - df + 0.5) / (df + 0.5), and the unknown word's
        n = rng.randint(1, 200_000)
        df = rng.randint(1, n)
        values += [1 + (n - df + 0.5) / (df + 0.5), 1 + (n - 0.5) / 1.5]
    worst = max(ulps(ln(x), math.log(x)) for x in values)
    assert worst <= 1


@pytest.mark.parametrize(
    "x",
    [
        1.0,
        2.0,
        0.5,
        math.e,
        math.sqrt(2),
        math.sqrt(2) / 2,
        1.38,  # the bounds of the branch that keeps f * f / 2 apart
        1.42,
        1.0 + 2**-52,
        1.0 - 2**-53,
        2.0 - 2**-52,
        2.2250738585072014e-308,  # the least normal float
        1.7976931348623157e308,  # the largest
    ],
)
def test_edges_within_one_ulp(x: float) -> None:
    assert ulps(ln(x), math.log(x)) <= 1


def test_exact_at_one_and_for_powers_of_two() -> None:
    assert ln(1.0) == 0.0
    for k in range(-1000, 1001, 37):
        assert ulps(ln(2.0**k), math.log(2.0**k)) <= 1


@pytest.mark.parametrize("x", [0.0, -1.0, -math.inf])
def test_outside_the_domain_raises_as_math_log_does(x: float) -> None:
    with pytest.raises(ValueError):
        ln(x)


def test_infinity_nan_and_subnormals_are_math_logs() -> None:
    assert ln(math.inf) == math.inf
    assert math.isnan(ln(math.nan))
    assert ln(5e-324) == math.log(5e-324)

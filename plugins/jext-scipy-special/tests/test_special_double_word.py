"""The kernels' double-word helpers stay exact under XLA's default compile.

XLA:CPU at its default optimisation contracts ``a*b + c`` into one fused multiply-add
(FMA).  A Veltkamp split (``t = c*v; hi = t - (t - v)``) or a Dekker product
(``(ah*bh - p) + ...``) whose product is contracted loses the very rounding error it
exists to recover, silently.  Each helper is run jitted at the default optimisation, as
users get it, in the shapes of use that invite contraction (both outputs; only the error
term, so that the rounded product has a single use; an input formed inside the program),
and its result is compared with exact rational arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import jax
import jax.numpy as jnp
import mpmath  # type: ignore[import-untyped]
import numpy as np
import pytest
from _special_cases import x64
from jax import lax
from jext_scipy_special._functions import _common
from jext_scipy_special._functions._elementary import cbrt, radian

# Every test compares floating-point results with exact rational arithmetic.
pytestmark = pytest.mark.numerics

Pair = tuple[jax.Array, jax.Array]

#: The exact double-word products: ``p + r == a * b`` exactly, with ``p = fl(a * b)``.
EXACT_PRODUCTS: dict[str, Callable[[jax.Array, jax.Array], Pair]] = {
    "_common.two_prod": _common.two_prod,
}
#: Splits ``v = hi + lo`` with both halves short enough for exact partial products.
SPLITS: dict[str, Callable[[jax.Array], Pair]] = {
    "_common.word_split": _common.word_split,
}
#: Error-free sums ``s + e == a + b`` exactly (Knuth's, for any order of magnitude).
SUMS: dict[str, Callable[[jax.Array, jax.Array], Pair]] = {
    "_common.two_sum": _common.two_sum,
}
DTYPES = (np.float64, np.float32)


def _operands(dt: type) -> tuple[np.ndarray, np.ndarray]:
    """Full-length significands over a wide exponent range, plus the pairs that expose an
    FMA (``(1 + u)(1 - u)`` rounds to 1, its error ``-u^2`` is what a contraction keeps)."""
    rng = np.random.default_rng(20261123)
    n = 96
    a = rng.uniform(1.0, 2.0, n) * np.exp2(rng.integers(-40, 40, n))
    b = -rng.uniform(1.0, 2.0, n) * np.exp2(rng.integers(-40, 40, n))
    u = 2.0**-30 if dt is np.float64 else 2.0**-12
    fixed_a = [1.0 + u, 1.0 + u, 1.0 - u, np.nextafter(dt(1.5), dt(2)), 3.0 * (1.0 + 2 * u)]
    fixed_b = [1.0 - u, -(1.0 - u), 1.0 + u, np.nextafter(dt(1.5), dt(1)), 1.0 / 3.0]
    return (
        np.concatenate([np.asarray(fixed_a), a]).astype(dt),
        np.concatenate([np.asarray(fixed_b), b]).astype(dt),
    )


def _exact(v: object) -> Fraction:
    return Fraction(float(v))  # type: ignore[arg-type]


def _significant_bits(v: float) -> int:
    """Bits from the leading to the last set bit of ``v``'s significand (0 for 0)."""
    if v == 0.0:
        return 0
    num = abs(Fraction(v)).numerator
    while num % 2 == 0:
        num //= 2
    return num.bit_length()


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("name", list(EXACT_PRODUCTS))
def test_two_product_error_term_is_exact(name: str, dt: type) -> None:
    fn = EXACT_PRODUCTS[name]
    a, b = _operands(dt)
    with x64(dt is np.float64):
        p, r = jax.jit(fn)(jnp.asarray(a), jnp.asarray(b))
        # Only the error term leaves the program: the rounded product has one use.
        r_only = jax.jit(lambda x, y: fn(x, y)[1])(jnp.asarray(a), jnp.asarray(b))
        # The operand is formed inside the program (an exact doubling), as in the kernels.
        p2, r2 = jax.jit(lambda x, y: fn(x * 2.0, y))(jnp.asarray(a), jnp.asarray(b))
    wrong = []
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        prod = _exact(x) * _exact(y)
        rounded = _exact(dt(x) * dt(y))
        if _exact(p[i]) != rounded or _exact(p[i]) + _exact(r[i]) != prod:
            wrong.append(("both", float(x), float(y)))
        if rounded + _exact(r_only[i]) != prod:
            wrong.append(("error only", float(x), float(y)))
        if _exact(p2[i]) + _exact(r2[i]) != 2 * prod:
            wrong.append(("formed inside", float(x), float(y)))
    assert not wrong, f"{name} ({dt.__name__}) is not exact at {wrong[:4]}"


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("name", list(SPLITS))
def test_split_halves_are_short_and_exact(name: str, dt: type) -> None:
    fn = SPLITS[name]
    a, _ = _operands(dt)
    half = 26 if dt is np.float64 else 12  # products of two halves fit the significand
    with x64(dt is np.float64):
        hi, lo = jax.jit(fn)(jnp.asarray(a))
        hi_only = jax.jit(lambda x: fn(x)[0])(jnp.asarray(a))
    rows = zip(a, np.asarray(hi), np.asarray(lo), np.asarray(hi_only), strict=True)
    wrong = [
        float(v)
        for v, h, lo_, h1 in rows
        if _exact(h) + _exact(lo_) != _exact(v)
        or h != h1
        or max(_significant_bits(float(h)), _significant_bits(float(lo_))) > half
    ]
    assert not wrong, f"{name} ({dt.__name__}) does not split {wrong[:4]} into short halves"


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("name", list(SUMS))
def test_two_sum_error_term_is_exact(name: str, dt: type) -> None:
    fn = SUMS[name]
    a, b = _operands(dt)
    # Sums of a product: the shape an FMA contraction would take over.
    with x64(dt is np.float64):
        s, e = jax.jit(lambda x, y: fn(x * y, y))(jnp.asarray(a), jnp.asarray(b))
    wrong = [
        (float(x), float(y))
        for x, y, s_, e_ in zip(a, b, np.asarray(s), np.asarray(e), strict=True)
        if _exact(s_) + _exact(e_) != _exact(dt(x) * dt(y)) + _exact(y)
    ]
    assert not wrong, f"{name} ({dt.__name__}) loses the rounding error at {wrong[:4]}"


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.__name__)
def test_two_prod_is_a_faithful_double_word(dt: type) -> None:
    """``_common.two_prod`` sums the four exact partial products (no rounded product to be
    contracted) and rounds only the last of them: within a few units of the square of the
    unit roundoff of the exact product, whatever the compile fuses."""
    a, b = _operands(dt)
    with x64(dt is np.float64):
        hi, lo = jax.jit(_common.two_prod)(jnp.asarray(a), jnp.asarray(b))
    u = Fraction(float(np.finfo(dt).eps)) / 2
    wrong = []
    for x, y, h, lo_ in zip(a, b, np.asarray(hi), np.asarray(lo), strict=True):
        prod = _exact(x) * _exact(y)
        if abs(_exact(h) + _exact(lo_) - prod) > 4 * u * u * abs(prod):
            wrong.append((float(x), float(y)))
    assert not wrong, f"_common.two_prod ({dt.__name__}) is off at {wrong[:4]}"


def _product_then_sum(
    prod: Callable[[jax.Array, jax.Array], Pair], c: float
) -> Callable[..., Pair]:
    """``z c - 1`` as a double word: the product ``w = z c`` as a double word, then ``w_hi -
    1`` by an error-free sum (zetac's float32 reflection, the t-distribution's ``t^2/df``).
    XLA fuses the product into the sum and contracts them (an FMA): a Dekker product whose
    ``p`` is not kept rounded there has its error ``w_lo`` counted twice."""

    def run(z: jax.Array) -> Pair:
        # As in the kernels, the one passes a barrier: XLA's simplifier would otherwise
        # reassociate the sum's (w - 1) + 1 with the constant.
        _, one = lax.optimization_barrier((z, jnp.ones_like(z)))
        w_hi, w_lo = prod(z, jnp.full_like(z, c))
        r_hi, r_lo = _common.two_sum(w_hi, -one)
        return r_hi, r_lo + w_lo

    return run


def _product_sum_errors(prod: Callable[[jax.Array, jax.Array], Pair], dt: type) -> list[float]:
    c = float(dt(1.0 / (2.0 * np.pi * np.e)))
    z = np.linspace(13.0, 45.0, 97).astype(dt)
    with x64(dt is np.float64):
        hi, lo = jax.jit(_product_then_sum(prod, c))(jnp.asarray(z))
    u = Fraction(float(np.finfo(dt).eps)) / 2
    wrong = []
    for zz, h, lo_ in zip(z, np.asarray(hi), np.asarray(lo), strict=True):
        exact = _exact(zz) * Fraction(c) - 1
        # Only r_lo + w_lo is rounded: a few units of u^2 of the product.
        if abs(_exact(h) + _exact(lo_) - exact) > 4 * u * u * _exact(zz) * Fraction(c):
            wrong.append(float(zz))
    return wrong


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.__name__)
def test_two_prod_keeps_its_rounding_in_a_following_sum(dt: type) -> None:
    wrong = _product_sum_errors(_common.two_prod, dt)
    assert not wrong, f"_common.two_prod ({dt.__name__}) counts its error twice at z = {wrong[:4]}"


def test_product_sum_check_catches_a_double_count() -> None:
    """The check above fails for a product whose error term is counted twice."""

    def doubled(a: jax.Array, b: jax.Array) -> Pair:
        p, e = _common.two_prod(a, b)
        return p, 2.0 * e

    assert len(_product_sum_errors(doubled, np.float32)) > 10


def test_radian_keeps_its_value_where_degrees_minutes_and_seconds_cancel() -> None:
    # 3600 d + 60 m + s summed without rounding its parts: radian(0, 0.99999999999874,
    # -59.99999999999994) kept 7.5e-5 of its value through the rounded m / 60 and
    # s / 3600 (SciPy's nested form 1.2e-5).  Exact rational arithmetic for the sum; the
    # factor pi / 180 adds an ulp or two.
    rng = np.random.default_rng(3)
    m = rng.uniform(-60.0, 60.0, 64)
    s = -60.0 * m * (1.0 + rng.uniform(-1e-12, 1e-12, 64))
    d = np.zeros(64)
    d[:16] = np.round(rng.uniform(-5.0, 5.0, 16))
    m[:16] = -60.0 * d[:16] + rng.uniform(-1e-9, 1e-9, 16)
    s[:16] = rng.uniform(-1e-6, 1e-6, 16)
    d[-1], m[-1], s[-1] = 0.0, 0.9999999999987355, -59.999999999999936
    # Moderate cancellation too (a 2^-18 ratio cost float32 1.2%), in both dtypes.
    s[16:32] = -60.0 * m[16:32] * (1.0 + rng.uniform(-1e-5, 1e-5, 16))
    with x64(True):
        got = np.asarray(jax.jit(radian)(d, m, s))
    triples = zip(d, m, s, strict=True)
    degrees = [Fraction(a) + Fraction(b) / 60 + Fraction(c) / 3600 for a, b, c in triples]
    want = np.array([float(v) for v in degrees]) * (np.pi / 180.0)
    np.testing.assert_allclose(got, want, rtol=5e-16)
    d32, m32, s32 = (v.astype(np.float32) for v in (d, m, s))
    got32 = np.asarray(jax.jit(radian)(d32, m32, s32), np.float64)
    triples = zip(d32.tolist(), m32.tolist(), s32.tolist(), strict=True)
    degrees = [Fraction(a) + Fraction(b) / 60 + Fraction(c) / 3600 for a, b, c in triples]
    want32 = np.array([float(v) for v in degrees]) * (np.pi / 180.0)
    np.testing.assert_allclose(got32, want32, rtol=5e-7)


def _nearest_root(x: float, y: float, dt: type) -> bool:
    """Whether ``y`` is the ``dt`` value nearest ``cbrt(x)``: ``x`` lies between the cubes
    of the midpoints from ``y`` to its neighbours (exact rational arithmetic)."""
    if x == 0.0 or not np.isfinite(x):
        return y == x
    sign = -1.0 if x < 0.0 else 1.0
    root = dt(sign * y)
    mids = [
        (Fraction(float(np.nextafter(root, dt(s)))) + Fraction(float(root))) / 2
        for s in (0, np.inf)
    ]
    return root > 0 and mids[0] ** 3 < Fraction(sign * x) < mids[1] ** 3


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_cbrt_is_correctly_rounded_whatever_xla_rounds(dt: type) -> None:
    """``cbrt`` is the nearest float to the cube root on every sample point, wherever XLA's
    own ``cbrt`` misses (3 ulp at ``7.94e-75`` in float64 on an AVX-512 Xeon, 115 ulp near
    the subnormals in jax 0.8), from the subnormals to the largest finite value."""

    info = np.finfo(dt)
    rng = np.random.default_rng(7)
    lo, hi = np.log10(float(info.smallest_subnormal)), np.log10(float(info.max))
    x = np.concatenate(
        [
            rng.uniform(1.0, 8.0, 1500),
            -rng.uniform(1.0, 8.0, 500),
            10.0 ** rng.uniform(lo, hi, 1500),
            -(10.0 ** rng.uniform(lo, hi, 500)),
            [7.943282347242919e-75, float(info.max), -float(info.max), float(info.tiny)],
        ]
    ).astype(dt)
    with x64(True):
        got = np.asarray(jax.jit(cbrt)(x))
    assert got.dtype == dt
    misses = [
        (v, r) for v, r in zip(x.tolist(), got.tolist(), strict=True) if not _nearest_root(v, r, dt)
    ]
    assert misses == []
    with x64(True):
        special = np.asarray(cbrt(np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dt)))
    np.testing.assert_array_equal(special, [0.0, -0.0, np.inf, -np.inf, np.nan])
    assert np.signbit(special[1]) and not np.signbit(special[0])


def test_cbrt_rounding_check_catches_one_ulp() -> None:
    """The check above accepts the ``dt`` value nearest the cube root (mpmath's root at 240
    bits, rounded once to the type's precision) and rejects each neighbour of it."""
    for v in (2.0, 5.0, 7.943282347242919e-75, 4.466835921509397e-284):
        for dt, bits in ((np.float64, 53), (np.float32, 24)):
            if float(dt(v)) != v:  # not a value of this type
                continue
            with mpmath.workprec(240):
                exact = mpmath.cbrt(mpmath.mpf(v))
            with mpmath.workprec(bits):
                root = dt(float(+exact))  # unary plus rounds to nearest at `bits` bits
            assert _nearest_root(v, float(root), dt)
            assert not _nearest_root(v, float(np.nextafter(root, dt(0))), dt)
            assert not _nearest_root(v, float(np.nextafter(root, dt(np.inf))), dt)

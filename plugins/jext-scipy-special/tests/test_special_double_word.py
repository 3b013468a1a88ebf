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
import numpy as np
import pytest
from _special_cases import x64
from jext_scipy_special._functions import _elementary, _ks_family, _struve, _t

Pair = tuple[jax.Array, jax.Array]

#: The exact double-word products: ``p + r == a * b`` exactly, with ``p = fl(a * b)``.
EXACT_PRODUCTS: dict[str, Callable[[jax.Array, jax.Array], Pair]] = {
    "_t._two_prod": _t._two_prod,
    "_ks_family._two_product": _ks_family._two_product,
}
#: Splits ``v = hi + lo`` with both halves short enough for exact partial products.
SPLITS: dict[str, Callable[[jax.Array], Pair]] = {
    "_t._split": _t._split,
    "_elementary._two_prod_split": _elementary._two_prod_split,
    "_struve._split": _struve._split,
}
#: Error-free sums ``s + e == a + b`` exactly (Knuth's, for any order of magnitude).
SUMS: dict[str, Callable[[jax.Array, jax.Array], Pair]] = {
    "_t._two_sum": _t._two_sum,
    "_struve._two_sum": _struve._two_sum,
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
def test_struve_two_prod_is_a_faithful_double_word(dt: type) -> None:
    """``_struve._two_prod`` sums the four exact partial products (no rounded product to be
    contracted) and rounds only the last of them: within a few units of the square of the
    unit roundoff of the exact product, whatever the compile fuses."""
    a, b = _operands(dt)
    with x64(dt is np.float64):
        hi, lo = jax.jit(_struve._two_prod)(jnp.asarray(a), jnp.asarray(b))
    u = Fraction(float(np.finfo(dt).eps)) / 2
    wrong = []
    for x, y, h, lo_ in zip(a, b, np.asarray(hi), np.asarray(lo), strict=True):
        prod = _exact(x) * _exact(y)
        if abs(_exact(h) + _exact(lo_) - prod) > 4 * u * u * abs(prod):
            wrong.append((float(x), float(y)))
    assert not wrong, f"_struve._two_prod ({dt.__name__}) is off at {wrong[:4]}"

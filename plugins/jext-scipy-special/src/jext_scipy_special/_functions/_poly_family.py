"""Orthogonal polynomials: every ``scipy.special.eval_*``.

Methods (A&S 22.7, 22.18; Mason & Handscomb for Chebyshev):

* Integer degree: the three-term recurrences SciPy evaluates for an integer ``n``,
  step for step and in the same order (so that the rounding is the same as SciPy's):
  Chebyshev ``T``/``U`` by ``b_{m+1} = 2x b_m - b_{m-1}``; Legendre, Gegenbauer,
  Jacobi and Laguerre in the increment form ``p_{k+1} = p_k + d_{k+1}`` with ``d`` the
  normalised difference, times the normalisation ``binom(n + a, n)`` accumulated as a
  product ``prod (a + i) / i`` in the same loop; Hermite by the downward recurrence.
  Near ``x = 0`` (``|x| < 1e-5``) Legendre and Gegenbauer sum their power series about
  0 instead (the recurrence loses the relative accuracy of odd degrees there), in
  Horner form from the last term, so its leading coefficient is a product in the
  same loop.  Each element takes its own number of steps and is frozen after them:
  its value does not depend on the other degrees in the batch.
* Real (non-integer) degree, Chebyshev kinds: ``T_v(cos t) = cos(v t)``,
  ``U_v(cos t) = sin((v + 1) t) / sin t`` on ``[-1, 1]`` and ``cosh``/``sinh`` of
  ``v acosh x`` above 1 (SciPy evaluates the same functions through ``hyp2f1``).
  Below ``x = -1`` the value is complex: nan here, where SciPy's ``hyp2f1`` returns
  ``inf``; nan too at infinite degree or ``x``.  (SciPy's ``hyp2f1`` form is
  inaccurate for ``x < 0``: the checks hold the real degrees to mpmath.)
* Legendre, Gegenbauer, Jacobi and Laguerre of non-integer degree: SciPy's
  ``hyp2f1``/``hyp1f1`` definitions, by series at the two lowest degrees and the
  degree's recurrence, near ``x = -1`` from the connection formula about ``z = 1``
  (see ``_poly_real``); nan below ``x = -1``.

Derivatives in ``x`` (the degree and the parameters carry none) by the classical
identities: ``T_n' = n U_{n-1}``, ``U_n' = 2 C^(2)_{n-1}``, ``P_n' = C^(3/2)_{n-1}``,
``C^(a)_n' = 2a C^(a+1)_{n-1}``, ``P^(a,b)_n' = (n+a+b+1)/2 P^(a+1,b+1)_{n-1}``,
``L^(a)_n' = -L^(a+1)_{n-1}``, ``H_n' = 2n H_{n-1}``, ``He_n' = n He_{n-1}``; for
real degree ``T_v' = v U_{v-1}`` and ``U_v' = (x U_v - (v+1) T_{v+1}) / (1 - x^2)``.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from jext.scipy import Domain, EdgeCase, ScipyWrapper

from ._common import chunked, entry_point, nondiff, partitioned, tangent
from ._declare import declare
from ._poly_real import genlaguerre_real, jacobi_type_real, rgamma

__all__ = [
    "WRAPPERS",
    "eval_chebyc",
    "eval_chebys",
    "eval_chebyt",
    "eval_chebyu",
    "eval_gegenbauer",
    "eval_genlaguerre",
    "eval_hermite",
    "eval_hermitenorm",
    "eval_jacobi",
    "eval_laguerre",
    "eval_legendre",
    "eval_sh_chebyt",
    "eval_sh_chebyu",
    "eval_sh_jacobi",
    "eval_sh_legendre",
]

_SERIES_X = 1e-5  # below this |x|, Legendre and Gegenbauer sum their series about 0
#: Elements per chunk: each chunk's loop runs to its largest degree; chunks this size
#: keep the loop state in cache while amortising the cost of a loop trip.
_CHUNK = 4096
State = tuple[jax.Array, ...]


def _is_int(n: jax.Array) -> jax.Array:
    return jnp.isfinite(n) & (n == jnp.round(n))


#: Recurrence steps per loop trip of :func:`_run`.
_UNROLL = 4


def _just_k(k: jax.Array) -> State:
    return (k,)


def _run(
    step: Callable[[State, State], State],
    state: State,
    count: jax.Array,
    scalars: Callable[[jax.Array], State] = _just_k,
) -> State:
    """``state = step(scalars(k), state)`` for ``k = 1 .. count`` per element (0 steps
    where ``count`` is not finite); each element's state is frozen after its own steps,
    so its value does not depend on the other elements of the batch.

    The integer-degree recurrences run here.  The loop takes ``max(count)`` steps,
    ``_UNROLL`` per trip, shaped for XLA's CPU backend, which compiles every array a
    loop trip computes into a pass of its own:

    * the leaves of the state travel in pairs as the real and imaginary parts of
      complex arrays (exactly), so a pair costs one pass over the chunk, its steps and
      freezes fused in registers, instead of one pass per leaf and step;
    * ``scalars`` (elementwise in ``k``) gives the coefficients that depend on ``k``
      alone; they are computed for the trip's steps as one small array, where a scalar
      division in a step would be a pass of its own (XLA does not repeat a division
      in every element of a fused pass).
    """
    count = jnp.where(jnp.isfinite(count), count, 0.0)
    trips = jnp.max(count, initial=0.0)
    offsets = jnp.arange(_UNROLL, dtype=count.dtype)

    def pack(st: State) -> State:
        pairs = [lax.complex(a, b) for a, b in zip(st[::2], st[1::2], strict=False)]
        return (*pairs, *st[len(pairs) * 2 :])

    def unpack(packed: State) -> State:
        pairs = len(state) // 2
        parts = [leaf for z in packed[:pairs] for leaf in (jnp.real(z), jnp.imag(z))]
        return (*parts, *packed[pairs:])

    def body(carry: tuple[jax.Array, State]) -> tuple[jax.Array, State]:
        k, packed = carry
        table = jnp.stack(scalars(k + offsets))
        for j in range(_UNROLL):
            keep = k + float(j) > count
            new = pack(step(tuple(table[:, j]), unpack(packed)))
            packed = tuple(jnp.where(keep, o, n) for o, n in zip(packed, new, strict=True))
        return k + float(_UNROLL), packed

    def more(carry: tuple[jax.Array, State]) -> jax.Array:
        return carry[0] <= trips

    start = jnp.ones((), count.dtype)
    return unpack(lax.while_loop(more, body, (start, pack(state)))[1])


# ------------------------------------------------------------------ Chebyshev
def _clenshaw(k: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(b0, b2)`` after ``k + 1`` steps of ``b0 = 2x b1 - b2`` from ``(0, -1, 0)``:
    ``T_k = (b0 - b2) / 2`` and ``U_k = b0``.  (The loop carries ``(b0, b1)`` for ``k``
    steps; the last step, after it, also keeps ``b2``.)"""
    x2 = 2.0 * x

    def step(_: State, st: State) -> State:
        b0, b1 = st
        return x2 * b0 - b1, b0

    zero = jnp.zeros_like(x)
    b1, b2 = _run(step, (zero, zero - 1.0), k)
    return x2 * b1 - b2, b2


def _chebyt_int(n: jax.Array, x: jax.Array) -> jax.Array:
    b0, b2 = _clenshaw(jnp.abs(n), x)  # T_{-n} = T_n
    return (b0 - b2) / 2.0


def _chebyu_int(n: jax.Array, x: jax.Array) -> jax.Array:
    # U_{-1} = 0 and U_{-n-2} = -U_n.
    neg = n < -1.0
    b0, _ = _clenshaw(jnp.where(neg, -n - 2.0, n), x)
    return jnp.where(n == -1.0, 0.0, jnp.where(neg, -b0, b0))


def _theta(x: jax.Array) -> jax.Array:
    """``acos(x)`` on ``[-1, 1]`` through ``asin`` (XLA's CPU ``atan``/``atan2``, behind
    ``acos``, rounds differently in vectorised and scalar loops).  Below 0 as ``pi - 2
    asin(sqrt((1 + x) / 2))``: ``1 + x`` is exact there, and ``(1 - x) / 2`` rounds away
    the distance to -1 that ``acos`` depends on most (``T_13.49`` one ulp above -1 was
    7e-7 off)."""
    below = x < 0.0
    half = jnp.where(below, 0.5 + 0.5 * x, 0.5 - 0.5 * x)
    angle = 2.0 * jnp.arcsin(jnp.sqrt(jnp.clip(half, 0.0, 1.0)))
    return jnp.where(below, jnp.pi - angle, angle)


def _chebyt_real(v: jax.Array, x: jax.Array) -> jax.Array:
    inside = jnp.abs(x) <= 1.0
    t = _theta(jnp.where(inside, x, 0.0))
    above = jnp.arccosh(jnp.where(inside, 2.0, x))
    out = jnp.where(inside, jnp.cos(v * t), jnp.cosh(v * above))
    return jnp.where((x < -1.0) | jnp.isinf(x) | jnp.isinf(v), jnp.nan, out)


def _chebyu_real(v: jax.Array, x: jax.Array) -> jax.Array:
    inside = jnp.abs(x) < 1.0
    t = _theta(jnp.where(inside, x, 0.0))
    above = jnp.arccosh(jnp.where(inside | (x <= 1.0), 2.0, x))
    out = jnp.where(
        inside, jnp.sin((v + 1.0) * t) / jnp.sin(t), jnp.sinh((v + 1.0) * above) / jnp.sinh(above)
    )
    out = jnp.where(x == 1.0, v + 1.0, out)
    return jnp.where((x <= -1.0) | jnp.isinf(x) | jnp.isinf(v), jnp.nan, out)


def _chebyt_value(n: jax.Array, x: jax.Array) -> jax.Array:
    return _either(_chebyt_int, _chebyt_real, n, x)


def _chebyu_value(n: jax.Array, x: jax.Array) -> jax.Array:
    return _either(_chebyu_int, _chebyu_real, n, x)


# ----------------------------------------------------- Legendre and Gegenbauer
def _gegenbauer_like(n: jax.Array, a: jax.Array, x: jax.Array, legendre: bool) -> jax.Array:
    """``P_n(x)`` (``legendre``) or ``C^(a)_n(x)`` for integer ``n >= 2``."""
    small = jnp.abs(x) < _SERIES_X
    half = jnp.floor(n / 2.0)
    even = n == 2.0 * half
    xm1 = x - 1.0
    x2 = x * x
    # Series about 0, term ratio r(j) for j = half - k (summed from the last term).
    if legendre:
        norm = jnp.where(even, -0.5, 0.5)  # 1/B(half + 1, -+1/2) = norm * prod (j -+ 1/2)/j

        def ratio(j: jax.Array) -> jax.Array:
            return (
                -2.0
                * x2
                * (half - j)
                * (2.0 * n + 1.0 - 2.0 * half + 2.0 * j)
                / ((n + 1.0 - 2.0 * half + 2.0 * j) * (n + 2.0 - 2.0 * half + 2.0 * j))
            )

        def series_factor(k: jax.Array) -> jax.Array:
            return (k + norm) / k

        start = norm
    else:

        def ratio(j: jax.Array) -> jax.Array:
            return (
                -4.0
                * x2
                * (half - j)
                * (-half + a + j + n)
                / ((n + 1.0 - 2.0 * half + 2.0 * j) * (n + 2.0 - 2.0 * half + 2.0 * j))
            )

        def series_factor(k: jax.Array) -> jax.Array:
            return (a + k) / k  # 1/B(a, 1 + half) = a prod (a + j)/j

        start = a

    def legendre_scalars(k: jax.Array) -> State:
        return (2.0 * k + 1.0) / (k + 1.0), k / (k + 1.0)

    def recurrence(s: State, st: State) -> State:
        # The recurrence (k = 1 .. n-1) and its normalisation's product (Legendre's is 1).
        if legendre:
            p, d = st
            d = s[0] * xm1 * p + s[1] * d
            return d + p, d
        (k,), (p, d, c) = s, st
        d = (2.0 * (k + a) / (k + 2.0 * a)) * xm1 * p + (k / (k + 2.0 * a)) * d
        return d + p, d, c * ((2.0 * a + k) / (k + 1.0))

    def series(s: State, st: State) -> State:
        # The series (k = 1 .. half): Horner from the last term; c is its coefficient.
        (k,), (p, c) = s, st
        return 1.0 + ratio(half - k) * p, c * series_factor(k)

    # Two loops, each with no steps where the other applies (the series is rare: its
    # loop then stops at once, and the recurrence's steps carry none of its work).
    one = jnp.ones_like(x)
    first = (x, xm1) if legendre else (x, xm1, 2.0 * a * one)
    scalars = legendre_scalars if legendre else _just_k
    p_rec, _, *product = _run(recurrence, first, jnp.where(small, 0.0, n - 1.0), scalars)
    c_rec = product[0] if product else one
    p_ser, c_ser = _run(series, (one, start * one), jnp.where(small, half, 0.0))
    p = jnp.where(small, p_ser, p_rec)
    c = jnp.where(small, c_ser, c_rec)
    if legendre:
        lead = jnp.where(even, -2.0 * c, 2.0 * c * x)
    else:
        lead = jnp.where(even, c / (half + a), 2.0 * c * x)
    sign = jnp.where(jnp.mod(half, 2.0) == 0.0, 1.0, -1.0)
    return jnp.where(small, sign * lead * p, c * p)


def _legendre_int(n: jax.Array, x: jax.Array) -> jax.Array:
    n = jnp.where(n < 0.0, -n - 1.0, n)  # P_{-n-1} = P_n
    big = n >= 2.0
    out = _gegenbauer_like(jnp.where(big, n, 2.0), jnp.zeros_like(x), x, legendre=True)
    return jnp.where(n == 0.0, 1.0, jnp.where(n == 1.0, x, out))


def _gegenbauer_int(n: jax.Array, a: jax.Array, x: jax.Array) -> jax.Array:
    big = n >= 2.0
    out = _gegenbauer_like(jnp.where(big, n, 2.0), a, x, legendre=False)
    out = jnp.where(n == 1.0, 2.0 * a * x, jnp.where(n == 0.0, 1.0, out))
    out = jnp.where(jnp.isinf(x) & (n >= 1.0) & (a > -1.0), _gegenbauer_at_inf(n, a, x), out)
    out = jnp.where(n < 0.0, 0.0, out)
    return jnp.where(jnp.isnan(a) | jnp.isnan(x), jnp.nan, out)


def _gegenbauer_at_inf(n: jax.Array, a: jax.Array, x: jax.Array) -> jax.Array:
    """``C^(a)_n(+-inf)`` for integer ``n >= 1`` and ``a > -1``.

    The leading term ``2^n (a)_n / n! x^n`` decides it: an infinity with the sign of ``a``
    times ``(-1)^n`` at ``-inf``, and 0 for ``a = 0`` (where SciPy's ``C^(0)_n`` is 0).
    SciPy 1.18 gives these; before it, the recurrence's ``inf - inf`` gave nan at ``-inf``.
    """
    flip = (x < 0.0) & (jnp.mod(n, 2.0) == 1.0)
    return jnp.where(a == 0.0, 0.0, jnp.sign(a) * jnp.where(flip, -jnp.inf, jnp.inf))


# ------------------------------------------------------------------- Jacobi
def _jacobi_int(n: jax.Array, a: jax.Array, b: jax.Array, x: jax.Array) -> jax.Array:
    big = n >= 2.0
    xm1 = x - 1.0

    def step(s: State, st: State) -> State:
        (k,), (p, d, c) = s, st
        t = 2.0 * k + a + b
        d = (t * (t + 1.0) * (t + 2.0) * xm1 * p + 2.0 * k * (k + b) * (t + 2.0) * d) / (
            2.0 * (k + a + 1.0) * (k + a + b + 1.0) * t
        )
        return d + p, d, c * ((a + k + 1.0) / (k + 1.0))

    d0 = (a + b + 2.0) * xm1 / (2.0 * (a + 1.0))
    p, _, c = _run(step, (d0 + 1.0, d0, a + 1.0), jnp.where(big, n - 1.0, 0.0))
    first = 0.5 * (2.0 * (a + 1.0) + (a + b + 2.0) * xm1)
    out = jnp.where(n == 0.0, 1.0, jnp.where(n == 1.0, first, c * p))
    return jnp.where(n < 0.0, jnp.nan, out)


def _binom_n(top: jax.Array, n: jax.Array) -> jax.Array:
    """``binom(top, n)`` for integer ``n >= 0`` as ``prod_{i<=n} (top - n + i) / i``."""

    def step(s: State, st: State) -> State:
        (k,) = s
        return (st[0] * ((top - n + k) / k),)

    return _run(step, (jnp.ones_like(top),), jnp.maximum(n, 0.0))[0]


# ------------------------------------------------------------------ Laguerre
def _laguerre_like(n: jax.Array, a: jax.Array | None, x: jax.Array) -> jax.Array:
    """``L^(a)_n(x)`` for integer ``n``, ``a = 0`` where ``a`` is None (``L_n``: its
    normalisation is 1, and the recurrence's ``k``-only coefficients are computed once
    per loop trip)."""
    big = n >= 2.0
    alpha = 0.0 if a is None else a

    def step(s: State, st: State) -> State:
        if a is None:
            (k1, ratio), (p, d) = s, st
            d = -x / k1 * p + ratio * d
            return d + p, d
        (k,), (p, d, c) = s, st
        d = -x / (k + a + 1.0) * p + (k / (k + a + 1.0)) * d
        return d + p, d, c * ((a + k + 1.0) / (k + 1.0))

    def scalars(k: jax.Array) -> State:
        return (k + 1.0, k / (k + 1.0)) if a is None else (k,)

    d0 = -x / (alpha + 1.0)
    first = (d0 + 1.0, d0) if a is None else (d0 + 1.0, d0, a + 1.0)
    p, _, *product = _run(step, first, jnp.where(big, n - 1.0, 0.0), scalars)
    c = product[0] if product else 1.0
    out = jnp.where(n == 0.0, 1.0, jnp.where(n == 1.0, -x + alpha + 1.0, c * p))
    return jnp.where(n < 0.0, 0.0, out)


def _genlaguerre_int(n: jax.Array, a: jax.Array, x: jax.Array) -> jax.Array:
    out = _laguerre_like(n, a, x)
    return jnp.where((a <= -1.0) | ~jnp.isfinite(a) | jnp.isnan(x), jnp.nan, out)


def _laguerre_int(n: jax.Array, x: jax.Array) -> jax.Array:
    return jnp.where(jnp.isnan(x), jnp.nan, _laguerre_like(n, None, x))


# ------------------------------------------------------------------- Hermite
def _hermitenorm_int(n: jax.Array, x: jax.Array) -> jax.Array:
    def step(s: State, st: State) -> State:
        (i,), (y2, y3) = s, st
        return x * y2 - (n + 1.0 - i) * y3, y2  # k = n, n-1, ..., 2

    zero = jnp.zeros_like(x)
    y2, y3 = _run(step, (1.0 + zero, zero), jnp.where(n >= 2.0, n - 1.0, 0.0))
    out = jnp.where(n == 0.0, 1.0, jnp.where(n == 1.0, x, x * y2 - y3))
    out = jnp.where(n < 0.0, jnp.nan, out)
    return jnp.where(jnp.isnan(x), x, out)


def _hermite_int(n: jax.Array, x: jax.Array) -> jax.Array:
    return _hermitenorm_int(n, math.sqrt(2.0) * x) * jnp.exp2(n / 2.0)


# ------------------------------------------------------- integer-degree only
def _integer_only(kernel: Callable[..., jax.Array]) -> Callable[..., jax.Array]:
    """``kernel`` at integer degrees (first argument); nan at the others (Hermite: its
    degree is truncated first, so only an infinite or nan degree)."""

    def run(n: jax.Array, *args: jax.Array) -> jax.Array:
        integer = _is_int(n)
        return jnp.where(integer, kernel(jnp.where(integer, n, 0.0), *args), jnp.nan)

    return run


def _either(
    integer_kernel: Callable[..., jax.Array],
    real_kernel: Callable[..., jax.Array],
    n: jax.Array,
    *args: jax.Array,
) -> jax.Array:
    """``integer_kernel`` at integer degrees, ``real_kernel`` at the others.  Each path
    sees benign arguments where the other one applies (degree 0; degree 1/2 at ``x = 1``,
    where the series stops at once), so that neither loop runs longer for them."""
    integer = _is_int(n)

    def integers() -> jax.Array:
        return integer_kernel(jnp.where(integer, n, 0.0), *args)

    def reals() -> jax.Array:
        benign = [jnp.where(integer, 1.0, v) for v in args[:-1]]
        x = jnp.where(integer, 1.0, args[-1])
        return real_kernel(jnp.where(integer, 0.5, n), *benign, x)

    def skip() -> jax.Array:
        return jnp.zeros_like(args[-1])

    # A chunk of only integer (or only non-integer) degrees skips the other path: its
    # values are discarded, so skipping it changes no element's bits.
    out_int: jax.Array = lax.cond(jnp.any(integer), integers, skip)
    out_real: jax.Array = lax.cond(jnp.all(integer), skip, reals)
    return jnp.where(integer, out_int, jnp.where(jnp.isinf(n), jnp.nan, out_real))


def _binom_real(top_plus_1: jax.Array, k: jax.Array, rest: jax.Array) -> jax.Array:
    """``binom(top, k) = Gamma(top + 1) / (Gamma(k + 1) Gamma(top - k + 1))``, given
    ``top + 1`` and ``rest = top - k + 1`` as the caller forms them from its parameters
    (arguments below ~170: the family's declared degrees and parameters).  Formed
    through a rounded ``top``, a tiny ``2 a`` (Gegenbauer) or ``a + 1`` (Jacobi) lost its
    digits: ``eval_gegenbauer(2.5, 1e-12, 0.4)`` was 9e-5 off."""
    return jsp.gamma(top_plus_1) * rgamma(k + 1.0) * rgamma(rest)


def _legendre_real(n: jax.Array, x: jax.Array) -> jax.Array:
    # P_{-v-1} = P_v, about -1/2: reflecting a tiny negative v would round -v - 1 to the
    # integer -1, where this kernel (for non-integer degrees) gives nan.
    n = jnp.where(n < -0.5, -n - 1.0, n)
    zero = jnp.zeros_like(x)
    return jacobi_type_real(n, zero, zero, x)


def _gegenbauer_real(n: jax.Array, a: jax.Array, x: jax.Array) -> jax.Array:
    out = _binom_real(n + 2.0 * a, n, 2.0 * a) * jacobi_type_real(n, a - 0.5, a - 0.5, x)
    # SciPy: nan where 2a is a negative integer (a pole of hyp2f1's c or of Gamma(2a)).
    return jnp.where((a < 0.0) & (2.0 * a == jnp.round(2.0 * a)), jnp.nan, out)


def _jacobi_real(n: jax.Array, a: jax.Array, b: jax.Array, x: jax.Array) -> jax.Array:
    out = _binom_real(n + (a + 1.0), n, a + 1.0) * jacobi_type_real(n, a, b, x)
    return jnp.where((a < 0.0) & (a == jnp.round(a)), jnp.nan, out)  # hyp2f1's c pole


def _genlaguerre_real(n: jax.Array, a: jax.Array, x: jax.Array) -> jax.Array:
    out = _binom_real(n + (a + 1.0), n, a + 1.0) * genlaguerre_real(n, a, x)
    return jnp.where((a <= -1.0) | ~jnp.isfinite(a) | ~jnp.isfinite(x), jnp.nan, out)


def _legendre_value(n: jax.Array, x: jax.Array) -> jax.Array:
    return _either(_legendre_int, _legendre_real, n, x)


def _gegenbauer_value(n: jax.Array, a: jax.Array, x: jax.Array) -> jax.Array:
    return _either(_gegenbauer_int, _gegenbauer_real, n, a, x)


def _jacobi_value(n: jax.Array, a: jax.Array, b: jax.Array, x: jax.Array) -> jax.Array:
    return _either(_jacobi_int, _jacobi_real, n, a, b, x)


def _genlaguerre_value(n: jax.Array, a: jax.Array, x: jax.Array) -> jax.Array:
    return _either(_genlaguerre_int, _genlaguerre_real, n, a, x)


def _hermite_value(n: jax.Array, x: jax.Array) -> jax.Array:
    return _integer_only(_hermite_int)(jnp.trunc(n), x)


def _hermitenorm_value(n: jax.Array, x: jax.Array) -> jax.Array:
    return _integer_only(_hermitenorm_int)(jnp.trunc(n), x)


# ------------------------------------------------------ derivatives in x
def _dchebyt(n: jax.Array, x: jax.Array) -> jax.Array:
    m = jnp.abs(n)
    return m * _chebyu_value(m - 1.0, x)


def _dchebyu(n: jax.Array, x: jax.Array) -> jax.Array:
    integer = _is_int(n)
    neg = n < -1.0
    m = jnp.where(integer, jnp.where(neg, -n - 2.0, n), 1.0)
    d_int = 2.0 * _gegenbauer_int(m - 1.0, 2.0 + 0.0 * x, x)
    d_int = jnp.where(n == -1.0, 0.0, jnp.where(neg, -d_int, d_int))
    real = (x * _chebyu_value(n, x) - (n + 1.0) * _chebyt_value(n + 1.0, x)) / (1.0 - x * x)
    return jnp.where(integer, d_int, real)


def _dlegendre(n: jax.Array, x: jax.Array) -> jax.Array:
    m = jnp.where(n < 0.0, -n - 1.0, n)
    return _gegenbauer_value(m - 1.0, 1.5 + 0.0 * x, x)


def _dgegenbauer(n: jax.Array, a: jax.Array, x: jax.Array) -> jax.Array:
    return 2.0 * a * _gegenbauer_value(n - 1.0, a + 1.0, x)


def _djacobi(n: jax.Array, a: jax.Array, b: jax.Array, x: jax.Array) -> jax.Array:
    lower = _jacobi_value(
        jnp.where(_is_int(n), jnp.maximum(n - 1.0, 0.0), n - 1.0), a + 1.0, b + 1.0, x
    )
    return jnp.where(n == 0.0, 0.0, 0.5 * (n + a + b + 1.0) * lower)


def _dgenlaguerre(n: jax.Array, a: jax.Array, x: jax.Array) -> jax.Array:
    return -_genlaguerre_value(n - 1.0, a + 1.0, x)


def _dhermite(n: jax.Array, x: jax.Array) -> jax.Array:
    m = jnp.trunc(n)
    return jnp.where(m == 0.0, 0.0, 2.0 * m * _hermite_value(m - 1.0, x))


def _dhermitenorm(n: jax.Array, x: jax.Array) -> jax.Array:
    m = jnp.trunc(n)
    return jnp.where(m == 0.0, 0.0, m * _hermitenorm_value(m - 1.0, x))


# ------------------------------------------------------ the public functions
#: Cost classes of :func:`_cost_class`: 8 degree classes times 8 argument classes.
_NCLASSES = 64


def _cost_class(n: jax.Array, far: jax.Array, far_step: float) -> jax.Array:
    """An element's cost class for :func:`partitioned`: the degree (the recurrence's
    length, 6 degrees a class) and ``far`` (what sets the series' length: ``|x|`` for
    Laguerre, ``|1 - x|`` for the Jacobi family; ``far_step`` a class)."""

    def klass(u: jax.Array, width: float) -> jax.Array:
        u = jnp.where(jnp.isfinite(u), jnp.abs(u), 0.0)
        return jnp.minimum(jnp.floor(u * (1.0 / width)), 7.0).astype(jnp.int32)

    return klass(far, far_step) * 8 + klass(n, 6.0)


def _polynomial(
    name: str,
    value: Callable[..., jax.Array],
    derivative: Callable[..., jax.Array],
    far: Callable[[jax.Array], jax.Array] | None = None,
    far_step: float = 1.0,
) -> Callable[..., jax.Array]:
    """The compiled function: ``value(*args)`` with ``derivative(*args)`` as its JVP in the
    last argument (``x``); large inputs are evaluated in chunks (see ``chunked``).

    With ``far`` (the real-degree kernels: a hypergeometric series whose length grows
    with ``far(x)``, then a recurrence as long as the degree), a large call with any
    non-integer degree first groups its elements by :func:`_cost_class` (see
    ``partitioned``), so that a chunk's lock-step loops run about as long as its typical
    element needs rather than the longest of the call (on the bench's real degrees,
    2.0x faster for ``eval_genlaguerre`` and 1.45x for ``eval_jacobi``).  A call of
    integer degrees only skips the sort, which would cost it as much as it saves."""

    def plain(*args: jax.Array) -> jax.Array:
        return chunked(lambda *a: (value(*a),), *args, chunk=_CHUNK)[0]

    def impl(*args: jax.Array) -> jax.Array:
        if far is None or args[0].size <= _CHUNK:
            return plain(*args)
        cost = far

        def grouped(*args: jax.Array) -> jax.Array:
            key = _cost_class(args[0], cost(args[-1]), far_step)
            return partitioned(lambda *a: (value(*a),), key, _NCLASSES, *args, chunk=_CHUNK)[0]

        out: jax.Array = lax.cond(jnp.all(_is_int(args[0])), plain, grouped, *args)
        return out

    @jax.custom_jvp
    def f(*args: jax.Array) -> jax.Array:
        return impl(*args)

    def jvp(primals: tuple[jax.Array, ...], tangents: tuple[Any, ...]) -> Any:
        for i, t in enumerate(tangents[:-1]):
            nondiff(t, name, f"argument {i} (degree or parameter)")
        out = f(*primals)
        return out, derivative(*primals) * tangent(tangents[-1], primals[-1])

    f.defjvp(jvp, symbolic_zeros=True)
    return entry_point(f)


def _half(fn: Callable[..., jax.Array]) -> Callable[..., jax.Array]:
    """``fn`` at ``x / 2`` (``C_n``, ``S_n``)."""

    def run(n: jax.Array, x: jax.Array) -> jax.Array:
        return fn(n, 0.5 * x)

    return run


def _shift(fn: Callable[..., jax.Array]) -> Callable[..., jax.Array]:
    """``fn`` at ``2x - 1`` (the shifted polynomials on ``[0, 1]``)."""

    def run(n: jax.Array, x: jax.Array) -> jax.Array:
        return fn(n, 2.0 * x - 1.0)

    return run


def _times(factor: float, fn: Callable[..., jax.Array]) -> Callable[..., jax.Array]:
    def run(*args: jax.Array) -> jax.Array:
        return factor * fn(*args)

    return run


def _sh_norm(n: jax.Array, p: jax.Array) -> jax.Array:
    integer = _is_int(n)
    top = 2.0 * n + p - 1.0
    by_product = _binom_n(top, jnp.where(integer, n, 0.0))
    # A chunk of integer degrees skips the Gamma functions (their values are discarded).
    real: jax.Array = lax.cond(
        jnp.all(integer), lambda: jnp.ones_like(top), lambda: _binom_real(2.0 * n + p, n, n + p)
    )
    return jnp.where(integer, by_product, real)


def _sh_jacobi_value(n: jax.Array, p: jax.Array, q: jax.Array, x: jax.Array) -> jax.Array:
    return _jacobi_value(n, p - q, q - 1.0, 2.0 * x - 1.0) / _sh_norm(n, p)


def _dsh_jacobi(n: jax.Array, p: jax.Array, q: jax.Array, x: jax.Array) -> jax.Array:
    return 2.0 * _djacobi(n, p - q, q - 1.0, 2.0 * x - 1.0) / _sh_norm(n, p)


def _laguerre_real(n: jax.Array, x: jax.Array) -> jax.Array:
    return _genlaguerre_real(n, jnp.zeros_like(x), x)


def _laguerre_value(n: jax.Array, x: jax.Array) -> jax.Array:
    return _either(_laguerre_int, _laguerre_real, n, x)


def _dlaguerre(n: jax.Array, x: jax.Array) -> jax.Array:
    return _dgenlaguerre(n, jnp.zeros_like(x), x)


_CHEBYT = _polynomial("eval_chebyt", _chebyt_value, _dchebyt)
_CHEBYU = _polynomial("eval_chebyu", _chebyu_value, _dchebyu)
_CHEBYC = _polynomial("eval_chebyc", _times(2.0, _half(_chebyt_value)), _half(_dchebyt))
_CHEBYS = _polynomial("eval_chebys", _half(_chebyu_value), _times(0.5, _half(_dchebyu)))
_SH_CHEBYT = _polynomial("eval_sh_chebyt", _shift(_chebyt_value), _times(2.0, _shift(_dchebyt)))
_SH_CHEBYU = _polynomial("eval_sh_chebyu", _shift(_chebyu_value), _times(2.0, _shift(_dchebyu)))
_LEGENDRE = _polynomial("eval_legendre", _legendre_value, _dlegendre, lambda x: 1.0 - x, 0.25)
_SH_LEGENDRE = _polynomial(
    "eval_sh_legendre", _shift(_legendre_value), _times(2.0, _shift(_dlegendre))
)
_GEGENBAUER = _polynomial("eval_gegenbauer", _gegenbauer_value, _dgegenbauer)
_JACOBI = _polynomial("eval_jacobi", _jacobi_value, _djacobi, lambda x: 1.0 - x, 0.25)
_SH_JACOBI = _polynomial("eval_sh_jacobi", _sh_jacobi_value, _dsh_jacobi)
_GENLAGUERRE = _polynomial("eval_genlaguerre", _genlaguerre_value, _dgenlaguerre, lambda x: x, 2.0)
_LAGUERRE = _polynomial("eval_laguerre", _laguerre_value, _dlaguerre)
_HERMITE = _polynomial("eval_hermite", _hermite_value, _dhermite)
_HERMITENORM = _polynomial("eval_hermitenorm", _hermitenorm_value, _dhermitenorm)


def eval_chebyt(n: ArrayLike, x: ArrayLike) -> jax.Array:
    """Chebyshev polynomial of the first kind ``T_n(x)``, mirroring ``scipy.special.eval_chebyt``.

    Integer ``n`` by recurrence; real ``n``: ``cos(n acos x)`` on ``[-1, 1]``,
    ``cosh(n acosh x)`` above (nan below -1, where SciPy returns inf).
    Differentiable in ``x``: ``n U_{n-1}(x)``.
    """
    return _CHEBYT(n, x)


def eval_chebyu(n: ArrayLike, x: ArrayLike) -> jax.Array:
    """Chebyshev polynomial of the second kind ``U_n(x)``, mirroring
    ``scipy.special.eval_chebyu``.  Integer ``n`` by recurrence; real ``n``:
    ``sin((n+1) t) / sin t`` with ``x = cos t`` (nan at and below -1).
    Differentiable in ``x``."""
    return _CHEBYU(n, x)


def eval_chebyc(n: ArrayLike, x: ArrayLike) -> jax.Array:
    """Chebyshev ``C_n(x) = 2 T_n(x/2)`` on ``[-2, 2]``, mirroring ``scipy.special.eval_chebyc``.
    Differentiable in ``x``."""
    return _CHEBYC(n, x)


def eval_chebys(n: ArrayLike, x: ArrayLike) -> jax.Array:
    """Chebyshev ``S_n(x) = U_n(x/2)`` on ``[-2, 2]``, mirroring ``scipy.special.eval_chebys``.
    Differentiable in ``x``."""
    return _CHEBYS(n, x)


def eval_sh_chebyt(n: ArrayLike, x: ArrayLike) -> jax.Array:
    """Shifted Chebyshev ``T*_n(x) = T_n(2x - 1)``, mirroring ``scipy.special.eval_sh_chebyt``.
    Differentiable in ``x``."""
    return _SH_CHEBYT(n, x)


def eval_sh_chebyu(n: ArrayLike, x: ArrayLike) -> jax.Array:
    """Shifted Chebyshev ``U*_n(x) = U_n(2x - 1)``, mirroring ``scipy.special.eval_sh_chebyu``.
    Differentiable in ``x``."""
    return _SH_CHEBYU(n, x)


def eval_legendre(n: ArrayLike, x: ArrayLike) -> jax.Array:
    """Legendre polynomial ``P_n(x)``, mirroring ``scipy.special.eval_legendre``.

    Any real ``n`` (``P_{-n-1} = P_n``; a non-integer ``n`` by ``_poly_real``, nan
    below ``x = -1``; at -1 infinite with the sign of the limit).  Differentiable in ``x``:
    ``C^(3/2)_{n-1}(x)``.
    """
    return _LEGENDRE(n, x)


def eval_sh_legendre(n: ArrayLike, x: ArrayLike) -> jax.Array:
    """Shifted Legendre ``P*_n(x) = P_n(2x - 1)``, mirroring ``scipy.special.eval_sh_legendre``
    (real ``n``; nan below ``x = 0`` for a non-integer ``n``).  Differentiable in
    ``x``."""
    return _SH_LEGENDRE(n, x)


def eval_gegenbauer(n: ArrayLike, alpha: ArrayLike, x: ArrayLike) -> jax.Array:
    """Gegenbauer polynomial ``C^(alpha)_n(x)``, mirroring ``scipy.special.eval_gegenbauer``
    (integer ``n``, 0 for ``n < 0``; real ``n > -1``, nan below ``x = -1``).
    Differentiable in ``x``: ``2 alpha C^(alpha+1)_{n-1}(x)``."""
    return _GEGENBAUER(n, alpha, x)


def eval_jacobi(n: ArrayLike, alpha: ArrayLike, beta: ArrayLike, x: ArrayLike) -> jax.Array:
    """Jacobi polynomial ``P^(alpha, beta)_n(x)``, mirroring ``scipy.special.eval_jacobi``
    (integer ``n >= 0``; real ``n > -1``, nan below ``x = -1``).
    Differentiable in ``x``: ``(n + alpha + beta + 1)/2 P^(alpha+1, beta+1)_{n-1}(x)``."""
    return _JACOBI(n, alpha, beta, x)


def eval_sh_jacobi(n: ArrayLike, p: ArrayLike, q: ArrayLike, x: ArrayLike) -> jax.Array:
    """Shifted Jacobi ``G^(p, q)_n(x) = P^(p-q, q-1)_n(2x - 1) / binom(2n + p - 1, n)``,
    mirroring ``scipy.special.eval_sh_jacobi`` (real ``n >= 0``).  Differentiable in ``x``."""
    return _SH_JACOBI(n, p, q, x)


def eval_genlaguerre(n: ArrayLike, alpha: ArrayLike, x: ArrayLike) -> jax.Array:
    """Generalised Laguerre polynomial ``L^(alpha)_n(x)``, mirroring
    ``scipy.special.eval_genlaguerre`` (integer ``n``, 0 for ``n < 0``; real ``n > -1``;
    ``alpha > -1``).
    Differentiable in ``x``: ``-L^(alpha+1)_{n-1}(x)``."""
    return _GENLAGUERRE(n, alpha, x)


def eval_laguerre(n: ArrayLike, x: ArrayLike) -> jax.Array:
    """Laguerre polynomial ``L_n(x)``, mirroring ``scipy.special.eval_laguerre`` (integer
    ``n``; real ``n > -1``).  Differentiable in ``x``."""
    return _LAGUERRE(n, x)


def eval_hermite(n: ArrayLike, x: ArrayLike) -> jax.Array:
    """Physicists' Hermite polynomial ``H_n(x)``, mirroring ``scipy.special.eval_hermite``
    (SciPy takes integer ``n`` only; a real ``n`` is truncated towards 0 here; nan for
    ``n < 0``).  Differentiable in ``x``: ``2n H_{n-1}(x)``."""
    return _HERMITE(n, x)


def eval_hermitenorm(n: ArrayLike, x: ArrayLike) -> jax.Array:
    """Probabilists' Hermite polynomial ``He_n(x)``, mirroring
    ``scipy.special.eval_hermitenorm`` (integer ``n``; a real ``n`` is truncated towards 0).
    Differentiable in ``x``: ``n He_{n-1}(x)``."""
    return _HERMITENORM(n, x)


# ----------------------------------------------------------------- oracles
def _scipy(name: str) -> Any:
    # Imported when a check calls it: SciPy is the oracle, not a runtime need.
    return getattr(importlib.import_module("scipy.special"), name)


def _scipy_version() -> tuple[int, ...]:
    version = importlib.import_module("scipy").__version__
    return tuple(int(part) for part in version.split(".")[:2])


def _integer_oracle(name: str, *, real: str = "none") -> Callable[..., Any]:
    """SciPy's function at an integer ``n`` called with an integer (its recurrence, as
    here; with a float ``n`` SciPy sums ``hyp2f1``'s terminating series instead).

    ``real``: what a non-integer ``n`` gives here: ``"none"`` nan,
    ``"trunc"`` truncated (SciPy refuses non-integer ``n``), ``"cheby"`` or
    ``"hyper"`` mpmath's value (see :func:`_real_chebyshev`, :func:`_real_hyper`).
    With SciPy before 1.18, ``eval_gegenbauer``'s values at ``x = +-inf`` are the limits
    SciPy 1.18 gives, in place of its nan: an infinity with the sign of SciPy's own value
    at ``+-1e5``, where the leading term dominates (0 where that value is 0).
    """

    def oracle(degree: Any, *params: Any) -> Any:
        fn = _scipy(name)  # here, not above: loading the plugin must not import SciPy
        n = np.asarray(degree, np.float64)
        if real == "trunc":
            n = np.trunc(n)
        n, *args = np.broadcast_arrays(n, *params)
        integer = np.isfinite(n) & (n == np.round(n))
        as_int = np.asarray(fn(np.where(integer, n, 0).astype(np.int64), *args), np.float64)
        if name == "eval_gegenbauer" and _scipy_version() < (1, 18):
            a, x = args
            at_inf = np.isinf(x) & integer & (n >= 1) & (a > -1.0)
            far = fn(np.where(at_inf, n, 0).astype(np.int64), a, np.where(x < 0, -1e5, 1e5))
            limit = np.where(far == 0.0, 0.0, np.copysign(np.inf, far))
            as_int = np.where(at_inf, limit, as_int)
        if real == "cheby":
            other = _real_chebyshev(name, np.where(integer, 0.5, n), args[-1])
        elif real == "hyper":
            other = _real_hyper(name, np.where(integer, 0.5, n), *args)
        else:
            other = np.full(np.shape(n), np.nan)
        return np.where(integer, as_int, other)

    return oracle


def _real_hyper(name: str, n: Any, *args: Any) -> Any:
    """Legendre, Gegenbauer, Jacobi and Laguerre functions of real degree from mpmath
    (40 digits), by SciPy's definitions through ``hyp2f1`` / ``hyp1f1``.

    Not SciPy: its ``hyp2f1`` at these arguments is off by up to 1e21 relative for
    ``x < 0`` and its ``hyp1f1`` by up to 1e5 (degrees to 50).  Nan where SciPy gives
    nan (the parameters' poles) and below ``x = -1`` (a complex value).  At ``x = -1``
    with ``c - a - b <= 0`` the limit: infinite with the sign of the function just
    above -1 (SciPy returns ``+inf`` whatever the sign).
    """
    mpmath = importlib.import_module("mpmath")
    out = np.full(np.shape(n), np.nan)

    def hyp2f1(a: Any, b: Any, c: Any, x: Any) -> Any:
        if x > -1 or c - a - b > 0:
            return mpmath.hyp2f1(a, b, c, (1 - x) / 2)
        return mpmath.sign(mpmath.hyp2f1(a, b, c, 1 - mpmath.mpf(10) ** -30)) * mpmath.inf

    with mpmath.workdps(40):
        for i in np.ndindex(out.shape):
            v, *ps = (mpmath.mpf(float(a[i])) for a in (n, *args))
            if not all(mpmath.isfinite(p) for p in (v, *ps)):
                continue
            x = ps[-1]
            if name.startswith("eval_sh_"):
                x = 2 * x - 1
            if "laguerre" not in name and x < -1:
                continue
            if name in ("eval_legendre", "eval_sh_legendre"):
                value = hyp2f1(-v, v + 1, 1, x)
            elif name == "eval_gegenbauer":
                g = ps[0]
                if g < 0 and 2 * g == int(2 * g):
                    continue
                value = mpmath.binomial(v + 2 * g - 1, v) * hyp2f1(-v, v + 2 * g, g + 0.5, x)
            elif name in ("eval_jacobi", "eval_sh_jacobi"):
                a, b = ps[0], ps[1]
                if name == "eval_sh_jacobi":
                    a, b = ps[0] - ps[1], ps[1] - 1
                if a < 0 and a == int(a):
                    continue
                value = mpmath.binomial(v + a, v) * hyp2f1(-v, v + a + b + 1, a + 1, x)
                if name == "eval_sh_jacobi":
                    value /= mpmath.binomial(2 * v + ps[0] - 1, v)
            else:
                a = ps[0] if name == "eval_genlaguerre" else mpmath.mpf(0)
                if a <= -1:
                    continue
                value = mpmath.binomial(v + a, v) * mpmath.hyp1f1(-v, a + 1, x)
            out[i] = float(value)
    return out


def _real_chebyshev(name: str, n: Any, x: Any) -> Any:
    """Chebyshev functions of real degree from mpmath (50 digits).

    Not SciPy: its ``hyp2f1`` form loses accuracy for ``x < 0`` (errors from 1e-12 up
    to 1e17 on ``[-1, 0]``, degrees 3..20) and for negative degrees.  Nan below the
    real range (``x < -1``; for ``U`` also ``x = -1``) and at infinite ``n`` or ``x``.
    """
    mpmath = importlib.import_module("mpmath")
    first = name in ("eval_chebyt", "eval_chebyc", "eval_sh_chebyt")
    if "sh_" in name:
        arg = 2.0 * x - 1.0
    elif name in ("eval_chebyc", "eval_chebys"):
        arg = 0.5 * x
    else:
        arg = x
    out = np.full(np.shape(n), np.nan)
    with mpmath.workdps(50):
        for i in np.ndindex(out.shape):
            v, t = float(n[i]), float(arg[i])
            if not (math.isfinite(v) and math.isfinite(t)) or t < -1.0 or (t == -1.0 and not first):
                continue
            value = mpmath.chebyt(v, t) if first else mpmath.chebyu(v, t)
            out[i] = float(mpmath.re(value)) * (2.0 if name == "eval_chebyc" else 1.0)
    return out


#: Float64 only: in float32 the recurrences lose ~n ulp times the cancellation between
#: their terms (up to ~1e-4 relative at degree 40, and the last bits differ between XLA's
#: scalar and vectorised code); they run in float32 but are not held to 5e-6.  Near the
#: zeros of a polynomial the error is absolute: a few ulp of its terms.
_ORTHO_TOL = {"float64": (1e-12, 1e-14)}
#: Real degree (Chebyshev): cos/sin of v*acos(x) are good to ~v ulp absolute near the
#: zeros of T_v and U_v.
_REAL_TOL = {"float64": (1e-12, 1e-13)}
#: Laguerre at large x and Gegenbauer/Jacobi at large parameters: the recurrence's terms
#: cancel by up to ~1e4.  Against mpmath SciPy's own recurrence is off by up to 2.3e-12
#: (genlaguerre n=26, x=25) and 5.3e-12 (gegenbauer n=13, alpha=9.8, x=0.30), this port
#: by up to 1.2e-12 (laguerre n=35, x=29.1) and 3.4e-12 (the same gegenbauer point):
#: held to 1e-11 between the two.
_CANCEL_TOL = {"float64": (1e-11, 1e-14)}
_F64 = ("float64",)

_N = (0.0, 40.0)
#: Real (non-integer) degrees: the declared range of ``_poly_real``.
_REAL_N = (-0.99, 50.0)
#: Real-degree Laguerre above this ``x``: the base values grow like ``e^x`` while the
#: function does not, and the recurrence's cancellation passes 1e-11.
_LAGUERRE_X = 15.0


def _int_domain(*bounds: tuple[float, float]) -> Domain:
    return Domain((_N, *bounds), integers=(0,))


def _cheby(name: str, fn: Any, x: tuple[float, float], real_x: tuple[float, float]) -> ScipyWrapper:
    return declare(
        name,
        fn,
        domains=(_int_domain(x), Domain(((0.0, 20.0), real_x))),
        differentiable=(1,),
        tolerances=_REAL_TOL,
        dtypes=_F64,
        edge_cases=(EdgeCase((-3.0, 0.3)), EdgeCase((-1.0, 0.3)), EdgeCase((2.5, real_x[1]))),
        oracle=_integer_oracle(name, real="cheby"),
    )


WRAPPERS: tuple[ScipyWrapper, ...] = (
    _cheby("eval_chebyt", eval_chebyt, (-1.2, 1.2), (-1.0, 3.0)),
    _cheby("eval_chebyu", eval_chebyu, (-1.2, 1.2), (-0.9, 3.0)),
    _cheby("eval_chebyc", eval_chebyc, (-2.4, 2.4), (-2.0, 6.0)),
    _cheby("eval_chebys", eval_chebys, (-2.4, 2.4), (-1.8, 6.0)),
    _cheby("eval_sh_chebyt", eval_sh_chebyt, (-0.1, 1.1), (0.0, 2.0)),
    _cheby("eval_sh_chebyu", eval_sh_chebyu, (-0.1, 1.1), (0.05, 2.0)),
    declare(
        "eval_legendre",
        eval_legendre,
        domains=(
            _int_domain((-1.0, 1.0)),
            _int_domain((-1e-5, 1e-5)),
            _int_domain((1.0, 3.0)),
            Domain(((-50.0, 50.0), (-1.0, 1.0))),
            Domain(((0.0, 50.0), (1.0, 10.0))),
        ),
        differentiable=(1,),
        tolerances=_ORTHO_TOL,
        dtypes=_F64,
        edge_cases=(EdgeCase((-4.0, 0.3)), EdgeCase((7.0, 1e-6)), EdgeCase((2.5, 0.3))),
        oracle=_integer_oracle("eval_legendre", real="hyper"),
    ),
    declare(
        "eval_sh_legendre",
        eval_sh_legendre,
        domains=(_int_domain((0.0, 1.0)), Domain(((-50.0, 50.0), (0.0, 1.0)))),
        differentiable=(1,),
        tolerances=_ORTHO_TOL,
        dtypes=_F64,
        oracle=_integer_oracle("eval_sh_legendre", real="hyper"),
    ),
    declare(
        "eval_gegenbauer",
        eval_gegenbauer,
        domains=(
            _int_domain((-0.45, 10.0), (-1.0, 1.0)),
            _int_domain((0.1, 5.0), (-1e-5, 1e-5)),
            Domain((_REAL_N, (-0.45, 10.0), (-1.0, 3.0))),
        ),
        differentiable=(2,),
        tolerances=_CANCEL_TOL,
        dtypes=_F64,
        edge_cases=(EdgeCase((-2.0, 1.0, 0.3)), EdgeCase((5.0, 0.0, 0.3))),
        oracle=_integer_oracle("eval_gegenbauer", real="hyper"),
    ),
    declare(
        "eval_jacobi",
        eval_jacobi,
        domains=(
            _int_domain((-0.9, 5.0), (-0.9, 5.0), (-1.0, 1.0)),
            Domain((_REAL_N, (-0.9, 5.0), (-0.9, 5.0), (-1.0, 3.0))),
        ),
        differentiable=(3,),
        tolerances=_CANCEL_TOL,
        dtypes=_F64,
        oracle=_integer_oracle("eval_jacobi", real="hyper"),
    ),
    declare(
        "eval_sh_jacobi",
        eval_sh_jacobi,
        domains=(
            Domain(((0.0, 30.0), (1.0, 6.0), (0.1, 1.0), (0.0, 1.0)), integers=(0,)),
            Domain(((0.0, 30.0), (1.0, 6.0), (0.1, 1.0), (0.0, 1.0))),
        ),
        differentiable=(3,),
        tolerances=_CANCEL_TOL,
        dtypes=_F64,
        oracle=_integer_oracle("eval_sh_jacobi", real="hyper"),
    ),
    declare(
        "eval_genlaguerre",
        eval_genlaguerre,
        domains=(
            _int_domain((-0.9, 5.0), (0.0, 30.0)),
            Domain((_REAL_N, (-0.9, 5.0), (0.0, _LAGUERRE_X))),
        ),
        differentiable=(2,),
        tolerances=_CANCEL_TOL,
        dtypes=_F64,
        edge_cases=(EdgeCase((-2.0, 1.0, 0.3)), EdgeCase((3.0, -1.0, 0.3))),
        oracle=_integer_oracle("eval_genlaguerre", real="hyper"),
    ),
    declare(
        "eval_laguerre",
        eval_laguerre,
        domains=(_int_domain((0.0, 30.0)), Domain((_REAL_N, (0.0, _LAGUERRE_X)))),
        differentiable=(1,),
        tolerances=_CANCEL_TOL,
        dtypes=_F64,
        oracle=_integer_oracle("eval_laguerre", real="hyper"),
    ),
    declare(
        "eval_hermite",
        eval_hermite,
        domains=(_int_domain((-8.0, 8.0)),),
        differentiable=(1,),
        tolerances=_ORTHO_TOL,
        dtypes=_F64,
        edge_cases=(EdgeCase((-1.0, 0.3)),),
        oracle=_integer_oracle("eval_hermite", real="trunc"),
    ),
    declare(
        "eval_hermitenorm",
        eval_hermitenorm,
        domains=(_int_domain((-10.0, 10.0)),),
        differentiable=(1,),
        tolerances=_ORTHO_TOL,
        dtypes=_F64,
        edge_cases=(EdgeCase((-1.0, 0.3)),),
        oracle=_integer_oracle("eval_hermitenorm", real="trunc"),
    ),
)

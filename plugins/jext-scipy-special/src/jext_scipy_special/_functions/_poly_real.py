"""Jacobi-type and Laguerre functions of real (non-integer) degree.

SciPy defines them through the hypergeometric functions
(``scipy/special/orthogonal_eval.pxd``):

* ``P^(a,b)_v(x) = binom(v + a, v) 2F1(-v, v + a + b + 1; a + 1; (1 - x)/2)``; Legendre
  is ``a = b = 0``, Gegenbauer ``C^(g)_v = binom(v + 2g - 1, v) 2F1(-v, v + 2g; g + 1/2; .)``
  (the Jacobi ``2F1`` with ``a = b = g - 1/2``);
* ``L^(a)_v(x) = binom(v + a, v) 1F1(-v; a + 1; x)``.

Method: write ``v = v1 + m`` with ``v1`` in ``[1, 2)`` (or ``v1 = v`` below 1).  The two
hypergeometric values at ``v1 - 1`` and ``v1`` are summed as Gauss / Kummer series (small
first parameter: after the first two terms every term has the same sign, so the sum
only cancels near a zero of the function); above ``x = 1`` Pfaff's transformation
``2F1(A, B; C; z) = (1 - z)^-A 2F1(A, C - B; C; z / (z - 1))`` makes the argument
positive.  Then the three-term recurrences in the degree (contiguous relations of the
hypergeometric functions, valid for any degree: DLMF 18.9.2 and 13.3.1 with the
normalisation divided out) carry them up to ``v``; on ``[-1, 1]`` both solutions of the
Jacobi recurrence oscillate with the same size, above 1 and for Laguerre the wanted
solution dominates, so the forward recurrence is stable.  The normalising binomial is
``Gamma``-ratio at ``v1`` times the product of the recurrence's ratios.

The series converges like ``z^k``: it is summed to ``z <= 0.975`` (``x >= -0.95``;
``x <= 79`` through Pfaff); for ``x`` below -0.95 (where the non-integer degree's
function grows like ``(1 + x)^-b`` or ``log(1 + x)`` towards -1) it would need the
connection formula about ``z = 1`` (DLMF 15.8.4, 15.8.10) and gives nan here.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp

from ._common import iterate

__all__ = ["genlaguerre_real", "jacobi_type_real", "rgamma", "steps"]

#: Largest Gauss-series argument: 0.975^1600 < 1e-17.
Z_MAX = 0.975
_TERMS = 1700
_TINY = 2.0**-56

_NO_LIMIT = 2**30  # the loops stop when every element has taken its own steps
#: Recurrence steps per loop trip.  (With one, XLA compiles the step so that it rounds
#: differently, and SciPy's Legendre and Laguerre tables miss their tolerance.)
_UNROLL = 4

State = tuple[jax.Array, ...]


def steps(step: Callable[[jax.Array, State], State], state: State, count: jax.Array) -> State:
    """``state = step(k, state)`` for ``k = 1 .. count`` (per element; 0 steps where
    ``count`` is not finite).  Elements are frozen after their own ``count`` steps."""
    count = jnp.where(jnp.isfinite(count), count, 0.0)

    def counted(k: jax.Array, st: State) -> State:
        return (*step(k, st[:-1]), jnp.broadcast_to(k, count.shape))

    def done(st: State) -> jax.Array:
        return st[-1] >= count

    return iterate(
        counted, (*state, jnp.zeros_like(count)), done, _NO_LIMIT, count.dtype, unroll=_UNROLL
    )[:-1]


def rgamma(x: jax.Array) -> jax.Array:
    """``1 / Gamma(x)``, 0 at the poles."""
    pole = (x <= 0.0) & (x == jnp.floor(x))
    return jnp.where(pole, 0.0, 1.0 / jsp.gamma(jnp.where(pole, 0.5, x)))


def _two_series(
    a0: jax.Array, a1: jax.Array, b0: jax.Array, b1: jax.Array, c: jax.Array, z: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """``pFq(a_i, b_i; c; z) - 1`` for ``i = 0, 1`` summed together (``b_i`` nan:
    ``1F1``).  Without the leading 1, so that the difference of the two keeps its
    relative accuracy where both are near 1.

    Stops per element once the terms decrease and the last one is below ``2^-56``
    times the sum (times ``1 - z``, the tail's geometric bound)."""
    kummer = jnp.isnan(b0)
    b0 = jnp.where(kummer, 0.0, b0)
    b1 = jnp.where(kummer, 0.0, b1)
    tail = jnp.where(kummer, 0.5, 1.0 - jnp.abs(z))

    def ratio(j: jax.Array, a: jax.Array, b: jax.Array) -> jax.Array:
        return (j + a) * jnp.where(kummer, 1.0, j + b) * z / ((j + c) * (j + 1.0))

    def step(_: jax.Array, st: State) -> State:
        j, s0, t0, s1, t1 = st
        t0 = t0 * ratio(j, a0, b0)
        t1 = t1 * ratio(j, a1, b1)
        return j + 1.0, s0 + t0, t0, s1 + t1, t1

    def small(j: jax.Array, s: jax.Array, t: jax.Array, a: jax.Array, b: jax.Array) -> jax.Array:
        return (jnp.abs(t) <= _TINY * tail * jnp.abs(1.0 + s)) & (jnp.abs(ratio(j, a, b)) < 1.0)

    def done(st: State) -> jax.Array:
        j, s0, t0, s1, t1 = st
        settled = j > -jnp.minimum(a0, a1) + 1.0  # past the sign changes of (j + a_i)
        converged = settled & small(j, s0, t0, a0, b0) & small(j, s1, t1, a1, b1)
        return converged | ~jnp.isfinite(s0 + s1)

    one = jnp.ones_like(z)
    zero = 0.0 * one
    start: State = (zero, zero, one, zero, one)
    _, s0, _, s1, _ = iterate(step, start, done, _TERMS, z.dtype)
    return s0, s1


def _split(n: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(v1, m)``: ``n = v1 + m`` with ``v1`` in ``[1, 2)`` and ``m >= 0`` steps (below 1:
    ``v1 = n``, no steps)."""
    m = jnp.where(n >= 1.0, jnp.floor(n) - 1.0, 0.0)
    return n - m, m


def jacobi_type_real(n: jax.Array, a: jax.Array, b: jax.Array, x: jax.Array) -> jax.Array:
    """``2F1(-n, n + a + b + 1; a + 1; (1 - x)/2)`` for real ``n`` (the normalised Jacobi
    function; nan below ``x = -0.95``)."""
    v1, m = _split(n)
    s = a + b + 1.0
    z = 0.5 - 0.5 * x
    neg = z < 0.0
    w = jnp.where(neg, z / (z - 1.0), z)
    ok = (w <= Z_MAX) & jnp.isfinite(w)
    w = jnp.where(ok, w, 0.0)
    # Pfaff for z < 0: (1 - z)^v 2F1(-v, a + 1 - v - s; a + 1; w).
    s0, s1 = _two_series(
        1.0 - v1,
        -v1,
        jnp.where(neg, a + 2.0 - v1 - s, v1 - 1.0 + s),
        jnp.where(neg, a + 1.0 - v1 - s, v1 + s),
        a + 1.0,
        jnp.where(neg, w, z),
    )
    # Above x = 1 (Pfaff's factors) the function dominates: the plain difference will do.
    f0 = jnp.where(neg, (1.0 + s0) * (1.0 - z) ** (v1 - 1.0), 1.0 + s0)
    f1 = jnp.where(neg, (1.0 + s1) * (1.0 - z) ** v1, 1.0 + s1)
    d1 = jnp.where(neg, f1 - f0, s1 - s0)
    sig = a + b
    xm1 = x - 1.0

    def step(k: jax.Array, st: State) -> State:
        # The increment form of DLMF 18.9.2 divided by binom(v + a, v) (as SciPy's
        # integer recurrence): d_{v+1} = F_{v+1} - F_v from d_v = F_v - F_{v-1}.
        p, d = st
        v = v1 + k - 1.0
        t = 2.0 * v + sig
        d = (t * (t + 1.0) * (t + 2.0) * xm1 * p + 2.0 * v * (v + b) * (t + 2.0) * d) / (
            2.0 * (v + a + 1.0) * (v + sig + 1.0) * t
        )
        return p + d, d

    out, _ = steps(step, (f1, d1), m)
    return jnp.where(ok, out, jnp.nan)


def genlaguerre_real(n: jax.Array, a: jax.Array, x: jax.Array) -> jax.Array:
    """``1F1(-n; a + 1; x)`` for real ``n`` (the normalised Laguerre function)."""
    v1, m = _split(n)
    nan = jnp.full_like(x, jnp.nan)
    s0, s1 = _two_series(1.0 - v1, -v1, nan, nan, a + 1.0, x)

    def step(k: jax.Array, st: State) -> State:
        # DLMF 13.3.1 over binom(v + a, v), in increment form: d_{v+1} = F_{v+1} - F_v.
        p, d = st
        v = v1 + k - 1.0
        d = (v * d - x * p) / (v + a + 1.0)
        return p + d, d

    return steps(step, (1.0 + s1, s1 - s0), m)[0]

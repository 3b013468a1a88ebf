"""Reference values of ``I_x(a, b)`` at large parameters for ``tests/test_special_beta_family.py``.

``mpmath.betainc`` does not finish at ``a, b ~ 1e5`` (its hypergeometric series), so the
values come from the classical continued fraction (modified Lentz) evaluated in mpmath at
60 digits, times the prefactor ``x^a (1-x)^b / (a B(a, b))`` from ``mpmath.loggamma``, on
the side ``x < (a+1)/(a+b+2)`` where the fraction converges (``I_x = 1 - I_y(b, a)``
otherwise); at ``a, b <= 1e3`` it agrees with ``mpmath.betainc`` to 1e-57.  The points
sit in both tails (``1e-280 <= I <= 1e-3``) and in the centre, where the rounded offset
``b x - a (1 - x)`` in the prefactor's exponent cost up to ~1e-11 relative before (and
where ``jax.scipy.special.betainc``, which ``jext.scipy.special.betainc`` replaces, is off).
Run ``python plugins/jext-scipy-special/tools/beta_large_reference.py``: prints the
tables pasted into the test.
"""

from __future__ import annotations

import mpmath as mp  # type: ignore[import-untyped]
import scipy.special as sc  # type: ignore[import-untyped]

mp.mp.dps = 60


def _fraction(a: mp.mpf, b: mp.mpf, x: mp.mpf) -> mp.mpf:
    tiny = mp.mpf(10) ** -300
    eps = mp.mpf(10) ** -55

    def guard(v: mp.mpf) -> mp.mpf:
        return tiny if abs(v) < tiny else v

    c, d = mp.mpf(1), 1 / guard(1 - (a + b) * x / (a + 1))
    h = d
    for m in range(1, 1_000_000):
        for num in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 / guard(1 + num * d)
            c = guard(1 + num / c)
            h *= d * c
        if abs(d * c - 1) < eps:
            return h
    raise RuntimeError("the continued fraction did not converge")


def beta_pq(a: float, b: float, x: float) -> tuple[mp.mpf, mp.mpf]:
    """``(I_x(a, b), 1 - I_x(a, b))`` at the exact binary values of the arguments."""
    am, bm, xm = mp.mpf(a), mp.mpf(b), mp.mpf(x)
    ym = 1 - xm
    log_pre = am * mp.log(xm) + bm * mp.log(ym)
    log_pre -= mp.loggamma(am) + mp.loggamma(bm) - mp.loggamma(am + bm)
    if xm < (am + 1) / (am + bm + 2):
        i = mp.exp(log_pre) * _fraction(am, bm, xm) / am
        return i, 1 - i
    i = mp.exp(log_pre) * _fraction(bm, am, ym) / bm
    return 1 - i, i


#: (a, b, target 1 - I): x is SciPy's quantile, rounded; the value is recomputed.  Both
#: orders of the parameters, so that x is on either side of 1/2.
BETAINCC = (
    (3.0e3, 7.5e3, 1e-250),
    (7.5e3, 3.0e3, 1e-250),
    (2.0e4, 2.0e4, 1e-280),
    (1.5e5, 6.0e4, 1e-120),
    (6.0e5, 9.0e5, 1e-200),
    (4.0e6, 2.5e6, 1e-60),
    (8.0e6, 1.0e7, 1e-150),
    (3.0e6, 1.0e7, 1e-20),
    (5.0e6, 5.0e6, 0.3),
    (7.0e4, 2.0e6, 1e-100),
)
#: (a, b, target I) near the centre, for ``betainc``: where ``jax.scipy.special.betainc``
#: (a fixed continued fraction with ``lgamma`` differences) is 1e-11..1e-2 off.
BETAINC = (
    (1.0e5, 1.0e5, 0.5),
    (3.0e5, 1.0e6, 0.2),
    (2.0e6, 5.0e5, 0.7),
    (5.0e6, 6.0e6, 0.06),
    (9.0e6, 4.0e6, 0.5),
    (1.0e7, 1.0e7, 0.9),
    (7.0e6, 8.0e6, 0.3),
    (4.0e5, 3.0e6, 0.95),
)
#: (k, n, target bdtr): p from SciPy's quantile, rounded.
BDTR = (
    (1.0e3, 2.0e4, 1e-200),
    (4.0e4, 1.0e5, 1e-100),
    (3.0e5, 1.2e6, 1e-250),
    (2.0e6, 5.0e6, 1e-30),
    (6.0e6, 9.0e6, 1e-180),
)


def main() -> None:
    print("# (a, b, x, 1 - I_x(a, b))")
    for a, b, target in BETAINCC:
        x = float(sc.betainccinv(a, b, target))
        print(f"({a!r}, {b!r}, {x!r}, {mp.nstr(beta_pq(a, b, x)[1], 17)!s}),")
    print("# (a, b, x, I_x(a, b))")
    for a, b, target in BETAINC:
        x = float(sc.betaincinv(a, b, target))
        print(f"({a!r}, {b!r}, {x!r}, {mp.nstr(beta_pq(a, b, x)[0], 17)!s}),")
    print("# (k, n, p, bdtr(k, n, p) = I_p(k+1, n-k) complemented)")
    for k, n, target in BDTR:
        p = float(sc.betainccinv(k + 1.0, n - k, target))
        print(f"({k!r}, {n!r}, {p!r}, {mp.nstr(beta_pq(k + 1.0, n - k, p)[1], 17)!s}),")


if __name__ == "__main__":
    main()

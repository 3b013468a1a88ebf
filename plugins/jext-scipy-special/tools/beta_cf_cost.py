"""Derivation of ``_beta._cf_class``: the length of ``betainc_cf``'s continued fraction,
fitted on the bench domains of the incomplete-beta family.

NumPy re-statement of ``_t.betainc_cf`` (the even contraction, modified Lentz, one term
per step, stopping once ``|delta - 1| <= 4 eps``) in the frame ``_beta._pq_core`` runs it
(``I_y(b, a)`` where ``x > (a+1)/(a+b+2)``).  Samples: the ``betainc``/``betaincinv``
domain (``a, b`` log-uniform on ``[0.1, 1e3]``, ``x`` uniform), ``bdtr`` and ``binom.cdf``
(``a = k+1``, ``b = n-k``, whole numbers up to 120), ``nbdtr`` and ``fdtr`` (as their
bench rows draw them).  Features, in the fraction's frame: ``r = x (a+b+2)/(a+1) <= 1``
and ``s = sqrt(b x)``.  A least-squares fit of the step count on
``(1, r, r s, s, log1p(s))`` gives the coefficients ``_cf_class`` uses (rounded to one
decimal); the script then prints, per class of ``_beta._CF_EDGES``, the number of
elements and their mean and largest counts (a good grouping has a small largest count in
the cheap classes).  Run ``python plugins/jext-scipy-special/tools/beta_cf_cost.py``.
"""

from __future__ import annotations

import numpy as np

EPS = float(np.finfo(np.float64).eps)
TINY = float(np.finfo(np.float64).tiny)
EDGES = (5.0, 8.0, 12.0, 18.0, 27.0)  # _beta._CF_EDGES
USED = (3.2, 6.0, 1.9, -0.7, 0.5)  # _beta._cf_class's coefficients


def fraction_steps(a: np.ndarray, b: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Terms ``betainc_cf`` takes for each element (``x < (a+1)/(a+b+2)``)."""

    def clamp(v: np.ndarray) -> np.ndarray:
        return np.where(np.abs(v) < TINY, TINY, v)

    lam1 = a * y - b * x + 1.0
    cc = clamp(a * lam1 / (a + 1.0))
    dd = np.zeros_like(x)
    done, steps = np.zeros(x.shape, bool), np.zeros(x.shape)
    m = 1.0
    while not done.all() and m <= 3000:
        den = a + 2.0 * m - 1.0
        alpha = (m * (a + m - 1.0) / den) * ((a + b + m - 1.0) * x / den) * ((b - m) * x)
        beta = m + m * (b - m) * x / den + (a + m) * (lam1 + m * (2.0 - x)) / (den + 2.0)
        ndd = 1.0 / clamp(beta + alpha * dd)
        ncc = clamp(beta + alpha / cc)
        cc, dd = np.where(done, cc, ncc), np.where(done, dd, ndd)
        steps = np.where(done, steps, m)
        done |= np.abs(ncc * ndd - 1.0) <= 4.0 * EPS
        m += 1.0
    return steps


def features(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, ...]:
    """The fraction's frame ``(pa, pb, px, py)`` and the fit's columns."""
    swap = x > (a + 1.0) / (a + b + 2.0)
    pa, pb = np.where(swap, b, a), np.where(swap, a, b)
    px = np.where(swap, 1.0 - x, x)
    r = px * (pa + pb + 2.0) / (pa + 1.0)
    s = np.sqrt(pb * px)
    cols = np.stack([np.ones_like(r), r, r * s, s, np.log1p(s)], axis=1)
    return pa, pb, px, 1.0 - px, cols


def samples(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    def logu(lo: float, hi: float) -> np.ndarray:
        return np.exp(rng.uniform(np.log(lo), np.log(hi), n))

    def u(lo: float, hi: float) -> np.ndarray:
        return rng.uniform(lo, hi, n)

    parts = []
    parts.append((logu(0.1, 1e3), logu(0.1, 1e3), u(0.0, 1.0)))  # betainc
    k, nn = np.floor(u(0.0, 60.0)), np.floor(u(60.0, 120.0))
    parts.append((k + 1.0, nn - k, u(0.0, 1.0)))  # bdtr: I_{1-p}(n-k, k+1) = 1 - I_p(k+1, n-k)
    k, nn = np.floor(u(0.0, 120.0)), np.floor(u(1.0, 121.0))
    keep = k < nn
    parts.append((k[keep] + 1.0, nn[keep] - k[keep], u(0.0, 1.0)[keep]))  # binom.cdf
    parts.append((np.floor(u(1.0, 50.0)), np.floor(u(0.0, 100.0)) + 1.0, u(0.0, 1.0)))  # nbdtr
    d1, d2, f = logu(0.2, 500.0), logu(0.2, 500.0), logu(1e-3, 100.0)
    parts.append((0.5 * d1, 0.5 * d2, d1 * f / (d1 * f + d2)))  # fdtr
    a, b, x = (np.concatenate(c) for c in zip(*parts, strict=True))
    ok = (x > 0.0) & (x < 1.0)
    return a[ok], b[ok], x[ok]


def main() -> None:
    a, b, x = samples(np.random.default_rng(0), 20000)
    pa, pb, px, py, cols = features(a, b, x)
    steps = fraction_steps(pa, pb, px, py)
    coef = np.linalg.lstsq(cols, steps, rcond=None)[0]
    print("least-squares coefficients of (1, r, r s, s, log1p(s)):", np.round(coef, 2))
    print("used in _beta._cf_class:                               ", USED)
    est = cols @ np.asarray(USED)
    print(f"rms error of the used fit: {np.sqrt(np.mean((est - steps) ** 2)):.2f} steps")
    cls = np.searchsorted(np.asarray(EDGES), est)
    for c in range(len(EDGES) + 1):
        pick = cls == c
        if pick.any():
            print(
                f"class {c}: {pick.sum():6d} elements, "
                f"mean {steps[pick].mean():5.1f}, max {steps[pick].max():5.0f} steps"
            )


if __name__ == "__main__":
    main()

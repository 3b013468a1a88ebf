"""Iteration counts of ``gamma_pq``'s series and continued fraction on the ``gdtr`` bench
domain, against the estimates ``_incgamma._cost_class`` groups elements by.

NumPy re-statement of the two loops (one term per step, stopping rules as in
``_gamma._p_series`` and ``_gamma._q_cf``).  Run
``python plugins/jext-scipy-special/tools/incgamma_cost.py``: prints, per method and
estimate class, the number of elements and their mean and largest iteration counts
(a good grouping has a small largest count in the cheap classes).
"""

from __future__ import annotations

import numpy as np

EPS = float(np.finfo(np.float64).eps)
TINY = float(np.finfo(np.float64).tiny)
EDGES = (6.0, 10.0, 16.0, 25.0, 40.0, 64.0)


def series_steps(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    term, total = np.ones_like(x), np.ones_like(x)
    done, steps = np.zeros(x.shape, bool), np.zeros(x.shape)
    n = 1
    while not done.all() and n < 20000:
        term = np.where(done, term, term * x / (a + n))
        total = np.where(done, total, total + term)
        steps = np.where(done, steps, n)
        done |= term <= EPS * total
        n += 1
    return steps


def fraction_steps(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    b0 = x + 1.0 - a
    cc = np.where(np.abs(b0) < TINY, TINY, b0)
    dd = np.zeros_like(x)
    done, steps = np.zeros(x.shape, bool), np.zeros(x.shape)
    m = 1
    while not done.all() and m < 20000:
        an, bn = m * (a - m), b0 + 2.0 * m
        ndd = 1.0 / np.where(np.abs(bn + an * dd) < TINY, TINY, bn + an * dd)
        ncc = np.where(np.abs(bn + an / cc) < TINY, TINY, bn + an / cc)
        cc, dd = np.where(done, cc, ncc), np.where(done, dd, ndd)
        steps = np.where(done, steps, m)
        done |= np.abs(ncc * ndd - 1.0) <= 4.0 * EPS
        m += 1
    return steps


def main() -> None:
    rng = np.random.default_rng(0)
    n = 20000

    def logu(lo: float, hi: float) -> np.ndarray:
        return np.exp(rng.uniform(np.log(lo), np.log(hi), n))

    a = logu(0.1, 300.0)  # gdtr's shape b
    x = logu(0.1, 10.0) * logu(0.01, 30.0)  # rate times x
    ser = x < a + 1.0
    steps = np.where(
        ser, series_steps(a, np.where(ser, x, 0.5 * a)), fraction_steps(a, np.where(ser, a + 2, x))
    )
    est_ser = np.minimum(36.0 / np.maximum(np.log((a + 1.0) / x), 1e-3), 9.0 * np.sqrt(a + 1.0))
    est_cf = 4.0 + 60.0 / np.sqrt(x) + 3.0 * a / np.maximum(x - a, 1e-3)
    cls = np.searchsorted(np.asarray(EDGES), np.where(ser, est_ser, est_cf))
    for name, sel in (("series", ser), ("fraction", ~ser)):
        for c in range(len(EDGES) + 1):
            pick = sel & (cls == c)
            if pick.any():
                print(
                    f"{name:9s} class {c}: {pick.sum():6d} elements, "
                    f"mean {steps[pick].mean():5.1f}, max {steps[pick].max():4.0f} steps"
                )


if __name__ == "__main__":
    main()

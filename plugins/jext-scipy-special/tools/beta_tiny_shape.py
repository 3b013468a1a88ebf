"""Relative error of ``I_x(a, b)`` and ``1 - I_x(a, b)`` with one tiny shape: jext, SciPy, mpmath.

Run from the repository root::

    python plugins/jext-scipy-special/tools/beta_tiny_shape.py [-v]

One of ``a, b`` in {1e-300 .. 1e-3}, the other in {0.5, 1, 5, 50}, ``x`` over ``(0, 1)``
on both sides of the mean; mpmath at 60 digits (``1 - I`` as ``I_{1-x}(b, a)``, no
cancellation).  Prints the points off by more than 1e-13 (all with ``-v``) and the worst
relative error per tiny value.  Values below the smallest normal double are skipped
(XLA's CPU flushes them to 0).
"""

from __future__ import annotations

import itertools
import sys

import jax
import mpmath as mp  # type: ignore[import-untyped]
import numpy as np
import scipy.special as sc  # type: ignore[import-untyped]

jax.config.update("jax_enable_x64", True)

from jext.scipy.special import betainc, betaincc  # noqa: E402  (after x64 is set)

TINY = (1e-300, 1e-100, 1e-20, 1e-10, 1e-8, 1e-7, 1e-6, 3e-6, 1e-5, 1e-4, 1e-3)
OTHER = (0.5, 1.0, 5.0, 50.0)
XS = (1e-10, 1e-3, 0.05, 0.3, 0.6, 0.9, 0.999, 1 - 1e-10)


def _rel(got: float, want: float) -> float:
    return abs(got - want) / want if want >= 2.3e-308 else 0.0


def main() -> None:
    mp.mp.dps = 60
    rows = [
        (a, b, x) for t, o, x in itertools.product(TINY, OTHER, XS) for a, b in ((t, o), (o, t))
    ]
    a, b, x = (np.array(v) for v in zip(*rows, strict=True))
    got = (np.asarray(betainc(a, b, x)), np.asarray(betaincc(a, b, x)))
    ref = (sc.betainc(a, b, x), sc.betaincc(a, b, x))
    worst: dict[tuple[str, float], list[float]] = {}
    for i, (ai, bi, xi) in enumerate(rows):
        am, bm, xm = mp.mpf(ai), mp.mpf(bi), mp.mpf(xi)
        p = float(mp.betainc(am, bm, 0, xm, regularized=True))
        q = float(mp.betainc(bm, am, 0, 1 - xm, regularized=True))
        e = [_rel(got[0][i], p), _rel(got[1][i], q), _rel(ref[0][i], p), _rel(ref[1][i], q)]
        if max(e) > 1e-13 or "-v" in sys.argv:
            print(
                f"a={ai:.0e} b={bi:g} x={xi:.10g} I={p:.3e} 1-I={q:.3e}  jext {e[0]:.1e} "
                f"{e[1]:.1e}  scipy {e[2]:.1e} {e[3]:.1e}"
            )
        w = worst.setdefault(("a tiny" if ai < bi else "b tiny", min(ai, bi)), [0.0] * 4)
        w[:] = [max(u, v) for u, v in zip(w, e, strict=True)]
    print("worst relative error: jext I, jext 1-I, scipy I, scipy 1-I")
    for (side, t), w in worst.items():
        print(f"{side} {t:.0e}  " + "  ".join(f"{v:.1e}" for v in w))


if __name__ == "__main__":
    main()

"""Derive the coefficients of the order-0 and order-1 modified Bessel kernels
``K0, K1`` (``_bessel_k01.py``).

Run from the repository root (needs mpmath; takes a few seconds)::

    python plugins/jext-scipy-special/tools/fit_bessel_k01.py > \
        plugins/jext-scipy-special/src/jext_scipy_special/_functions/_bessel_k01_coeffs.py
    ruff format plugins/jext-scipy-special/src/jext_scipy_special/_functions/_bessel_k01_coeffs.py

Two regions, split at ``x = S``:

* ``x <= S``: the power series about 0 (Abramowitz & Stegun 9.6.10, 9.6.11, 9.6.13), whose
  coefficients are exact rationals and harmonic numbers / digamma values, evaluated here at
  40 digits, with ``t = x^2/4``:
  ``I0 = sum t^k / k!^2``, ``I1 = (x/2) sum t^k / (k! (k+1)!)``;
  ``K0 = -(log(x/2) + gamma) I0 + sum H_k t^k / k!^2``;
  ``K1 = 1/x + log(x/2) I1 - (x/4) sum (psi(k+1) + psi(k+2)) t^k / (k! (k+1)!)``.
  Each sum is cut where its terms at ``x = S`` fall below ``2**-60``.
* ``x > S``: ``sqrt(x) e^x K_n(x)``, smooth and tending to ``sqrt(pi/2)``, fitted as a
  polynomial in ``w = S/x`` on ``[0, 1]``: Chebyshev interpolation at ``NODES`` points
  (values from mpmath's ``besselk`` at 40 digits), truncated where the Chebyshev
  coefficients fall below ``2**-60``, then converted to powers of ``w`` in 40-digit
  arithmetic and rounded to float64 (the helpers, ``NODES`` and ``CUT`` of ``fit_bessel01.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import mpmath as mp  # type: ignore[import-untyped]

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fit_bessel01 import (
    _emit,
    _emit_head,
    _emit_series,
    _interpolate,
    _series_coefficients,
    _unit_nodes,
)

mp.mp.dps = 40
S = 2


def _series() -> dict[str, list[mp.mpf]]:
    def terms(k: int) -> dict[str, mp.mpf]:
        fk, fk1 = mp.factorial(k), mp.factorial(k + 1)
        return {
            "I0": 1 / fk**2,
            "I1": 1 / (fk * fk1),
            "K0": mp.harmonic(k) / fk**2,
            "K1": (mp.digamma(k + 1) + mp.digamma(k + 2)) / (fk * fk1),
        }

    return _series_coefficients(terms, mp.mpf(S) ** 2 / 4, 60)


def _fit(n: int) -> list[mp.mpf]:
    xs = [S / w for w in _unit_nodes()]
    return _interpolate([mp.sqrt(x) * mp.exp(x) * mp.besselk(n, x) for x in xs])


def main() -> None:
    _emit_head(
        "Coefficients of the order-0 and order-1 kernels ``K0, K1`` (``_bessel_k01.py``).",
        "fit_bessel_k01.py",
        S,
        "series for ``x <= SPLIT``, fitted scaled form beyond",
    )
    _emit_series(_series())
    for n in (0, 1):
        print()
        _emit(f"K{n}_SCALED", _fit(n), f"``sqrt(x) e^x K_{n}(x)`` in ``w = SPLIT/x``.")


if __name__ == "__main__":
    main()

"""Derive the coefficients of the order-0 and order-1 Bessel kernels (``_bessel01.py``).

Run from the repository root (needs mpmath; takes about a minute)::

    python plugins/jext-scipy-special/tools/fit_bessel01.py > \
        plugins/jext-scipy-special/src/jext_scipy_special/_functions/_bessel01_coeffs.py
    ruff format plugins/jext-scipy-special/src/jext_scipy_special/_functions/_bessel01_coeffs.py

Two regions, split at ``x = S``:

* ``x <= S``: the power series about 0, whose coefficients are exact rationals (and, for
  ``Y``, harmonic numbers / digamma values), evaluated here at 40 digits
  (Abramowitz & Stegun 9.1.10, 9.1.11, 9.1.13):
  ``J0 = sum (-t)^k / k!^2``, ``J1 = (x/2) sum (-t)^k / (k! (k+1)!)``, ``t = x^2/4``;
  ``Y0 = (2/pi) (log(x/2) + gamma) J0 + (2/pi) sum (-1)^(k+1) H_k t^k / k!^2``;
  ``Y1 = (2/pi) log(x/2) J1 - 2/(pi x)
  - (x/(2 pi)) sum (-t)^k (psi(k+1) + psi(k+2)) / (k! (k+1)!)``.
  Each sum is cut where its terms at ``x = S`` fall below ``2**-60``.
* ``x > S``: the Hankel form ``J_n = sqrt(2/(pi x)) (P_n cos chi - Q_n sin chi)``,
  ``Y_n = sqrt(2/(pi x)) (P_n sin chi + Q_n cos chi)``, ``chi = x - (2n+1) pi/4``, where
  ``P_n = sqrt(pi x/2) (J_n cos chi + Y_n sin chi)`` and
  ``Q_n = sqrt(pi x/2) (Y_n cos chi - J_n sin chi)`` are smooth and non-oscillating.
  ``P_n`` and ``x Q_n`` are fitted as polynomials in ``w = (S/x)^2`` on ``[0, 1]``:
  Chebyshev interpolation at ``NODES`` points (values from mpmath's ``besselj`` /
  ``bessely`` at 40 digits; at ``w = 0`` the limits are those of Hankel's expansion),
  truncated where the Chebyshev coefficients fall below ``2**-60``, then converted to
  powers of ``w`` in 40-digit arithmetic and rounded to float64.

And ``pi/4`` split into words for the reduction of the phase (``_bessel01._phase``).
"""

from __future__ import annotations

from collections.abc import Callable

import mpmath as mp  # type: ignore[import-untyped]

mp.mp.dps = 40
S = 5
NODES = 80
CUT = mp.mpf(2) ** -60


def _series() -> dict[str, list[mp.mpf]]:
    def terms(k: int) -> dict[str, mp.mpf]:
        fk, fk1 = mp.factorial(k), mp.factorial(k + 1)
        sign = (-1) ** k
        return {
            "J0": sign / fk**2,
            "J1": sign / (fk * fk1),
            "Y0": -(2 / mp.pi) * sign * mp.harmonic(k) / fk**2,
            "Y1": -sign * (mp.digamma(k + 1) + mp.digamma(k + 2)) / (mp.pi * fk * fk1),
        }

    return _series_coefficients(terms, mp.mpf(S) ** 2 / 4, 80)


def _series_coefficients(
    terms: Callable[[int], dict[str, mp.mpf]], t: mp.mpf, most: int
) -> dict[str, list[mp.mpf]]:
    """The coefficients ``terms(k)`` of several series in ``t`` (at most ``most`` each), each
    series cut once its terms at the split point ``t`` fall below ``CUT``."""
    out: dict[str, list[mp.mpf]] = {}
    done: set[str] = set()
    for k in range(most):
        for name, c in terms(k).items():
            if name in done:
                continue
            out.setdefault(name, []).append(c)
            # Past the largest term (k > t), the terms only fall: stop below CUT.
            if k > t and abs(c) * t**k < CUT:
                done.add(name)
    return out


def _pq(n: int, x: mp.mpf) -> tuple[mp.mpf, mp.mpf]:
    chi = x - (2 * n + 1) * mp.pi / 4
    j, y = mp.besselj(n, x), mp.bessely(n, x)
    a = mp.sqrt(mp.pi * x / 2)
    return a * (j * mp.cos(chi) + y * mp.sin(chi)), a * (y * mp.cos(chi) - j * mp.sin(chi))


def _cheb_to_powers(c: list[mp.mpf]) -> list[mp.mpf]:
    """``sum c_k T_k(2w - 1)`` as coefficients of ``w^j`` (lowest first)."""
    # T_0 = 1, T_1 = s, T_{k+1} = 2 s T_k - T_{k-1} with s = 2w - 1, in powers of w.
    prev, cur = [mp.mpf(1)], [mp.mpf(-1), mp.mpf(2)]
    total = [c[0] * p for p in prev] + [mp.mpf(0)] * (len(c) - 1)
    for k in range(1, len(c)):
        for j, p in enumerate(cur):
            total[j] += c[k] * p
        nxt = [mp.mpf(0)] * (len(cur) + 1)
        for j, p in enumerate(cur):
            nxt[j] += -2 * p
            nxt[j + 1] += 4 * p
        for j, p in enumerate(prev):
            nxt[j] -= p
        prev, cur = cur, nxt
    return total


def _fit(n: int) -> tuple[list[mp.mpf], list[mp.mpf]]:
    ps, qs = [], []
    for w in _unit_nodes():
        x = S / mp.sqrt(w)
        p, q = _pq(n, x)
        ps.append(p)
        qs.append(q * x)
    return _interpolate(ps), _interpolate(qs)


def _unit_nodes() -> list[mp.mpf]:
    """The ``NODES`` first-kind Chebyshev nodes, mapped from ``[-1, 1]`` to ``w`` in ``[0, 1]``."""
    return [(mp.cos(mp.pi * (k + mp.mpf(1) / 2) / NODES) + 1) / 2 for k in range(NODES)]


def _interpolate(vals: list[mp.mpf]) -> list[mp.mpf]:
    """The Chebyshev interpolant of ``vals`` (at the ``NODES`` first-kind nodes), cut
    where its coefficients fall below ``CUT`` relative to the first, in powers of ``w``."""
    n = len(vals)
    c = [
        2 * mp.fsum(v * mp.cos(mp.pi * k * (j + mp.mpf(1) / 2) / n) for j, v in enumerate(vals)) / n
        for k in range(n)
    ]
    c[0] /= 2
    deg = max(k for k in range(n) if abs(c[k]) > CUT * abs(c[0]))
    return _cheb_to_powers(c[: deg + 1])


def _split_pio4(bits: int, precision: int) -> list[mp.mpf]:
    """``pi/4`` as three words: two of ``bits`` significant bits, then the rest rounded to
    ``precision`` bits (``k`` times a short word is exact while ``k < 2**(p - bits)``)."""
    words, rest = [], mp.pi / 4
    for nbits in (bits, bits, precision):
        e = mp.floor(mp.log(abs(rest), 2)) + 1 - nbits
        word = mp.nint(rest / mp.mpf(2) ** e) * mp.mpf(2) ** e
        words.append(word)
        rest -= word
    return words


def _emit(name: str, coeffs: list[mp.mpf], doc: str) -> None:
    print(f"#: {doc}")
    print(f"{name}: tuple[float, ...] = (")
    for c in reversed(coeffs):  # highest power first, for Horner
        print(f"    {mp.nstr(c, 22, min_fixed=0, max_fixed=0)},")
    print(")")


def _emit_head(title: str, tool: str, split: float, regions: str) -> None:
    """The generated module's docstring, its ``SPLIT`` and the comment saying what it splits."""
    print(f'"""{title}')
    print()
    print(f"Generated by ``plugins/jext-scipy-special/tools/{tool}`` (method in its")
    print('docstring); do not edit by hand.  Highest power first."""')
    print()
    print("from __future__ import annotations")
    print()
    print(f"#: The regions' split point: {regions}.")
    print(f"SPLIT = {split:.1f}")


def _emit_series(series: dict[str, list[mp.mpf]]) -> None:
    for name, coeffs in series.items():
        print()
        _emit(f"{name}_SERIES", coeffs, f"Series part of ``{name}`` in ``t = x^2/4``.")


def main() -> None:
    _emit_head(
        "Coefficients of the order-0 and order-1 Bessel kernels (``_bessel01.py``).",
        "fit_bessel01.py",
        S,
        "series for ``|x| <= SPLIT``, Hankel form beyond",
    )
    for name, bits, precision in (("PIO4_64", 25, 53), ("PIO4_32", 12, 24)):
        words = ", ".join(
            mp.nstr(w, 25, min_fixed=0, max_fixed=0) for w in _split_pio4(bits, precision)
        )
        print()
        print(f"#: ``pi/4`` in three words ({bits}, {bits} and {precision} significant bits).")
        print(f"{name}: tuple[float, float, float] = ({words})")
    _emit_series(_series())
    for n in (0, 1):
        p, q = _fit(n)
        print()
        _emit(f"P{n}", p, f"``P_{n}`` in ``w = (SPLIT/x)^2``.")
        print()
        _emit(f"Q{n}", q, f"``x Q_{n}`` in ``w = (SPLIT/x)^2``.")


if __name__ == "__main__":
    main()

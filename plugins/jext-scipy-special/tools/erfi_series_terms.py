"""How many Maclaurin terms ``erfi`` needs below its switch to the asymptotic series.

``erfi(x) = 2/sqrt(pi) sum_k x^(2k+1) / (k! (2k+1))``; every term is positive, so the
relative truncation error of ``n`` terms is the exact (rational) tail over the sum.
Run ``python plugins/jext-scipy-special/tools/erfi_series_terms.py``: prints, for
float64 (``x^2 = 6.5^2``) and float32 (``x^2 = 4^2``), the tail left by each ``n``.
"""

from __future__ import annotations

import math
from fractions import Fraction


def tail_fraction(x2: Fraction, n: int, total_terms: int = 400) -> float:
    terms = [x2**k / (math.factorial(k) * (2 * k + 1)) for k in range(total_terms)]
    return float(sum(terms[n:]) / sum(terms))


def main() -> None:
    for label, x2, ns in (
        ("float64, |x| = 6.5", Fraction(169, 4), (100, 105, 110, 115)),
        ("float32, |x| = 4", Fraction(16), (40, 44, 48, 52)),
    ):
        for n in ns:
            print(f"{label}: {n} terms leave {tail_fraction(x2, n):.2e} of the sum")


if __name__ == "__main__":
    main()

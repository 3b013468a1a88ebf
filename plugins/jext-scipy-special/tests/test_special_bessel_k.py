"""The loop-free kernels of ``k0, k0e, k1, k1e`` (series to 2, a fitted polynomial in
``2/x`` beyond) and ``kn`` built on them, against mpmath: what ``jext check`` does not
cover.  Values on the declared domains, edges and gradients are ``jext check``'s; SciPy's
own tables are in ``test_special_scipy_data.py``, batch independence in ``test_special_batch.py``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import scipy.special as sc  # type: ignore[import-untyped]
from _special_cases import x64
from jext_scipy_special._functions import _bessel_family as bf


def test_order_0_and_1_kernels_and_kn_hold_to_mpmath() -> None:
    """Both sides of the split at 2, the middle range, the far range where ``K`` nears
    underflow, and ``kn`` by recurrence at small and large orders (also beyond 700, where
    it runs on ``e^x K``, rescaled past 1000), in one compiled program."""
    x = np.array([1e-200, 1e-5, 0.3, 1.0, 1.999999, 2.0, 2.000001, 3.3, 7.7, 25.0, 123.4, 690.0])
    orders = np.array([[3.0], [17.0], [-40.0]])
    xn = np.array([1e-3, 0.5, 2.0, 9.5, 80.0, 700.5])

    # Orders past 1000 beyond 700, where e^x K_n overflows and the recurrence rescales.
    big_n, big_x = np.array([1100.0, 1300.0]), np.array([710.0, 1200.0])

    def program(t: jax.Array, u: jax.Array) -> tuple[jax.Array, ...]:
        ks = jnp.stack([bf.k0(t), bf.k1(t), bf.k0e(t), bf.k1e(t)])
        return ks, bf.kn(orders, u), bf.kn(big_n, big_x)  # one copy of the kernel each

    with x64(True):
        ks, kn, kn_big = (np.asarray(a) for a in jax.jit(program)(x, xn))
    with mpmath.workdps(40):

        def k(n: float, t: float, scaled: bool) -> float:
            v = mpmath.besselk(n, mpmath.mpf(t))
            return float(v * mpmath.exp(t) if scaled else v)

        want = np.array(
            [[k(n, t, s) for t in x] for n, s in ((0, False), (1, False), (0, True), (1, True))]
        )
        want_n = np.array([[k(n, t, False) for t in xn] for n in orders[:, 0]])
    np.testing.assert_allclose(ks, want, rtol=5e-15)
    np.testing.assert_allclose(kn, want_n, rtol=5e-14)
    # SciPy's kn returns 0 at 700.5 (true value 3e-306); below, it agrees.
    np.testing.assert_allclose(kn[:, :-1], sc.kn(orders.astype(int), xn[:-1]), rtol=1e-12)
    assert (sc.kn(orders.astype(int), xn[-1]) == 0.0).all()
    # 4.3e13 and 2.1e-240 (mpmath's besselk does not converge there; SciPy's kv, AMOS, does).
    np.testing.assert_allclose(kn_big, sc.kv(big_n, big_x), rtol=1e-12)

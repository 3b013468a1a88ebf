"""Throughput of the jext-scipy-special kernels against SciPy on 1e6 float64 elements.

Run from the repository root::

    python bench/bench_scipy.py [NAME ...]   # optional: only these functions
    python bench/bench_scipy.py --repeat 9 --markdown /tmp/table.md   # the docs' table

For each function, one array of 1,000,000 float64 inputs is drawn from the function's
documented test domain (fixed seed).  The jitted JAX function (x64 enabled, compiled and
warmed up first, inputs already on the device, timed to ``block_until_ready``) and the
SciPy ufunc on the same NumPy arrays are timed alternately, several times each, in this
one process.  Printed per function: the medians, the ratio scipy_time / jax_time of the
medians (goal: >= 1.0) and ``GOAL MET`` / ``GOAL MISSED``.  The machine may be shared
and noisy: read medians and ratios, not single runs.  ``--repeat N`` sets the number of
alternating calls per row (default 3-7 by row cost); ``--markdown FILE`` also writes the
machine line, the load averages and the table that bench/results/scipy-throughput.md shows.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

os.environ["JAX_ENABLE_X64"] = "1"  # float64 throughout, set before JAX reads it

import jax
import jax.numpy as jnp
import jext_scipy_special as jf
import numpy as np
import scipy  # type: ignore[import-untyped]
import scipy.special as sc  # type: ignore[import-untyped]

N = 1_000_000

Case = tuple[Callable[..., Any], Callable[..., Any], tuple[np.ndarray, ...]]


def _inputs(rng: np.random.Generator) -> dict[str, Case]:
    e1 = np.exp(-1.0)
    return {
        "ellipk": (jf.ellipk, sc.ellipk, (rng.uniform(-10.0, 1.0, N),)),
        "ellipkm1": (jf.ellipkm1, sc.ellipkm1, (rng.uniform(0.0, 1.0, N),)),
        "ellipe": (jf.ellipe, sc.ellipe, (rng.uniform(-10.0, 1.0, N),)),
        "erfcinv": (jf.erfcinv, sc.erfcinv, (rng.uniform(0.0, 2.0, N),)),
        "stdtr": (
            jf.stdtr,
            sc.stdtr,
            (np.exp(rng.uniform(np.log(0.5), np.log(1e3), N)), rng.uniform(-50.0, 50.0, N)),
        ),
        "lambertw k=0": (
            lambda z: jf.lambertw(z, 0),
            lambda z: sc.lambertw(z, 0).real,
            (rng.uniform(-e1, 100.0, N),),
        ),
        "lambertw k=-1": (
            lambda z: jf.lambertw(z, -1),
            lambda z: sc.lambertw(z, -1).real,
            (rng.uniform(-e1, 0.0, N),),
        ),
        "gammaincinv": (
            jf.gammaincinv,
            sc.gammaincinv,
            (np.exp(rng.uniform(np.log(0.1), np.log(100.0), N)), rng.uniform(0.0, 1.0, N)),
        ),
        "kv": (jf.kv, sc.kv, (rng.uniform(-20.0, 20.0, N), rng.uniform(0.0, 100.0, N))),
        "kve": (jf.kve, sc.kve, (rng.uniform(-20.0, 20.0, N), rng.uniform(0.0, 100.0, N))),
    }


def _family_inputs(rng: np.random.Generator) -> dict[str, Case]:
    """Rows for the elementary and gamma-distribution families (kept apart from the
    rows above so that other families' rows merge without conflicts)."""
    from jext_scipy_special._functions import _elementary as el
    from jext_scipy_special._functions import _gammadist as gd

    def u(lo: float, hi: float) -> np.ndarray:
        return rng.uniform(lo, hi, N)

    def logu(lo: float, hi: float) -> np.ndarray:
        return np.exp(rng.uniform(np.log(lo), np.log(hi), N))

    return {
        "exprel": (el.exprel, sc.exprel, (u(-50.0, 50.0),)),
        "cosm1": (el.cosm1, sc.cosm1, (u(-3.0, 3.0),)),
        "exp2": (el.exp2, sc.exp2, (u(-1000.0, 1000.0),)),
        "exp10": (el.exp10, sc.exp10, (u(-300.0, 300.0),)),
        "cbrt": (el.cbrt, sc.cbrt, (u(-1e10, 1e10),)),
        "sindg": (el.sindg, sc.sindg, (u(-720.0, 720.0),)),
        "cosdg": (el.cosdg, sc.cosdg, (u(-720.0, 720.0),)),
        "tandg": (el.tandg, sc.tandg, (u(-720.0, 720.0),)),
        "cotdg": (el.cotdg, sc.cotdg, (u(-720.0, 720.0),)),
        "radian": (el.radian, sc.radian, (u(-360.0, 360.0), u(-60.0, 60.0), u(-60.0, 60.0))),
        "huber": (el.huber, sc.huber, (u(0.0, 5.0), u(-10.0, 10.0))),
        "pseudo_huber": (el.pseudo_huber, sc.pseudo_huber, (u(0.01, 5.0), u(-10.0, 10.0))),
        "inv_boxcox": (el.inv_boxcox, sc.inv_boxcox, (u(-0.25, 2.0), u(-0.3, 3.0))),
        "inv_boxcox1p": (el.inv_boxcox1p, sc.inv_boxcox1p, (u(-0.9, 3.0), u(-0.3, 3.0))),
        "gdtr": (gd.gdtr, sc.gdtr, (logu(0.1, 10.0), logu(0.1, 300.0), logu(0.01, 30.0))),
        "gdtrc": (gd.gdtrc, sc.gdtrc, (logu(0.1, 10.0), logu(0.1, 300.0), logu(0.01, 30.0))),
        "chdtr": (gd.chdtr, sc.chdtr, (logu(0.1, 500.0), logu(0.01, 1000.0))),
        "chdtrc": (gd.chdtrc, sc.chdtrc, (logu(0.1, 500.0), logu(0.01, 1000.0))),
        "pdtr": (gd.pdtr, sc.pdtr, (np.floor(u(0.0, 200.0)), u(0.01, 300.0))),
        "pdtrc": (gd.pdtrc, sc.pdtrc, (np.floor(u(0.0, 200.0)), u(0.01, 300.0))),
        "chdtri": (gd.chdtri, sc.chdtri, (u(0.1, 500.0), u(0.001, 0.999))),
        "pdtri": (gd.pdtri, sc.pdtri, (np.floor(u(0.0, 200.0)), u(0.001, 0.999))),
    }


def _special_families_inputs(rng: np.random.Generator) -> dict[str, Case]:
    """The Bessel, elliptic and error/gamma families (``_functions/_*_family.py``)."""
    from jext_scipy_special._functions import _bessel_family as bf
    from jext_scipy_special._functions import _elliptic_family as ef
    from jext_scipy_special._functions import _gamma_family as gf
    from jext_scipy_special._functions._gamma import gammainccinv

    def logu(lo: float, hi: float) -> np.ndarray:
        return np.exp(rng.uniform(np.log(lo), np.log(hi), N))

    def u(lo: float, hi: float) -> np.ndarray:
        return rng.uniform(lo, hi, N)

    return {
        "iv": (bf.iv, sc.iv, (u(-20.0, 20.0), u(1e-3, 100.0))),
        "ive": (bf.ive, sc.ive, (u(-20.0, 20.0), u(1e-3, 100.0))),
        "k0": (bf.k0, sc.k0, (logu(1e-6, 700.0),)),
        "k0e": (bf.k0e, sc.k0e, (logu(1e-6, 1e4),)),
        "k1": (bf.k1, sc.k1, (logu(1e-6, 700.0),)),
        "k1e": (bf.k1e, sc.k1e, (logu(1e-6, 1e4),)),
        "kn": (bf.kn, lambda n, x: sc.kn(n.astype(int), x), (np.round(u(-20, 20)), u(1e-3, 100.0))),
        "elliprf": (ef.elliprf, sc.elliprf, (logu(1e-3, 1e3), logu(1e-3, 1e3), logu(1e-3, 1e3))),
        "elliprd": (ef.elliprd, sc.elliprd, (logu(1e-3, 1e3), logu(1e-3, 1e3), logu(1e-3, 1e3))),
        "elliprc": (ef.elliprc, sc.elliprc, (logu(1e-3, 1e3), logu(1e-3, 1e3))),
        "elliprj": (
            ef.elliprj,
            sc.elliprj,
            (logu(1e-3, 1e3), logu(1e-3, 1e3), logu(1e-3, 1e3), logu(1e-3, 1e3)),
        ),
        "elliprg": (ef.elliprg, sc.elliprg, (logu(1e-3, 1e3), logu(1e-3, 1e3), logu(1e-3, 1e3))),
        "ellipkinc": (ef.ellipkinc, sc.ellipkinc, (u(-10.0, 10.0), u(-5.0, 0.99))),
        "ellipeinc": (ef.ellipeinc, sc.ellipeinc, (u(-10.0, 10.0), u(-5.0, 1.0))),
        "ellipj": (
            lambda a, m: jnp.stack(ef.ellipj(a, m)),
            lambda a, m: np.stack(sc.ellipj(a, m)),
            (u(-10.0, 10.0), u(0.0, 1.0)),
        ),
        "agm": (ef.agm, sc.agm, (logu(1e-3, 1e3), logu(1e-3, 1e3))),
        "erfi": (gf.erfi, sc.erfi, (u(-26.0, 26.0),)),
        "ndtri_exp": (gf.ndtri_exp, sc.ndtri_exp, (u(-800.0, 0.0),)),
        "rgamma": (gf.rgamma, sc.rgamma, (u(-30.0, 170.0),)),
        "binom": (gf.binom, sc.binom, (u(0.0, 60.0), u(0.0, 20.0))),
        "powm1": (gf.powm1, sc.powm1, (u(0.01, 100.0), u(-50.0, 50.0))),
        "gammainccinv": (gammainccinv, sc.gammainccinv, (logu(0.1, 100.0), u(0.0, 1.0))),
    }


def _poly_misc_inputs(rng: np.random.Generator) -> dict[str, Case]:
    """The orthogonal polynomials (integer degrees 0..40, SciPy called with integers as
    for its recurrence) and ``zetac, shichi, wrightomega``."""
    from jext_scipy_special._functions import _misc_family as mf
    from jext_scipy_special._functions import _poly_family as pf

    def u(lo: float, hi: float) -> np.ndarray:
        return rng.uniform(lo, hi, N)

    def deg() -> np.ndarray:
        return np.asarray(np.floor(u(0.0, 41.0)), np.float64)

    def with_int_degree(fn: Callable[..., Any]) -> Callable[..., Any]:
        return lambda n, *args: fn(n.astype(np.int64), *args)

    cases: dict[str, Case] = {}
    for name, args in (
        ("eval_chebyt", (deg(), u(-1.0, 1.0))),
        ("eval_chebyu", (deg(), u(-1.0, 1.0))),
        ("eval_chebyc", (deg(), u(-2.0, 2.0))),
        ("eval_chebys", (deg(), u(-2.0, 2.0))),
        ("eval_sh_chebyt", (deg(), u(0.0, 1.0))),
        ("eval_sh_chebyu", (deg(), u(0.0, 1.0))),
        ("eval_legendre", (deg(), u(-1.0, 1.0))),
        ("eval_sh_legendre", (deg(), u(0.0, 1.0))),
        ("eval_gegenbauer", (deg(), u(-0.45, 10.0), u(-1.0, 1.0))),
        ("eval_jacobi", (deg(), u(-0.9, 5.0), u(-0.9, 5.0), u(-1.0, 1.0))),
        ("eval_sh_jacobi", (deg(), u(1.0, 6.0), u(0.1, 1.0), u(0.0, 1.0))),
        ("eval_genlaguerre", (deg(), u(-0.9, 5.0), u(0.0, 30.0))),
        ("eval_laguerre", (deg(), u(0.0, 30.0))),
        ("eval_hermite", (deg(), u(-8.0, 8.0))),
        ("eval_hermitenorm", (deg(), u(-10.0, 10.0))),
    ):
        cases[name] = (getattr(pf, name), with_int_degree(getattr(sc, name)), args)
    cases["eval_chebyt real"] = (pf.eval_chebyt, sc.eval_chebyt, (u(0.0, 20.0), u(-1.0, 3.0)))
    # Real degrees on x >= 0, where SciPy's hyp2f1 / hyp1f1 are accurate (below 0 they
    # are not: see docs/scipy-special-families.md).
    cases["eval_legendre real"] = (pf.eval_legendre, sc.eval_legendre, (u(0.0, 40.0), u(0.0, 1.0)))
    cases["eval_jacobi real"] = (
        pf.eval_jacobi,
        sc.eval_jacobi,
        (u(0.0, 40.0), u(-0.9, 5.0), u(-0.9, 5.0), u(0.0, 1.0)),
    )
    cases["eval_genlaguerre real"] = (
        pf.eval_genlaguerre,
        sc.eval_genlaguerre,
        (u(0.0, 40.0), u(-0.9, 5.0), u(0.0, 15.0)),
    )
    cases["zetac"] = (mf.zetac, sc.zetac, (u(-170.0, 60.0),))
    cases["shichi"] = (
        lambda x: jnp.stack(mf.shichi(x)),
        lambda x: np.stack(sc.shichi(x)),
        (u(-700.0, 700.0),),
    )
    cases["wrightomega"] = (mf.wrightomega, sc.wrightomega, (u(-50.0, 50.0),))
    return cases


def _bessel_jy_inputs(rng: np.random.Generator) -> dict[str, Case]:
    """Bessel functions of real order and Hankel functions (``_bessel_jy_family.py``)."""
    from jext_scipy_special._functions import _bessel_jy_family as jy

    def u(lo: float, hi: float) -> np.ndarray:
        return rng.uniform(lo, hi, N)

    orders, xs = u(-30.0, 30.0), u(1e-3, 60.0)
    ints = np.round(orders)
    return {
        "jv": (jy.jv, sc.jv, (orders, xs)),
        "jve": (jy.jve, sc.jve, (orders, xs)),
        "yv": (jy.yv, sc.yv, (orders, xs)),
        "yve": (jy.yve, sc.yve, (orders, xs)),
        "j0": (jy.j0, sc.j0, (u(-200.0, 200.0),)),
        "j1": (jy.j1, sc.j1, (u(-200.0, 200.0),)),
        "y0": (jy.y0, sc.y0, (u(1e-3, 200.0),)),
        "y1": (jy.y1, sc.y1, (u(1e-3, 200.0),)),
        "jn": (jy.jn, lambda n, x: sc.jn(n.astype(int), x), (ints, xs)),
        "yn": (jy.yn, lambda n, x: sc.yn(n.astype(int), x), (ints, xs)),
        "hankel1": (jy.hankel1, sc.hankel1, (orders, xs)),
        "hankel1e": (jy.hankel1e, sc.hankel1e, (orders, xs)),
        "hankel2": (jy.hankel2, sc.hankel2, (orders, xs)),
        "hankel2e": (jy.hankel2e, sc.hankel2e, (orders, xs)),
    }


def _beta_family_inputs(rng: np.random.Generator) -> dict[str, Case]:
    """The incomplete beta family (``_functions/_beta_family.py``)."""
    from jext_scipy_special._functions import _beta_family as bt

    def logu(lo: float, hi: float) -> np.ndarray:
        return np.exp(rng.uniform(np.log(lo), np.log(hi), N))

    def u(lo: float, hi: float) -> np.ndarray:
        return rng.uniform(lo, hi, N)

    def ints(lo: float, hi: float) -> np.ndarray:
        out: np.ndarray = np.floor(u(lo, hi))
        return out

    return {
        "betaincc": (bt.betaincc, sc.betaincc, (logu(0.1, 1e3), logu(0.1, 1e3), u(0.0, 1.0))),
        "betaincinv": (bt.betaincinv, sc.betaincinv, (logu(0.1, 1e3), logu(0.1, 1e3), u(0.0, 1.0))),
        "betainccinv": (
            bt.betainccinv,
            sc.betainccinv,
            (logu(0.1, 1e3), logu(0.1, 1e3), u(0.0, 1.0)),
        ),
        "bdtr": (bt.bdtr, sc.bdtr, (ints(0.0, 60.0), ints(60.0, 120.0), u(0.0, 1.0))),
        "bdtrc": (bt.bdtrc, sc.bdtrc, (ints(0.0, 60.0), ints(60.0, 120.0), u(0.0, 1.0))),
        "bdtri": (bt.bdtri, sc.bdtri, (ints(0.0, 60.0), ints(61.0, 120.0), u(1e-3, 0.999))),
        "nbdtr": (bt.nbdtr, sc.nbdtr, (ints(0.0, 100.0), ints(1.0, 50.0), u(0.0, 1.0))),
        "nbdtrc": (bt.nbdtrc, sc.nbdtrc, (ints(0.0, 100.0), ints(1.0, 50.0), u(0.0, 1.0))),
        "fdtr": (bt.fdtr, sc.fdtr, (logu(0.2, 500.0), logu(0.2, 500.0), logu(1e-3, 100.0))),
        "fdtrc": (bt.fdtrc, sc.fdtrc, (logu(0.2, 500.0), logu(0.2, 500.0), logu(1e-3, 100.0))),
        "fdtri": (bt.fdtri, sc.fdtri, (logu(0.2, 500.0), logu(0.2, 500.0), u(1e-3, 0.999))),
        "stdtrit": (bt.stdtrit, sc.stdtrit, (logu(0.5, 1e3), u(1e-6, 1.0 - 1e-6))),
    }


def _discrete_inputs(rng: np.random.Generator) -> dict[str, Case]:
    """``scipy.stats`` ``binom``, ``poisson``, ``nbinom`` methods (``_functions/_discrete.py``)."""
    import scipy.stats as st  # type: ignore[import-untyped]
    from jext_scipy_special._functions import _discrete as ds

    def u(lo: float, hi: float) -> np.ndarray:
        return rng.uniform(lo, hi, N)

    binom_k = (u(-2.0, 125.0), np.floor(u(0.0, 121.0)), u(0.0, 1.0))
    binom_q = (u(0.0, 1.0), np.floor(u(0.0, 121.0)), u(0.0, 1.0))
    mu = np.exp(rng.uniform(np.log(1e-3), np.log(300.0), N))
    nb = np.exp(rng.uniform(np.log(0.1), np.log(100.0), N))
    cases: dict[str, Case] = {}
    for dist, method, args in (
        ("binom", "cdf", binom_k),
        ("binom", "sf", binom_k),
        ("binom", "ppf", binom_q),
        ("binom", "isf", binom_q),
        ("poisson", "sf", (u(-2.0, 400.0), mu)),
        ("poisson", "ppf", (u(0.0, 1.0), mu)),
        ("poisson", "isf", (u(0.0, 1.0), mu)),
        ("nbinom", "cdf", (u(-2.0, 400.0), nb, u(0.01, 1.0))),
        ("nbinom", "sf", (u(-2.0, 400.0), nb, u(0.01, 1.0))),
        ("nbinom", "ppf", (u(0.0, 1.0), nb, u(0.01, 1.0))),
        ("nbinom", "isf", (u(0.0, 1.0), nb, u(0.01, 1.0))),
    ):
        ours = getattr(ds, f"{dist}_{method}")
        cases[f"{dist}.{method}"] = (ours, getattr(getattr(st, dist), method), args)
    return cases


def _ks_voigt_inputs(rng: np.random.Generator) -> dict[str, Case]:
    """Kolmogorov-Smirnov functions and ``voigt_profile`` (``_ks_family.py``, ``_voigt.py``)."""
    from jext_scipy_special._functions import _ks_family as ks
    from jext_scipy_special._functions import _voigt as vo

    def u(lo: float, hi: float) -> np.ndarray:
        return rng.uniform(lo, hi, N)

    def logu(lo: float, hi: float) -> np.ndarray:
        return np.exp(rng.uniform(np.log(lo), np.log(hi), N))

    def with_int_n(fn: Callable[..., Any]) -> Callable[..., Any]:
        return lambda n, *args: fn(n.astype(np.int64), *args)

    ns = np.floor(u(1.0, 20.0))  # SciPy's own sum takes ~5 us per element at n ~ 10
    return {
        "kolmogorov": (ks.kolmogorov, sc.kolmogorov, (logu(0.02, 20.0),)),
        "kolmogi": (ks.kolmogi, sc.kolmogi, (u(0.0, 1.0),)),
        "smirnov": (ks.smirnov, with_int_n(sc.smirnov), (ns, u(0.0, 1.0))),
        "smirnovi": (ks.smirnovi, with_int_n(sc.smirnovi), (ns, u(0.0, 1.0))),
        "voigt_profile": (
            vo.voigt_profile,
            sc.voigt_profile,
            (u(-10.0, 10.0), u(0.1, 5.0), u(0.1, 5.0)),
        ),
    }


def _struve_inputs(rng: np.random.Generator) -> dict[str, Case]:
    """``struve`` and ``modstruve`` (``_struve.py``) on the first declared domain."""
    from jext_scipy_special._functions import _struve

    v, x = rng.uniform(-10.0, 20.0, N), rng.uniform(1e-3, 60.0, N)
    return {
        "struve": (_struve.struve, sc.struve, (v, x)),
        "modstruve": (_struve.modstruve, sc.modstruve, (v, x)),
    }


def _stats_continuous_inputs(rng: np.random.Generator) -> dict[str, Case]:
    """``scipy.stats`` ``t, f, beta, chi2, gamma`` methods (``_beta_family.py``, ``_stats.py``)."""
    import scipy.stats as st
    from jext_scipy_special._functions import _beta_family as bt
    from jext_scipy_special._functions import _stats as gs

    def u(lo: float, hi: float) -> np.ndarray:
        return rng.uniform(lo, hi, N)

    def logu(lo: float, hi: float) -> np.ndarray:
        return np.exp(rng.uniform(np.log(lo), np.log(hi), N))

    cases: dict[str, Case] = {}
    for dist, method, ours, args in (
        ("t", "cdf", bt.t_cdf, (u(-20.0, 20.0), logu(0.5, 100.0))),
        ("t", "sf", bt.t_sf, (u(-20.0, 20.0), logu(0.5, 100.0))),
        ("t", "ppf", bt.t_ppf, (u(0.001, 0.999), logu(0.5, 100.0))),
        ("t", "isf", bt.t_isf, (u(0.001, 0.999), logu(0.5, 100.0))),
        ("f", "cdf", bt.f_cdf, (u(0.0, 30.0), logu(0.5, 100.0), logu(0.5, 100.0))),
        ("f", "sf", bt.f_sf, (u(0.0, 30.0), logu(0.5, 100.0), logu(0.5, 100.0))),
        ("f", "ppf", bt.f_ppf, (u(0.001, 0.999), logu(0.5, 100.0), logu(0.5, 100.0))),
        ("f", "isf", bt.f_isf, (u(0.001, 0.999), logu(0.5, 100.0), logu(0.5, 100.0))),
        ("beta", "ppf", bt.beta_ppf, (u(0.001, 0.999), logu(0.2, 50.0), logu(0.2, 50.0))),
        ("beta", "isf", bt.beta_isf, (u(0.001, 0.999), logu(0.2, 50.0), logu(0.2, 50.0))),
        ("chi2", "ppf", gs.chi2_ppf, (u(0.001, 0.999), logu(0.1, 500.0))),
        ("chi2", "isf", gs.chi2_isf, (u(0.001, 0.999), logu(0.1, 500.0))),
        ("gamma", "ppf", gs.gamma_ppf, (u(0.001, 0.999), logu(0.1, 100.0))),
        ("gamma", "isf", gs.gamma_isf, (u(0.001, 0.999), logu(0.1, 100.0))),
    ):
        cases[f"{dist}.{method}"] = (ours, getattr(getattr(st, dist), method), args)
    return cases


def _beta_replacement_inputs(rng: np.random.Generator) -> dict[str, Case]:
    """``betainc`` and ``scipy.stats.beta`` ``cdf, sf, logcdf, logsf``, which replace
    ``jax.scipy``'s (drawn last, so that the rows above keep their inputs)."""
    import scipy.stats as st
    from jext_scipy_special._functions import _beta_family as bt

    def u(lo: float, hi: float) -> np.ndarray:
        return rng.uniform(lo, hi, N)

    def logu(lo: float, hi: float) -> np.ndarray:
        return np.exp(rng.uniform(np.log(lo), np.log(hi), N))

    cases: dict[str, Case] = {
        "betainc": (bt.betainc, sc.betainc, (logu(0.1, 1e3), logu(0.1, 1e3), u(0.0, 1.0))),
    }
    shapes = (logu(0.2, 50.0), logu(0.2, 50.0))
    x = u(0.0, 1.0)
    for method in ("cdf", "sf", "logcdf", "logsf"):
        ours = getattr(bt, f"beta_{method}")
        cases[f"beta.{method}"] = (ours, getattr(st.beta, method), (x, *shapes))
    return cases


def all_cases(rng: np.random.Generator) -> dict[str, Case]:
    """Every row, in print order (drawn in one fixed order, so a row's inputs do not
    depend on which rows are selected)."""
    cases = _inputs(rng) | _family_inputs(rng) | _special_families_inputs(rng)
    cases |= _poly_misc_inputs(rng) | _bessel_jy_inputs(rng) | _beta_family_inputs(rng)
    cases |= _discrete_inputs(rng)
    cases |= _ks_voigt_inputs(rng) | _struve_inputs(rng)
    cases |= _stats_continuous_inputs(rng)
    cases |= _beta_replacement_inputs(rng)
    return cases


def wrapper_key(row: str) -> tuple[str, str]:
    """The registered wrapper ``(scope, name)`` a row times: ``"eval_jacobi real"`` is
    ``special.eval_jacobi``, ``"binom.cdf"`` is ``stats.binom.cdf``."""
    name = row.split(maxsplit=1)[0]
    return ("stats" if "." in name else "special", name)


def _default_reps(name: str) -> int:
    # The iterative inverses take seconds per call on 1e6 values: fewer repeats.
    slow = (
        "gammaincinv",
        "gammainccinv",
        "chdtri",
        "pdtri",
        "betaincinv",
        "betainccinv",
        "bdtri",
        "fdtri",
        "stdtrit",
        "smirnov",
        "smirnovi",
        "struve",
        "modstruve",
    )
    if name in slow or name.endswith(("ppf", "isf")):
        return 3
    if name in ("gdtr", "gdtrc", "chdtr", "chdtrc", "pdtr", "pdtrc"):
        return 5
    return 7


Row = tuple[str, int, float, float, float]  # name, n, jax median, scipy median, ratio


def _machine() -> str:
    """CPU model, cores, jax/scipy versions and the date, for the figures' heading."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next(
                (ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), model
            )
    except OSError:
        pass
    return (
        f"{model}, {os.cpu_count()} cores; jax {jax.__version__} ({jax.default_backend()}), "
        f"scipy {scipy.__version__}, numpy {np.__version__}, python {platform.python_version()}; "
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC"
    )


def _load() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def markdown(machine: str, load_start: str, load_end: str, rows: list[Row], reps: str) -> str:
    """The results as the table of bench/results/scipy-throughput.md (paste it over the old one)."""
    short = [r for r in rows if r[4] < 1.0]
    lines = [
        f"Machine: {machine}.",
        f"Load average (1/5/15 min) at start {load_start}, at end {load_end}.",
        f"{N:,} float64 values per row; medians of {reps} alternating calls each.",
        f"{len(rows) - len(short)} of {len(rows)} rows >= 1.0x SciPy; short: "
        + (", ".join(r[0] for r in short) or "none")
        + ".",
        "",
        "| function | n | jext median (ms) | SciPy median (ms) | SciPy/jext | status |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for name, n, t_jax, t_sp, ratio in rows:
        status = ">= 1.0" if ratio >= 1.0 else "short"
        lines.append(
            f"| `{name}` | {n:,} | {t_jax * 1e3:.1f} | {t_sp * 1e3:.1f} | {ratio:.2f} | {status} |"
        )
    return "\n".join(lines) + "\n"


def _bench(
    jax_fn: Callable[..., Any], sp_fn: Callable[..., Any], args: tuple[np.ndarray, ...], reps: int
) -> tuple[float, float]:
    jitted = jax.jit(jax_fn)
    dev_args = [jnp.asarray(a) for a in args]
    jitted(*dev_args).block_until_ready()  # compile
    jitted(*dev_args).block_until_ready()  # warm up
    sp_fn(*args)
    t_jax: list[float] = []
    t_sp: list[float] = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jitted(*dev_args).block_until_ready()
        t_jax.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        sp_fn(*args)
        t_sp.append(time.perf_counter() - t0)
    return statistics.median(t_sp), statistics.median(t_jax)


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="only these rows (first word of the row name)")
    parser.add_argument(
        "--repeat",
        type=int,
        default=None,
        metavar="N",
        help="alternating timed calls per row (median of N); default 3, 5 or 7 by row cost",
    )
    parser.add_argument(
        "--markdown",
        metavar="FILE",
        default=None,
        help="also write the results as the markdown table of bench/results/scipy-throughput.md",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="4 values, the first row (or NAMES), one timed call each: a test, no figures",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    global N  # --smoke shrinks the inputs of every row
    if args.smoke:
        N, args.repeat = 4, args.repeat or 1
    load_start = _load()
    machine = _machine()
    rng = np.random.default_rng(20240601)
    print(machine)
    print(f"load average at start {load_start}; N = {N:,} float64")
    print(f"{'function':<16}{'scipy median':>14}{'jax median':>14}{'scipy/jax':>11}  goal >= 1.0")
    only = set(args.names)
    cases = all_cases(rng)
    if args.smoke and not only:
        only = {next(iter(cases)).split(maxsplit=1)[0]}
    unknown = only - {name.split(maxsplit=1)[0] for name in cases}
    if unknown:
        print(f"no such row: {', '.join(sorted(unknown))} (names as this bench prints them)")
        return 2
    rows: list[Row] = []
    for name, (jax_fn, sp_fn, fn_args) in cases.items():
        if only and name.split(maxsplit=1)[0] not in only:
            continue
        reps = args.repeat or _default_reps(name)
        t_sp, t_jax = _bench(jax_fn, sp_fn, fn_args, reps=reps)
        ratio = t_sp / t_jax
        rows.append((name, len(fn_args[0]), t_jax, t_sp, ratio))
        verdict = "GOAL MET" if ratio >= 1.0 else "GOAL MISSED"
        print(f"{name:<16}{t_sp * 1e3:>11.1f} ms{t_jax * 1e3:>11.1f} ms{ratio:>10.2f}x  {verdict}")
    load_end = _load()
    print(f"{sum(r[4] < 1.0 for r in rows)} goal(s) missed; load average at end {load_end}")
    if args.markdown:
        reps_text = str(args.repeat) if args.repeat else "3-7 (by row cost)"
        with open(args.markdown, "w") as f:
            f.write(markdown(machine, load_start, load_end, rows, reps_text))
        print(f"markdown table written to {args.markdown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

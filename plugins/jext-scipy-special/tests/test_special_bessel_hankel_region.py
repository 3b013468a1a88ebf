"""Hankel's large-argument expansion in ``kv, kve, iv, ive, jv, yv, jve, yve`` and the
Hankel functions, held to mpmath on both sides of its switch-over.

The expansion (``_bessel.hankel_sums``) takes over from the continued fractions where
``x >= 25`` and ``(|v| + 1)^2 <= 4 x`` (float32: ``x >= 12``); the points straddle both
bounds (``x`` one rounding below and at 25 or 12, ``|v|`` just inside and just outside
``2 sqrt(x) - 1``) and go beyond them, negative orders (the reflections) included.  One
jitted program per dtype evaluates every function (compile time dominates this test).
The float32 run has x64 enabled, as users mixing dtypes do.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
from _special_cases import x64
from jext_scipy_special._functions import _bessel_family as i_family
from jext_scipy_special._functions import _bessel_jy_family as jy_family
from jext_scipy_special._functions._bessel import kv, kve


def _edge(x: float) -> float:
    return 2.0 * math.sqrt(x) - 1.0


def _points(x0: float, below: float, far: float) -> tuple[np.ndarray, np.ndarray]:
    """A dozen ``(v, x)`` about the switch at ``x0``, ``below`` = ``x0`` rounded down,
    up to ``far`` times ``x0``."""
    x = [below, x0, x0, x0, below, 2 * x0, 2 * x0, 4 * x0, far * x0, far * x0, x0 + 0.5, 4 * x0]
    lim = [_edge(t) for t in x]
    v = [
        0.3, 0.3, lim[2] * (1 - 1e-6), lim[3] * (1 + 1e-6), -lim[4] * (1 - 1e-6),
        lim[5] * (1 - 1e-6), -lim[6] * (1 + 1e-6), -2.7, lim[8] * (1 - 1e-6), 1.5,
        -lim[10] * (1 - 1e-6), -0.5 * lim[11],
    ]  # fmt: skip
    return np.array(v), np.array(x)


def _exp(z: Any) -> Any:
    return mpmath.exp(z)


#: name -> (function, mpmath reference at (v, x), kind): "pos" for a positive real result
#: (relative error), "osc" for an oscillating real one (error against the amplitude
#: sqrt(2 / (pi x)) near its zeros), "cplx" for a complex one (against its modulus).
_J = mpmath.besselj
_Y = mpmath.bessely
CASES: dict[str, tuple[Callable[..., jax.Array], Callable[[Any, Any], Any], str]] = {
    "kv": (kv, mpmath.besselk, "pos"),
    "kve": (kve, lambda v, x: mpmath.besselk(v, x) * _exp(x), "pos"),
    "iv": (i_family.iv, mpmath.besseli, "pos"),
    "ive": (i_family.ive, lambda v, x: mpmath.besseli(v, x) * _exp(-x), "pos"),
    "jv": (jy_family.jv, _J, "osc"),
    "yv": (jy_family.yv, _Y, "osc"),
    "jve": (jy_family.jve, _J, "osc"),
    "yve": (jy_family.yve, _Y, "osc"),
    "hankel1": (jy_family.hankel1, lambda v, x: _J(v, x) + 1j * _Y(v, x), "cplx"),
    "hankel2": (jy_family.hankel2, lambda v, x: _J(v, x) - 1j * _Y(v, x), "cplx"),
    "hankel1e": (
        jy_family.hankel1e,
        lambda v, x: (_J(v, x) + 1j * _Y(v, x)) * _exp(-1j * x),
        "cplx",
    ),
    "hankel2e": (
        jy_family.hankel2e,
        lambda v, x: (_J(v, x) - 1j * _Y(v, x)) * _exp(1j * x),
        "cplx",
    ),
}


def _errors(v: np.ndarray, x: np.ndarray, outs: dict[str, np.ndarray]) -> dict[str, float]:
    worst = {}
    with mpmath.workdps(30):
        for name, values in outs.items():
            ref, kind = CASES[name][1:]
            errs = []
            for vi, xi, got in zip(v.tolist(), x.tolist(), values.tolist(), strict=True):
                want = ref(mpmath.mpf(vi), mpmath.mpf(xi))
                scale = abs(want)
                if kind == "osc":
                    scale = max(scale, math.sqrt(2.0 / (math.pi * xi)) * 1e-2)
                errs.append(float(abs(got - want) / scale))
            worst[name] = max(errs)
    return worst


def _run(names: tuple[str, ...], v: np.ndarray, x: np.ndarray, dtype: Any) -> dict[str, np.ndarray]:
    def program(v: jax.Array, x: jax.Array) -> dict[str, jax.Array]:
        return {name: CASES[name][0](v, x) for name in names}

    out = jax.jit(program)(jnp.asarray(v, dtype), jnp.asarray(x, dtype))
    for name in names:
        assert out[name].dtype == jnp.result_type(
            dtype, complex if CASES[name][2] == "cplx" else dtype
        )
    return {name: np.asarray(val).astype(complex) for name, val in out.items()}


#: For real ``x``, ``jve = jv``, ``yve = yv`` and ``hankel2 = conj(hankel1)``, ``hankel1e =
#: hankel1 e^{-ix}`` (one kernel, then a phase): one of each pair is run, to keep the
#: compile time of this test down (``jext check`` runs every wrapper).
_F64 = ("kv", "kve", "iv", "ive", "jv", "yv", "hankel1", "hankel2e")


def test_float64_values_about_the_switch_hold_to_mpmath() -> None:
    v, x = _points(25.0, float(np.nextafter(25.0, 0.0)), 16.0)
    with x64(True):
        outs = _run(_F64, v, x, jnp.float64)
    worst = _errors(v, x, outs)
    assert all(e <= 1e-13 for e in worst.values()), worst


def test_float32_values_at_the_switch_hold_to_mpmath() -> None:
    """The three kernels (``kv``, ``iv`` and ``jv``/``yv`` share theirs with the scaled
    and Hankel forms), ``x`` up to 72 (no float32 overflow or underflow)."""
    v, x = _points(12.0, float(np.nextafter(np.float32(12.0), np.float32(0.0))), 6.0)
    v, x = v.astype(np.float32), x.astype(np.float32)
    with x64(True):  # float32 arrays with x64 on: no float64 constant may leak in
        outs = _run(("kve", "ive", "jv", "yv"), v, x, jnp.float32)
    worst = _errors(v.astype(float), x.astype(float), outs)
    assert all(e <= 5e-6 for e in worst.values()), worst

"""``jax.scipy``'s own functions described for the SciPy checks (``jext check --scipy-audit``).

Each entry says where the function is sampled and how closely it should follow SciPy, the
same way a plugin describes its wrappers; the audit reports where JAX disagrees.
"""

from __future__ import annotations

from typing import Any

import jax.scipy.special as jsp

from jext.scipy._wrapper import Domain, ScipyWrapper

__all__ = ["audited"]

# Relative error with an absolute floor near zeros, where relative error is ill-conditioned.
_TOL = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-14)}

# name: (jax function, domains, differentiable arguments)
_SPECIAL: dict[str, tuple[Any, tuple[Domain, ...], tuple[int, ...]]] = {
    "erf": (jsp.erf, (Domain(((-5.0, 5.0),)),), (0,)),
    "erfc": (jsp.erfc, (Domain(((-5.0, 25.0),)),), (0,)),
    "erfinv": (jsp.erfinv, (Domain(((-0.999, 0.999),)),), (0,)),
    "ndtr": (jsp.ndtr, (Domain(((-30.0, 8.0),)),), (0,)),
    "ndtri": (jsp.ndtri, (Domain(((1e-10, 1.0 - 1e-10),)),), (0,)),
    "log_ndtr": (jsp.log_ndtr, (Domain(((-30.0, 8.0),)),), (0,)),
    "expit": (jsp.expit, (Domain(((-40.0, 40.0),)),), (0,)),
    "logit": (jsp.logit, (Domain(((1e-6, 1.0 - 1e-6),)),), (0,)),
    "gammaln": (jsp.gammaln, (Domain(((1e-3, 1e3),), log=True),), (0,)),
    "digamma": (jsp.digamma, (Domain(((1e-2, 1e3),), log=True),), (0,)),
    "i0e": (jsp.i0e, (Domain(((-50.0, 50.0),)),), (0,)),
    "i1e": (jsp.i1e, (Domain(((-50.0, 50.0),)),), (0,)),
    "gammainc": (jsp.gammainc, (Domain(((0.1, 20.0), (0.01, 30.0)), log=True),), (1,)),
    "gammaincc": (jsp.gammaincc, (Domain(((0.1, 20.0), (0.01, 30.0)), log=True),), (1,)),
    "betainc": (
        jsp.betainc,
        (Domain(((0.2, 10.0), (0.2, 10.0), (0.01, 0.99))),),
        (2,),
    ),
    "xlogy": (jsp.xlogy, (Domain(((0.0, 5.0), (0.01, 5.0))),), (0, 1)),
    "xlog1py": (jsp.xlog1py, (Domain(((0.0, 5.0), (-0.9, 5.0))),), (0, 1)),
    "entr": (jsp.entr, (Domain(((1e-3, 5.0),)),), (0,)),
    "zeta": (jsp.zeta, (Domain(((1.1, 10.0), (0.5, 5.0))),), ()),
    "spence": (jsp.spence, (Domain(((0.0, 5.0),)),), (0,)),
    "expi": (jsp.expi, (Domain(((0.1, 20.0),)),), (0,)),
    "exp1": (jsp.exp1, (Domain(((0.1, 20.0),)),), (0,)),
    "gamma": (jsp.gamma, (Domain(((0.05, 20.0),)),), (0,)),
    "betaln": (jsp.betaln, (Domain(((0.1, 50.0), (0.1, 50.0)), log=True),), (0, 1)),
}


def audited() -> list[ScipyWrapper]:
    """The audited ``jax.scipy`` functions, as wrappers of themselves."""
    return [
        ScipyWrapper(
            scope="special",
            name=name,
            mirrors=f"scipy.special.{name}",
            function=fn,
            domains=domains,
            differentiable=diff,
            tolerances=_TOL,
            description=f"jax.scipy.special.{name}",
        )
        for name, (fn, domains, diff) in _SPECIAL.items()
    ]

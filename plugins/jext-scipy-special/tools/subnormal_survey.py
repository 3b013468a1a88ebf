"""Which installed SciPy wrappers differ from SciPy at subnormal arguments, and by how much.

XLA:CPU reads a subnormal operand as 0 (docs/scipy-special-families.md, "Subnormal
numbers").  For every wrapper, domain and float argument, the argument is set to each
value of ``POSITIVE`` (``NEGATIVE`` with ``--negative``) with the other arguments at the
domain's middle (geometric middle for a log domain) and at a quarter of its width; the
results are compared with the wrapper's oracle (SciPy, called in float64 on the rounded
arguments, as ``jext check`` does).  A difference is a nan/inf disagreement or a relative
error beyond the wrapper's ``rtol``; a SciPy result below the normal range that comes
back as 0 is a flush (listed apart, not a difference).

Run ``python plugins/jext-scipy-special/tools/subnormal_survey.py [NAME-OR-GLOB ...]
[--negative]``: one line per differing (wrapper, dtype, argument) with the worst point.
"""

from __future__ import annotations

import fnmatch
import sys
import warnings
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from jext._registry import registry
from jext.testing._scipy_checks import oracle_of

POSITIVE = {
    "float64": (5e-324, 1e-320, 1e-310, 2.2e-308),
    "float32": (1e-45, 1e-40, 1.1e-38),
}
NEGATIVE = {d: tuple(-v for v in vs) for d, vs in POSITIVE.items()}


def _others(
    bounds: Sequence[tuple[float, float]], log: bool, integers: Sequence[int]
) -> list[list[float]]:
    """Two settings of the arguments: the middle of the box and a quarter of its width."""
    out = []
    for frac in (0.5, 0.25):
        row = []
        for i, (low, high) in enumerate(bounds):
            lo, hi = max(low, -1e6), min(high, 1e6)
            if log and lo > 0:
                v = float(np.exp(np.log(lo) + frac * (np.log(hi) - np.log(lo))))
            else:
                v = lo + frac * (hi - lo)
            row.append(float(np.round(v)) if i in integers else v)
        out.append(row)
    return out


def _as_array(result: Any) -> np.ndarray:
    if isinstance(result, tuple | list):
        return np.stack([np.asarray(r) for r in result])
    return np.asarray(result)


def _oracle_values(oracle: Any, cols: Sequence[np.ndarray], kwargs: Any) -> np.ndarray:
    """The oracle on the float64 columns; point by point (nan where it raises) if the
    batch raises (Boost's beta.ppf overflows at a subnormal scale)."""
    wide = [c.astype(np.float64) for c in cols]
    try:
        return _as_array(oracle(*wide, **kwargs))
    except (ArithmeticError, ValueError):
        out = []
        for point in zip(*wide, strict=True):
            try:
                out.append(_as_array(oracle(*point, **kwargs)))
            except (ArithmeticError, ValueError):
                out.append(np.asarray(np.nan))
        return np.stack(out, axis=-1)


def survey(wrapper: Any, values: dict[str, tuple[float, ...]]) -> list[dict[str, Any]]:
    """The worst difference per (dtype, argument) of one wrapper (empty when none)."""
    oracle = oracle_of(wrapper)
    rows: list[dict[str, Any]] = []
    for domain in wrapper.domains:
        nargs = len(domain.bounds)
        for dtype in wrapper.dtypes:
            rtol = wrapper.tolerances[dtype][0]
            points: list[list[float]] = []
            tags: list[int] = []
            for i in range(nargs):
                if i in domain.integers:
                    continue
                for base in _others(domain.bounds, domain.log, domain.integers):
                    for v in values[dtype]:
                        p = list(base)
                        p[i] = v
                        points.append(p)
                        tags.append(i)
            if not points:
                continue
            cols = [np.array([p[i] for p in points], dtype) for i in range(nargs)]
            with jax.enable_x64(dtype == "float64"):
                got = _as_array(wrapper.public(*cols, **domain.kwargs))
            # Complex results (hankel1) by the modulus of the difference, as jext check.
            kind = np.complex128 if np.iscomplexobj(got) else np.float64
            got = got.astype(kind)
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                want = _oracle_values(oracle, cols, domain.kwargs)
                wdtype = np.result_type(dtype, np.complex64) if np.iscomplexobj(want) else dtype
                want = want.astype(wdtype).astype(kind)
            got, want = np.broadcast_arrays(got, want)
            tiny = float(np.finfo(dtype).tiny)
            with np.errstate(all="ignore"):
                same = (np.isnan(got) & np.isnan(want)) | (got == want)
                rel = np.where(same, 0.0, np.abs(got - want) / np.abs(want))
                rel = np.where(np.isnan(rel), np.inf, rel)
                flushed = (np.abs(want) < tiny) & (got == 0) & (rel > rtol)
            # Multi-result functions (ellipj): the worst result of each point; a point is
            # flushed when its only differences are flushes.
            rel = np.where(flushed, 0.0, rel).reshape(-1, len(points)).max(axis=0)
            flushed = flushed.reshape(-1, len(points)).any(axis=0) & (rel <= rtol)
            gotp = got.reshape(-1, len(points))[0]
            wantp = want.reshape(-1, len(points))[0]
            for i in sorted(set(tags)):
                sel = np.array(tags) == i
                bad = sel & (rel > rtol)
                nflush = int(np.sum(sel & flushed))
                if not bad.any() and not nflush:
                    continue
                worst = int(np.argmax(np.where(bad, rel, -1.0))) if bad.any() else None
                rows.append(
                    {
                        "name": wrapper.name,
                        "dtype": dtype,
                        "arg": i,
                        "kwargs": dict(domain.kwargs),
                        "low": domain.bounds[i][0],
                        "bad": int(bad.sum()),
                        "of": int(sel.sum()),
                        "flushed": nflush,
                        "worst": None
                        if worst is None
                        else (points[worst], float(gotp[worst]), float(wantp[worst]), rel[worst]),
                    }
                )
    return rows


def main(argv: Sequence[str]) -> None:
    negative = "--negative" in argv
    patterns = [a for a in argv if not a.startswith("--")] or ["*"]
    values = NEGATIVE if negative else POSITIVE
    wrappers = [
        owned[0].item
        for (scope, name), owned in registry().scipy_wrappers().items()
        if scope in ("special", "stats") and any(fnmatch.fnmatch(name, p) for p in patterns)
    ]
    differing: set[str] = set()
    for wrapper in wrappers:
        for row in survey(wrapper, values):
            worst = row["worst"]
            kw = f" {row['kwargs']}" if row["kwargs"] else ""
            where = f"domain from {row['low']:g}"
            if worst is None:
                print(
                    f"{row['name']}{kw} {row['dtype']} arg {row['arg']}: "
                    f"{row['flushed']} flushed results only"
                )
                continue
            differing.add(row["name"])
            args, got, want, rel = worst
            print(
                f"{row['name']}{kw} {row['dtype']} arg {row['arg']} ({where}): "
                f"{row['bad']}/{row['of']} differ, flushed {row['flushed']}; worst at "
                f"{args}: got {got:.6g}, SciPy {want:.6g}, rel {rel:.2g}",
                flush=True,
            )
    print(f"{len(differing)} of {len(wrappers)} wrappers differ: {' '.join(sorted(differing))}")


if __name__ == "__main__":
    main(sys.argv[1:])

"""Running checks: one primitive as an assertion, or everything registered as reports."""

from __future__ import annotations

import difflib
import fnmatch
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

from jext._errors import UnknownNameError
from jext._registry import Owned, PluginInfo, Registry, close_matches, registry
from jext.lowering import ALL_PLATFORMS
from jext.primitives import Primitive
from jext.rng_impls._impl import RngImpl
from jext.scipy._wrapper import ScipyWrapper
from jext.testing._checks import (
    PRIMITIVE_CHECKS,
    SELECTABLE_CHECKS,
    check_report,
    submit_report,
)
from jext.testing._report import CheckResult, PrimitiveReport
from jext.testing._rng_checks import RNG_CHECKS, submit_rng_report
from jext.testing._scipy_checks import SCIPY_CHECKS, scipy_report, start_session
from jext.testing._sharding_check import SHARDING_CHECK, start_sharding_session

#: The checks of each kind of registered item, in the order they run.
KIND_CHECKS: dict[str, tuple[str, ...]] = {
    "primitive": PRIMITIVE_CHECKS,
    "rng": RNG_CHECKS,
    "scipy": SCIPY_CHECKS,
    "scipy-audit": SCIPY_CHECKS,
}

__all__ = [
    "KIND_CHECKS",
    "check_primitive",
    "run_checks",
    "select",
    "suggest",
    "validate_names",
]


def validate_names(given: Sequence[str] | None, known: Sequence[str], what: str) -> list[str]:
    """``given`` (default: all of ``known``), or UnknownNameError naming the first unknown.

    An empty ``given`` selects nothing, which would pass every check vacuously: ValueError.
    """
    if given is None:
        return list(known)
    if not given:
        raise ValueError(f"an empty list of {what}s selects nothing; omit it to mean all")
    for name in given:
        if name not in known:
            hint = close_matches(name, known)
            raise UnknownNameError(f"unknown {what} {name!r}; expected one of {list(known)}.{hint}")
    return list(given)


def check_primitive(
    prim: Primitive[..., Any] | str,
    *,
    checks: Sequence[str] | None = None,
    platforms: Sequence[str] | None = None,
) -> PrimitiveReport:
    """Run the conformance checks on ``prim`` (an object or a registered name).

    Raises ``AssertionError`` with a readable report if any check fails; returns the
    report otherwise (a check that did not run says why: ``skip``, ``n/a``, or
    ``unchecked`` when the primitive declares no examples).

    Example:

    >>> import jax, numpy as np, jext, jext.testing
    >>> @jext.primitive("mylib.square")
    ... def square(x: jax.Array, /) -> jax.Array:
    ...     return x * x
    >>> @square.def_examples
    ... def _examples():
    ...     yield jext.Example(np.linspace(-1.0, 1.0, 5, dtype=np.float32))
    >>> jext.testing.check_primitive(square, checks=["jvp", "batching"]).ok
    True
    """
    if isinstance(prim, str):
        prim = registry().get_primitive(prim)
    report = check_report(
        prim,
        checks=(
            PRIMITIVE_CHECKS
            if checks is None
            else validate_names(checks, SELECTABLE_CHECKS, "check")
        ),
        platforms=validate_names(platforms, ALL_PLATFORMS, "platform"),
    )
    if not report.ok:
        raise AssertionError("jext conformance check failed:\n" + report.format())
    return report


def run_checks(
    names: Sequence[str] | None = None,
    *,
    checks: Sequence[str] | None = None,
    platforms: Sequence[str] | None = None,
    plugins: Sequence[str] | None = None,
    progress: Callable[[str, CheckResult], None] | None = None,
    scipy_audit: bool = False,
    reg: Registry | None = None,
    plan: Callable[[Sequence[tuple[str, Sequence[str]]]], None] | None = None,
) -> list[PrimitiveReport]:
    """Check what is registered (all, or ``names``): primitives, RNG impls, SciPy wrappers.

    ``names`` are exact names or shell-style globs (``"mylib.*"``); ``plugins`` keeps only
    the items of the named plugins.  A name or glob that selects nothing, or an unknown
    plugin, raises :class:`jext.UnknownNameError` suggesting near names of every kind and
    naming any plugin that failed to load.  A broken plugin is always a failed report of
    kind ``plugin``, whatever the selection: a name it would have provided is missing.
    ``checks`` may mix the checks of every kind; each item runs the ones that apply to it.
    With ``scipy_audit=True``, ``jax.scipy``'s own functions are held to SciPy instead.

    ``progress(name, result)`` is called for each check as it finishes, in order; ``plan``
    once before, with each item's name and checks in the order ``progress`` will see them
    (an item whose examples fail to build reports one failed ``examples`` check instead).
    """
    reg = reg or registry()
    everything = list(dict.fromkeys(c for cs in KIND_CHECKS.values() for c in cs))
    # The sharding check runs only when named (a subprocess on 8 host devices).
    chosen = (
        everything
        if checks is None
        else validate_names(checks, [*everything, SHARDING_CHECK], "check")
    )
    platforms = validate_names(platforms, ALL_PLATFORMS, "platform")
    if scipy_audit:
        from jext.scipy._audit import audited  # noqa: PLC0415 - jext.scipy imports the registry (loads only for an audit)

        scipy_checks = [c for c in chosen if c in SCIPY_CHECKS]
        chosen_audited = [
            w
            for w in audited()
            if not names
            or any(
                _matches(names, n)
                for n in (w.name, w.qualified_name, f"jax.scipy.{w.scope}.{w.name}")
            )
        ]
        if plan is not None:
            plan([(f"jax.scipy.{w.scope}.{w.name}", scipy_checks) for w in chosen_audited])
        return [
            scipy_report(w, checks=scipy_checks, kind="scipy-audit", progress=progress)
            for w in chosen_audited
        ]
    owners = reg.primitive_owners()
    rngs = reg.rng_impls()
    wrappers = {
        f"jext.scipy.{scope}.{name}": owned
        for (scope, name), owners_ in reg.scipy_wrappers().items()
        for owned in owners_
    }
    catalog = {
        **owners,
        **{n: o.plugin for n, o in rngs.items()},
        **{n: o.plugin for n, o in wrappers.items()},
    }
    wanted = select(names, plugins, catalog, reg.plugins())
    reports: list[PrimitiveReport] = [
        PrimitiveReport(
            p.name, "plugin", (CheckResult("load", "fail", p.error or "failed"),), p.name
        )
        for p in reg.plugins()
        if p.status == "error"
    ]
    if plan is not None:
        plan(_plan(owners, rngs, wrappers, wanted, chosen))
    with ThreadPoolExecutor(max_workers=_workers(), thread_name_prefix="jext-check") as pool:
        # Checks are independent and their time is mostly XLA compilation, which runs
        # without the GIL: every check of a primitive or RNG impl is a task on the pool,
        # and the SciPy wrappers' shared programs compile there too.  Reports are made
        # here, in order, as they wait on their tasks (a pool task waiting on the pool
        # could deadlock).  Reports keep the order of the registry.
        pending = _submit_primitives_and_rngs(pool, reg, owners, rngs, wanted, chosen, platforms)
        scipy_checks = [c for c in chosen if c in SCIPY_CHECKS]
        sessions = {
            name: start_session(owned.item, pool)
            for name, owned in wrappers.items()
            if name in wanted and scipy_checks
        }
        reports += [finish(progress) for finish in pending]
        for name, session in sessions.items():
            owned = wrappers[name]
            reports.append(
                scipy_report(
                    owned.item,
                    checks=scipy_checks,
                    plugin=owned.plugin,
                    progress=progress,
                    session=session,
                )
            )
    return reports


def _plan(
    owners: Mapping[str, str],
    rngs: Mapping[str, Owned[RngImpl]],
    wrappers: Mapping[str, Owned[ScipyWrapper]],
    wanted: set[str],
    chosen: Sequence[str],
) -> list[tuple[str, Sequence[str]]]:
    """The items and checks ``run_checks`` reports, in its order (see
    ``_submit_primitives_and_rngs``, then the SciPy wrappers)."""
    prim_checks = [c for c in chosen if c in SELECTABLE_CHECKS]
    rng_checks = [c for c in chosen if c in RNG_CHECKS]
    scipy_checks = [c for c in chosen if c in SCIPY_CHECKS]
    return [
        *((name, prim_checks) for name in owners if name in wanted and prim_checks),
        *((name, rng_checks) for name in rngs if name in wanted and rng_checks),
        *((name, scipy_checks) for name in wrappers if name in wanted and scipy_checks),
    ]


def _workers() -> int:
    # Compilation dominates, and it runs without the GIL.  Twice as many threads as cores:
    # the checks of one example share its programs (_Shared), so a check often waits for
    # a program another thread is compiling, and a waiting thread holds no core.  With
    # as many threads as cores, that wait leaves a core idle (bench-flash on 2 cores:
    # 21.6 s with 2 threads, 14.4 s with 4); past 8, threads only contend for the GIL.
    return max(2, min(8, 2 * (os.cpu_count() or 1)))


def _submit_primitives_and_rngs(
    pool: Executor,
    reg: Registry,
    owners: Mapping[str, str],
    rngs: Mapping[str, Owned[RngImpl]],
    wanted: set[str],
    chosen: Sequence[str],
    platforms: Sequence[str],
) -> list[Callable[[Callable[[str, CheckResult], None] | None], PrimitiveReport]]:
    """Start every check of the wanted primitives and RNG impls on ``pool``, each check its
    own task; the functions returned wait for an item's checks and make its report."""
    pending = []
    prim_checks = [c for c in chosen if c in SELECTABLE_CHECKS]
    if SHARDING_CHECK in prim_checks:  # one subprocess for all, beside the other checks
        start_sharding_session([reg.get_primitive(n) for n in owners if n in wanted])
    for name, plugin in owners.items():
        if name in wanted and prim_checks:
            pending.append(
                submit_report(
                    reg.get_primitive(name),
                    pool,
                    checks=prim_checks,
                    platforms=platforms,
                    plugin=plugin,
                )
            )
    rng_checks = [c for c in chosen if c in RNG_CHECKS]
    for name, owned in rngs.items():
        if name in wanted and rng_checks:
            pending.append(
                submit_rng_report(owned.item, pool, checks=rng_checks, plugin=owned.plugin)
            )
    return pending


def _is_glob(name: str) -> bool:
    return any(c in name for c in "*?[")


def _matches(patterns: Sequence[str], name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, p) if _is_glob(p) else name == p for p in patterns)


def select(
    names: Sequence[str] | None,
    plugins: Sequence[str] | None,
    catalog: Mapping[str, str],
    plugin_infos: Sequence[PluginInfo],
) -> set[str]:
    """The names of ``catalog`` (name -> plugin) that ``names`` and ``plugins`` select.

    Raises :class:`jext.UnknownNameError` for a name, glob or plugin that selects nothing.
    """
    broken = [p for p in plugin_infos if p.status == "error"]
    known_plugins = [p.name for p in plugin_infos]
    # A plugin is named by its entry-point name or by its distribution's.
    by_name = {p.name: p.name for p in plugin_infos}
    by_name.update({p.distribution: p.name for p in plugin_infos if p.distribution})
    for plugin in plugins or ():
        if plugin not in by_name:
            raise UnknownNameError(
                f"no plugin is named {plugin!r}.{close_matches(plugin, by_name)} "
                f"Installed plugins: {known_plugins}. See `jext list`."
            )
    owners = None if plugins is None else {by_name[p] for p in plugins}
    chosen = {n for n, owner in catalog.items() if owners is None or owner in owners}
    if names:
        for name in names:
            if not any(_matches([name], n) for n in chosen):
                raise UnknownNameError(_nothing_named(name, plugins, catalog, broken))
        chosen = {n for n in chosen if _matches(names, n)}
    return chosen


def _nothing_named(
    name: str,
    plugins: Sequence[str] | None,
    catalog: Mapping[str, str],
    broken: Sequence[PluginInfo],
) -> str:
    what = f"matches {name!r}" if _is_glob(name) else f"is named {name!r}"
    where = f" in plugin(s) {list(plugins)}" if plugins else ""
    message = f"nothing registered{where} {what}.{suggest(name, catalog)}"
    # A plugin that failed to import registered nothing: the likeliest reason for a miss.
    likely = [p for p in broken if name.startswith(p.name.replace("-", "_") + ".")]
    for p in likely or broken:
        message += f" Plugin {p.name!r} failed to load ({p.error or 'no reason given'})"
        message += ", so its names are missing." if likely else "; it may provide it."
    return message + " See `jext list`."


def suggest(name: str, known: Iterable[str]) -> str:
    """`` Did you mean ...?`` across every kind: close full names, and names whose last
    dotted part is (close to) ``name``'s (``exprel`` suggests ``jext.scipy.special.exprel``)."""
    known = list(known)
    tail = name.rsplit(".", 1)[-1]
    by_tail: dict[str, list[str]] = {}
    for k in known:
        by_tail.setdefault(k.rsplit(".", 1)[-1], []).append(k)
    near_tails = difflib.get_close_matches(tail, list(by_tail), n=3, cutoff=0.8)
    matches = difflib.get_close_matches(name, known, n=3, cutoff=0.8)
    matches += [k for t in near_tails for k in by_tail[t]]
    unique = list(dict.fromkeys(matches))[:5]
    return f" Did you mean {', '.join(repr(m) for m in unique)}?" if unique else ""

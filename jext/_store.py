"""What the plugins registered: one store of tables, and the commits that fill it.

A hook's registrar stages what one plugin registers; a commit checks all of it (names in
the plugin's namespaces, no clash with another plugin) and takes it, or refuses it all
with the cause.  A load that does not finish is rolled back by swapping the store for
its copy from before.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, cast

from jext import _host, _jax, hookspecs
from jext._discovery import (
    CORE_NAMESPACE,
    NAMESPACE_GROUP,
    Plugin,
    ffi_name_in,
    namespaces_of,
)
from jext._host import Owned
from jext._registrars import FfiTarget, PendingLowering
from jext.primitives._primitive import Primitive

if TYPE_CHECKING:
    from jext.typing import Platform

__all__ = ["ENV_LOWERING_PREFER", "Refused", "Store"]

ENV_LOWERING_PREFER: Final = "JEXT_LOWERING_PREFER"
"""Which plugin's lowering wins a clash: ``<primitive>:<platform>=<plugin>`` (comma-separated;
``<primitive>=<plugin>`` for every platform), e.g. ``example.rms_norm:rocm=example-vendor``."""


def _platforms_of(platform: str | None) -> tuple[str, ...]:
    """The platforms a rule for ``platform`` covers (``"gpu"``: cuda and rocm; None: all)."""
    if platform is None:
        return _jax.PLATFORMS
    return ("cuda", "rocm") if platform == "gpu" else (platform,)


def _lowering_preferences() -> dict[tuple[str, str | None], str]:
    """``JEXT_LOWERING_PREFER`` as {(primitive, platform or None): plugin}."""
    prefs: dict[tuple[str, str | None], str] = {}
    for item in os.environ.get(ENV_LOWERING_PREFER, "").split(","):
        key, eq, plugin = item.partition("=")
        if not eq or not key.strip() or not plugin.strip():
            continue
        name, colon, platform = key.strip().partition(":")
        prefs[(name, platform.strip() if colon else None)] = plugin.strip()
    return prefs


_JEXT_DIR: Final = os.path.dirname(os.path.abspath(hookspecs.__file__)) + os.sep


def _where(err: BaseException) -> str:
    """`` (file:line)`` of the plugin's innermost frame in ``err``'s traceback, or ``""``.

    Frames in jext itself (a registrar refusing an argument) say less than the plugin's
    line that called it.
    """
    frames = traceback.extract_tb(err.__traceback__)
    theirs = [f for f in frames if not os.path.abspath(f.filename).startswith(_JEXT_DIR)]
    chosen = theirs or list(frames)
    return f" ({chosen[-1].filename}:{chosen[-1].lineno})" if chosen else ""


class Refused(Exception):
    """A commit refuses what a plugin staged; ``__cause__`` is the underlying error, if any."""


@dataclass(slots=True)
class Store:
    """Every plugin, who owns which namespace, and what each registered."""

    plugins: dict[str, Plugin] = field(default_factory=dict)
    owners: dict[str, str] = field(default_factory=dict)  # namespace -> plugin
    primitives: dict[str, str] = field(default_factory=dict)  # name -> plugin
    lowerings: list[PendingLowering] = field(default_factory=list)
    applied_lowerings: set[int] = field(default_factory=set)  # indices into lowerings
    # (primitive, platform) -> the vendor whose rule fills it
    vendor_rules: dict[tuple[str, str], str] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)  # plugin -> clashes it is in
    rng_impls: dict[str, Owned[Any]] = field(default_factory=dict)
    scipy: dict[tuple[str, str], list[Owned[Any]]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # every failure, one line each
    causes: list[BaseException | None] = field(default_factory=list)  # behind each problem

    def copy(self) -> Store:
        """A copy to roll back to: each table copied, each plugin record too."""
        return Store(
            plugins={n: p.copy() for n, p in self.plugins.items()},
            owners=dict(self.owners),
            primitives=dict(self.primitives),
            lowerings=list(self.lowerings),
            applied_lowerings=set(self.applied_lowerings),
            vendor_rules=dict(self.vendor_rules),
            notes={k: list(v) for k, v in self.notes.items()},
            rng_impls=dict(self.rng_impls),
            scipy={k: list(v) for k, v in self.scipy.items()},
            problems=list(self.problems),
            causes=list(self.causes),
        )

    def owner_of(self, name: str) -> tuple[str, str] | None:
        """``(namespace, plugin)`` owning ``name``, innermost namespace first; None if none."""
        for ns in namespaces_of(name):
            owner = self.owners.get(ns)
            if owner is not None:
                return ns, owner
        return None

    def check_namespace(self, plugin: Plugin, name: str, what: str) -> str | None:
        owner = self.owner_of(name)
        if owner is not None and owner[1] == plugin.name:
            return None
        mine = list(plugin.owned)
        if owner is None:
            return (
                f"{what} {name!r} is outside its namespaces {mine}, and no plugin owns "
                f"{namespaces_of(name)[-1]!r}: declare the namespace (entry-point group "
                f"{NAMESPACE_GROUP!r}, see docs/plugins.md)"
            )
        ns, other = owner
        return (
            f"{what} {name!r} is in namespace {ns!r}, which belongs to "
            f"{self.owner_label(other)}; {plugin.name!r} may define names only in {mine}"
        )

    def check_ffi_namespace(self, plugin: Plugin, target: str) -> str | None:
        """Why ``target`` is not an FFI target name ``plugin`` may register, or None.

        XLA keeps one table of handler names for the whole process, jaxlib's own
        (``lapack_sgetrf_ffi``, ...) included, and a second handler under a name aborts
        every later compilation: a plugin names its targets in its own namespaces,
        ``<namespace>_<kernel>`` (dots as ``_``) or ``<namespace>.<kernel>``.  jext's core
        plugins own ``jext_*``.
        """
        mine = [*plugin.owned, *([CORE_NAMESPACE] if plugin.core else [])]
        # The innermost namespace decides, as for dotted names: jext_mylib_* belongs to
        # jext_mylib's owner, jext_* to jext's core.
        owners = {**self.owners, **dict.fromkeys(mine, plugin.name)}
        matching = sorted((ns for ns in owners if ffi_name_in(target, ns)), key=len)
        if matching and owners[matching[-1]] == plugin.name:
            return None
        place = (
            f"in namespace {matching[-1]!r}, which belongs to "
            f"{self.owner_label(owners[matching[-1]])}"
            if matching
            else "outside its namespaces"
        )
        return (
            f"FFI target {target!r} is {place}: XLA has one table of handler names for the "
            f"whole process (jaxlib's own included), so {plugin.name!r} names its targets "
            f"'<namespace>_<kernel>' in its namespaces {sorted(mine)}"
        )

    def owner_label(self, plugin: str) -> str:
        entry = self.plugins.get(plugin)
        return entry.label() if entry is not None else f"plugin {plugin!r}"

    def _commit_named(
        self, table: dict[str, Any], plugin: Plugin, staged: list[Any], what: str
    ) -> str | None:
        """Check ``staged`` items by name against ``table``; a clash is the cause."""
        seen: set[str] = set()
        for item in staged:
            cause = self.check_namespace(plugin, item.name, what)
            if cause is not None:
                return cause
            owner = table.get(item.name)
            if owner is not None:
                by = self.owner_label(owner if isinstance(owner, str) else owner.plugin)
                return f"{what} {item.name!r} is already registered by {by}"
            if item.name in seen:
                return f"{what} {item.name!r} registered twice"
            seen.add(item.name)
        return None

    def commit_primitives(self, plugin: Plugin, staged: list[Primitive[..., Any]]) -> str | None:
        cause = self._commit_named(self.primitives, plugin, staged, "primitive")
        if cause is not None:
            return cause
        with _host.DEFINITIONS_LOCK:
            stale = [p.name for p in staged if _host.DEFINITIONS.get(p.name) is not p]
        if stale:  # one table of names: the registered primitive is the one defined
            return (
                f"primitive {stale[0]!r} is not the one defined under that name in this "
                "process (a later definition replaced it); register the current one"
            )
        self.primitives.update(dict.fromkeys((p.name for p in staged), plugin.name))
        return None

    def commit_lowerings(self, plugin: Plugin, staged: list[PendingLowering]) -> str | None:
        for low in staged:
            if low.primitive in self.primitives:
                try:
                    self.primitive(low.primitive).validate_lowering(
                        low.rule, platform=low.platform, raw=low.raw
                    )
                except Exception as err:
                    raise Refused(str(err)) from err
        self.lowerings.extend(staged)
        return None

    def apply_lowerings(self) -> None:
        """Apply the staged lowerings whose primitive is now registered.

        The owner's own rules apply as they are.  A vendor's rule fills only a platform
        its owner left to the reference; where the owner has a rule, or several vendors
        offer one, the clash is reported and ``JEXT_LOWERING_PREFER`` chooses (else the
        owner's rule stays, or, between vendors only, the reference does).  Never decided
        by plugin order.
        """
        slots: dict[tuple[str, str], list[PendingLowering]] = {}
        for i, low in enumerate(self.lowerings):
            vendor = self.plugins.get(low.plugin)
            if i in self.applied_lowerings or low.primitive not in self.primitives:
                continue
            self.applied_lowerings.add(i)
            if vendor is not None and vendor.status == "error":
                continue  # a failed plugin's rules are not applied
            if self.primitives[low.primitive] == low.plugin:  # the owner's own rule
                self._define_lowering(low, low.platform)
                continue
            for platform in _platforms_of(low.platform):
                slots.setdefault((low.primitive, platform), []).append(low)
        preferred = _lowering_preferences()
        for (name, platform), offers in sorted(slots.items()):
            owner = self.primitives[name]
            entry = self.primitive(name).rules.lowering_for(platform)
            earlier = self.vendor_rules.get((name, platform))
            in_place = entry.rule.fn if entry is not None and entry.rule is not None else None
            # A vendor rule already in place (applied by another registry of this process).
            earlier = next((o.plugin for o in offers if o.rule is in_place), earlier)
            has_own = earlier is None and entry is not None and entry.kind != "reference"
            parties = [*([owner] if has_own else []), *([earlier] if earlier else [])]
            parties = list(dict.fromkeys([*parties, *(low.plugin for low in offers)]))
            choice = preferred.get((name, platform), preferred.get((name, None)))
            if len(parties) == 1:
                choice = parties[0]
            elif choice not in parties:
                self._report_clash(name, platform, parties, owner if has_own else earlier)
                continue
            chosen = next((low for low in offers if low.plugin == choice), None)
            if chosen is not None and self._define_lowering(chosen, platform):
                self.vendor_rules[(name, platform)] = chosen.plugin

    def _define_lowering(self, low: PendingLowering, platform: str | None) -> bool:
        try:
            # Platforms come from the registrar (checked there) or _platforms_of.
            target = cast("Platform | None", platform)
            self.primitive(low.primitive).def_lowering(low.rule, platform=target, raw=low.raw)
        except Exception as err:  # a rule that waited for its primitive, or came too late:
            vendor = self.plugins.get(low.plugin)
            if vendor is not None:  # the vendor's fault, never the primitive owner's
                self.fail(vendor, f"jext_register_lowerings: {err}", err)
            return False
        return True

    def _report_clash(
        self, name: str, platform: str, parties: Sequence[str], kept: str | None
    ) -> None:
        labels = " and ".join(self.owner_label(p) for p in dict.fromkeys(parties))
        outcome = (
            f"{self.owner_label(kept)}'s rule is kept"
            if kept is not None
            else "none is used (the reference is)"
        )
        line = (
            f"jext: lowering of {name!r} on {platform}: {labels} each provide one; {outcome}. "
            f"Choose with {ENV_LOWERING_PREFER}={name}:{platform}=<plugin>"
        )
        self.add_problem(line, None)
        for plugin in dict.fromkeys(parties):
            self.notes.setdefault(plugin, []).append(line.removeprefix("jext: "))

    def commit_ffi_targets(self, plugin: Plugin, staged: list[FfiTarget]) -> str | None:
        """Register ``staged`` handlers with XLA, all or none; a name clash is the cause."""
        seen: set[tuple[str, str]] = set()
        for target in staged:
            cause = self.check_ffi_namespace(plugin, target.name)
            if cause is not None:
                return cause
            key = (target.name, target.platform)
            owner = _host.FFI_TARGETS.get(key)
            if owner is not None and owner.plugin != plugin.name:
                by = self.owner_label(owner.plugin)
                return (
                    f"FFI target {target.name!r} on {target.platform} is already registered by {by}"
                )
            if key in seen:
                return f"FFI target {target.name!r} on {target.platform} registered twice"
            seen.add(key)
        if not staged:
            return None
        for target in staged:
            key = (target.name, target.platform)
            if key in _host.FFI_TARGETS:  # this plugin's, from a load rolled back: XLA has it
                continue
            try:
                _jax.register_ffi_target(target.name, target.handler, target.platform)
                if target.batch_partitionable:
                    _jax.register_ffi_target_as_batch_partitionable(target.name)
            except Exception as err:  # XLA refused it: report, as for any plugin fault
                return f"XLA refused FFI target {target.name!r} on {target.platform}: {err}"
            _host.FFI_TARGETS[key] = Owned(target, plugin.name)
        return None

    def commit_rng_impls(self, plugin: Plugin, staged: list[Any]) -> str | None:
        cause = self._commit_named(self.rng_impls, plugin, staged, "RNG implementation")
        if cause is None:
            cause = self._check_rng_tags(staged)
        if cause is None:
            self.rng_impls.update((impl.name, Owned(impl, plugin.name)) for impl in staged)
        return cause

    def _check_rng_tags(self, staged: list[Any]) -> str | None:
        """Why ``staged`` impls' tags clash: a tag names a key type (``key<tag>``), so two
        impls with one tag would print and look alike."""
        used = {o.item.tag: o for o in self.rng_impls.values()}
        for impl in staged:
            other = used.get(impl.tag)
            if other is not None:
                by = self.owner_label(other.plugin)
                return (
                    f"RNG implementation {impl.name!r} has tag {impl.tag!r}, which "
                    f"{other.item.name!r} of {by} already has; each impl needs a tag of its own"
                )
            used[impl.tag] = Owned(impl, "")
        return None

    def commit_scipy(self, plugin: Plugin, staged: list[Any]) -> str | None:
        if not staged:
            return None
        # Each wrapper (a jext.scipy.ScipyWrapper, checked by its registrar) says whether
        # jax.scipy has its name: the store knows nothing of jext.scipy's scopes.
        for wrapper in staged:
            if wrapper.replaces_jax is None and wrapper.shadows_jax():
                return (
                    f"jax.scipy.{wrapper.scope}.{wrapper.name} exists; a plugin replaces it "
                    "only by saying why (ScipyWrapper(replaces_jax=...))"
                )
            if any(
                o.plugin == plugin.name for o in self.scipy.get((wrapper.scope, wrapper.name), [])
            ):
                return f"jext.scipy.{wrapper.scope}.{wrapper.name} registered twice"
        for wrapper in staged:
            self.scipy.setdefault((wrapper.scope, wrapper.name), []).append(
                Owned(wrapper, plugin.name)
            )
        return None

    def fail(self, plugin: Plugin, cause: str, err: BaseException | None = None) -> None:
        if plugin.status == "error":  # reported once, with its first cause
            return
        plugin.status = "error"
        first = cause.splitlines()[0] if cause else "failed"
        plugin.error = first + (_where(err) if err is not None else "")
        self.add_problem(f"jext {plugin.label()}: {plugin.error}", err)

    def add_problem(self, line: str, err: BaseException | None) -> None:
        self.problems.append(line)
        self.causes.append(err)

    def ffi_targets(self) -> dict[tuple[str, str], Owned[Any]]:
        """The FFI handlers of this store's plugins (XLA's table is process-wide)."""
        return {k: o for k, o in _host.FFI_TARGETS.items() if o.plugin in self.plugins}

    @staticmethod
    def primitive(name: str) -> Primitive[..., Any]:
        """The primitive defined under ``name`` (the one table of names is jext._host's)."""
        with _host.DEFINITIONS_LOCK:
            return _host.DEFINITIONS[name]

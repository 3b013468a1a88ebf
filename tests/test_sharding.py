"""Primitives on several devices: sharded jit, explicit sharding, shard_map (4 CPU devices).

The device count is fixed when JAX starts, so the checks run in one subprocess started
with ``--xla_force_host_platform_device_count=4``; each prints a line this module reads.
The ``sharding`` check of ``jext check`` runs its own subprocess (8 devices), once for
the primitives defined here with right and deliberately wrong sharding rules.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.interpreters import mlir

import jext
import jext.testing
from jext.testing import _sharding_check
from tests.host_devices import run_on_four_cpus


def _cumsum_rows(x: jax.Array, /) -> jax.Array:
    return jnp.cumsum(x, axis=-1)


def _raw_cumsum(ctx: Any, x: Any) -> list[Any]:
    # An MLIR rule, so opaque to jext: with a declared sharding rule it is partitioned.
    lowered: list[Any] = mlir.lower_fun(lambda v: [jnp.cumsum(v, axis=-1)], True)(ctx, x)
    return lowered


def _examples() -> list[jext.Example]:
    return [jext.Example(np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(3, 8))]


# Rows may be split, the scanned axis j may not: right.
scan = jext.primitive("shard.scan")(_cumsum_rows)
scan.def_lowering(_raw_cumsum, platform="cpu", raw=True)
scan.def_sharding("i j -> i j", need_replication=["j"])
scan.def_examples(_examples)

# Wrong: claims j may be split, so each device scans its own part of every row.
scan_split = jext.primitive("shard.scan_split")(_cumsum_rows)
scan_split.def_lowering(_raw_cumsum, platform="cpu", raw=True)
scan_split.def_sharding("i j -> i j")
scan_split.def_examples(_examples)

# Wrong for a traceable rule: values stay right (the partitioner sees the scan), but the
# program gathers the axis the rule says may be split.
scan_traced = jext.primitive("shard.scan_traced")(_cumsum_rows)
scan_traced.def_sharding("i j -> i j")
scan_traced.def_examples(_examples)


@jext.primitive("shard.add")
def add(x: jax.Array, y: jax.Array, /) -> jax.Array:
    return x + y


add.def_sharding("i, i -> i")

_SCRIPT = textwrap.dedent(
    """
    import jax, jax.numpy as jnp, numpy as np, jext
    from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec as P

    @jext.primitive("shard.softplus")
    def softplus(x, /):
        return jnp.logaddexp(x, 0.0)

    @jext.primitive("shard.cumsum")
    def cumsum(x, /):
        return jnp.cumsum(x, axis=-1)

    cumsum.def_transpose(lambda ct, x: (jnp.flip(jnp.cumsum(jnp.flip(ct, -1), axis=-1), -1),))

    @jext.primitive("shard.ste")  # a JVP that is not the reference's derivative
    def ste(x, /):
        return jnp.round(x)

    ste.def_jvp(lambda p, t: (ste(p[0]), 2.0 * t[0]))
    twins = {softplus: lambda v: jnp.logaddexp(v, 0.0), cumsum: lambda v: jnp.cumsum(v, -1),
             ste: None}
    grads = {softplus: jax.nn.sigmoid, cumsum: lambda v: jnp.broadcast_to(
                 jnp.arange(v.shape[-1], 0, -1, dtype=v.dtype), v.shape),
             ste: lambda v: 2.0 * jnp.ones_like(v)}
    x = jnp.linspace(-2.0, 2.0, 64, dtype=jnp.float32).reshape(16, 4)

    # 1. Auto sharding: the partitioner sees through a traceable rule (no all-gather).
    auto = Mesh(np.array(jax.devices()), ("x",))
    xs = jax.device_put(x, NamedSharding(auto, P("x")))
    for f in twins:
        text = jax.jit(f).lower(xs).compile().as_text()
        out = jax.jit(f)(xs)
        print("auto", f.name, "all-gather" in text, out.sharding.spec == P("x"))

    # 2. Explicit sharding: output types keep the sharding; grad and vmap work.
    explicit = jax.make_mesh((4,), ("x",), axis_types=(AxisType.Explicit,))
    with jax.set_mesh(explicit):
        xe = jax.device_put(x, NamedSharding(explicit, P("x")))
        for f in twins:
            out_type = jax.make_jaxpr(f)(xe).out_avals[0].str_short()
            g = jax.jit(jax.grad(lambda v, f=f: f(v).sum()))(xe)
            ok = np.allclose(g, grads[f](x), rtol=1e-5)
            vm = jax.jit(jax.vmap(f))(xe)
            print("explicit", f.name, out_type.endswith("[16@x,4]"), ok,
                  g.sharding.spec == P("x", None), vm.sharding.spec == P("x", None))

    # 3. shard_map with check_vma: values, grad, and a psum-style transpose.
    for f in twins:
        per_shard = jax.shard_map(f, mesh=auto, in_specs=P("x"), out_specs=P("x"),
                                  check_vma=True)
        same = np.allclose(jax.jit(per_shard)(x), f(x), rtol=1e-6)
        g = jax.jit(jax.grad(lambda v: per_shard(v).sum()))(x)
        w = jnp.linspace(0.5, 1.5, 4, dtype=jnp.float32)
        total = jax.shard_map(lambda u, w: jax.lax.psum((f(u) * w).sum(), "x"), mesh=auto,
                              in_specs=(P("x"), P()), out_specs=P(), check_vma=True)
        gw = jax.jit(jax.grad(total, argnums=1))(x, w)
        want_w = (f(x)).sum(0)
        print("shard_map", f.name, same, np.allclose(g, grads[f](x), rtol=1e-5),
              np.allclose(gw, want_w, rtol=1e-5, atol=1e-5))

    # 4. A raw (opaque) rule with a sharding rule: one partitioned call, run per shard.
    from tests.test_sharding import add, scan
    want = np.cumsum(np.asarray(x), axis=-1)
    lowered = jax.jit(scan).lower(xs)
    out = jax.jit(scan)(xs)
    print("raw", "CustomSPMDPartitioning" in lowered.as_text(),
          "all-gather" in lowered.compile().as_text(), out.sharding.spec == P("x"),
          np.allclose(out, want, rtol=1e-5))
    cols = jax.device_put(x, NamedSharding(auto, P(None, "x")))  # j kept whole: gathered
    print("raw-kept", np.allclose(jax.jit(scan)(cols), want, rtol=1e-5))
    exported = jax.export.export(jax.jit(scan), platforms=["cpu"])(xs)  # no callback in it
    print("raw-export", "CustomSPMDPartitioning" in exported.mlir_module(),
          np.allclose(exported.call(xs), want, rtol=1e-5))

    # 5. Explicit sharding: result types from the rule; operands against it refused.
    with jax.set_mesh(explicit):
        xe = jax.device_put(x, NamedSharding(explicit, P("x")))
        print("rule-type", jax.make_jaxpr(scan)(xe).out_avals[0].str_short(short_dtypes=True))
        try:
            scan(jax.device_put(x, NamedSharding(explicit, P(None, "x"))))
        except jext.RuleError as err:
            print("rule-error", "keeps factor 'j' whole" in str(err), "operand 0" in str(err))
    two = jax.make_mesh((2, 2), ("a", "b"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(two):
        v = jnp.arange(8.0)
        try:
            add(jax.device_put(v, NamedSharding(two, P("a"))),
                jax.device_put(v, NamedSharding(two, P("b"))))
        except jext.RuleError as err:
            print("rule-error-axes", "different mesh axes ('a' and 'b')" in str(err))
    """
)


@pytest.fixture(scope="module")
def lines() -> list[list[str]]:
    done = run_on_four_cpus(_SCRIPT)
    assert done.returncode == 0, done.stderr[-3000:]
    return [line.split() for line in done.stdout.splitlines() if line.strip()]


NAMES = ("shard.softplus", "shard.cumsum", "shard.ste")


@pytest.mark.parametrize("name", NAMES)
def test_sharded_jit_needs_no_all_gather(lines: list[list[str]], name: str) -> None:
    assert ["auto", name, "False", "True"] in lines


@pytest.mark.parametrize("name", NAMES)
def test_explicit_sharding_keeps_output_types_under_grad_and_vmap(
    lines: list[list[str]], name: str
) -> None:
    assert ["explicit", name, "True", "True", "True", "True"] in lines


@pytest.mark.parametrize("name", NAMES)
def test_shard_map_runs_rules_per_shard(lines: list[list[str]], name: str) -> None:
    assert ["shard_map", name, "True", "True", "True"] in lines


def test_an_opaque_rule_with_a_sharding_rule_runs_per_shard(lines: list[list[str]]) -> None:
    assert ["raw", "True", "False", "True", "True"] in lines
    assert ["raw-kept", "True"] in lines
    assert ["raw-export", "False", "True"] in lines


def test_explicit_result_types_come_from_the_rule(lines: list[list[str]]) -> None:
    assert ["rule-type", "f32[16@x,4]"] in lines


def test_explicit_operands_sharded_against_the_rule_raise_a_rule_error(
    lines: list[list[str]],
) -> None:
    assert ["rule-error", "True", "True"] in lines
    assert ["rule-error-axes", "True"] in lines


# --- the sharding check of jext check -------------------------------------------------------


@pytest.fixture(scope="module")
def checked() -> dict[str, tuple[str, str]]:
    """Each primitive's sharding check: ``(status, message)``."""
    results = jext.testing.check_sharding(scan, scan_split, scan_traced)  # one subprocess
    return {name: (r.status, r.message) for name, r in results.items()}


def test_sharding_check_passes_a_right_rule_and_says_what_ran(
    checked: dict[str, tuple[str, str]],
) -> None:
    status, message = checked["shard.scan"]
    assert status == "pass", message
    # Three rows do not divide 8 devices: the axis is tiled along its factor first.
    assert "example 0, operand 0 axis 0 (tiled) over 8" in message
    assert "kept whole by the rule: example 0, operand 0 axis 1 (factor 'j')" in message


def test_sharding_check_fails_a_rule_that_splits_what_the_kernel_scans(
    checked: dict[str, tuple[str, str]],
) -> None:
    status, message = checked["shard.scan_split"]
    assert status == "fail"
    assert "operand 0 axis 1 split over 8 devices: result 0 differs" in message


def test_sharding_check_fails_an_all_gather_the_rule_promises_away(
    checked: dict[str, tuple[str, str]],
) -> None:
    status, message = checked["shard.scan_traced"]
    assert status == "fail"
    assert "all-gathers, though the rule 'i j -> i j' lets this axis be split" in message


def test_the_subprocess_imports_nothing_from_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python -m`` puts the current folder first on the path: a ``jax.py`` lying there
    would be imported by the sharding subprocess in place of JAX."""
    marker = tmp_path / "planted-jax-ran"
    (tmp_path / "jax.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nraise ImportError('the planted jax.py')\n"
    )
    monkeypatch.chdir(tmp_path)
    softplus = jext.get_primitive("example.softplus")
    result = jext.testing.check_sharding(softplus)["example.softplus"]
    assert not marker.exists()
    assert result.status == "pass", result.message


def test_sharding_rules_are_listed_with_the_other_rules() -> None:
    assert scan.rule_sources()["sharding"] == "custom"
    assert jext.get_primitive("example.softplus").rule_sources()["sharding"] in {
        "elementwise",
        "batch",
    }
    assert str(scan.rules.sharding) == "i j -> i j (replicated: j)"


def test_jext_check_runs_the_sharding_check_only_when_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The plumbing, without the subprocess: every selected primitive goes to one session.
    sessions: list[list[str]] = []

    def fake_run(prims: list[Any]) -> dict[str, jext.testing.CheckResult]:
        sessions.append([p.name for p in prims])
        return {p.name: jext.testing.CheckResult("sharding", "pass", "ran") for p in prims}

    monkeypatch.setattr(_sharding_check, "_run", fake_run)
    reports = jext.testing.run_checks(["example.softplus", "example.cumsum"], checks=["sharding"])
    assert [sorted(s) for s in sessions] == [["example.cumsum", "example.softplus"]]
    assert {r.name: [c.message for c in r.results] for r in reports} == {
        "example.softplus": ["ran"],
        "example.cumsum": ["ran"],
    }
    assert "sharding" not in jext.testing.PRIMITIVE_CHECKS


@pytest.mark.parametrize(
    ("rule", "kept", "message"),
    [
        ("i j", (), r"it needs exactly one '->'"),
        ("i 2j -> i", (), r"'2j' is not a factor name"),
        ("i ... -> i", (), r"'\.\.\.' may only come first"),
        ("i i -> i", (), r"factor 'i' names two dimensions of one value"),
        ("i -> i", ("k",), r"need_replication names \['k'\], which the rule does not use"),
    ],
)
def test_a_malformed_sharding_rule_is_refused_when_declared(
    rule: str, kept: tuple[str, ...], message: str
) -> None:
    @jext.primitive("shard.malformed")
    def f(x: jax.Array, /) -> jax.Array:
        return x

    with pytest.raises(
        jext.DefinitionError, match=f"sharding rule .* of primitive 'shard.malformed': {message}"
    ):
        f.def_sharding(rule, need_replication=kept)


def test_the_sharding_rule_freezes_with_the_other_rules() -> None:
    @jext.primitive("shard.frozen")
    def f(x: jax.Array, /) -> jax.Array:
        return 2 * x

    f.def_sharding("i -> i")
    f(jnp.ones(3))
    f.def_sharding("i -> i")  # the same rule again is fine
    with pytest.raises(jext.DefinitionError, match="cannot define its sharding rule now"):
        f.def_sharding("i -> i", need_replication=["i"])


def test_a_rule_that_does_not_fit_the_operands_is_a_rule_error() -> None:
    from jext.primitives import _sharding

    rule = _sharding.parse_rule("shard.x", "i j, j -> i j", ())
    avals = [jax.core.ShapedArray((3, 4), np.float32), jax.core.ShapedArray((5,), np.float32)]
    with pytest.raises(jext.RuleError, match=r"factor 'j' has size 4 and 5"):
        _sharding.concrete_rule("shard.x", rule, avals, None)
    with pytest.raises(jext.RuleError, match=r"has 2 operand\(s\), but the primitive has 1"):
        _sharding.concrete_rule("shard.x", rule, avals[:1], None)


def _avals(*shapes: tuple[int, ...]) -> list[Any]:
    return [jax.core.ShapedArray(s, np.float32) for s in shapes]


def test_rules_for_an_equation_expand_ellipses_broadcasts_and_vmap_levels() -> None:
    from jext.primitives import _sharding

    # Elementwise: a broadcast axis of size 1 gets a factor of its own, kept whole.
    derived = _sharding.elementwise_rule(_avals((3, 5), (1, 5)), _avals((3, 5)))
    assert derived is not None
    assert derived.shardy() == ("f0 f1, f2 f1 -> f0 f1", ("f2",))
    # Declared, under vmap of the first operand: the batch axis leads, and may be split.
    rule = _sharding.parse_rule("shard.x", "... i, i -> ... i", ["i"])
    level = (2, (True, False), None, None)
    concrete = _sharding.concrete_rule(
        "shard.x", rule, _avals((3, 5), (5,)), _avals((3, 5)), [level]
    )
    assert concrete.shardy() == ("f0 f1 f2, f2 -> f0 f1 f2", ("f2",))
    assert concrete.allowed_dims(0) == [0, 1]
    # Nothing declared: only the batch axes.
    batch = _sharding.batch_rule(_avals((5,)), _avals(()), [(4, (True,), None, None)])
    assert batch.shardy() == ("f0 f1 -> f0", ("f1",))

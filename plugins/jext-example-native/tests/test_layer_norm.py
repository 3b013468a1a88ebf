"""``native.layer_norm``: a Pallas forward kernel with residuals and its backward kernel,
wired through ``def_vjp``, held to a plain-JAX ``custom_vjp`` of the same kernels."""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jext_example_native import (
    _pallas,
    layer_norm,
    layer_norm_bwd,
    layer_norm_bwd_rows,
    layer_norm_fwd,
)

import jext
import jext.lowering
import jext.testing
from tests.host_devices import run_on_four_cpus

# 20 rows: more than one 8-row block, so the kernels run several programs; 6 columns,
# padded to 128 in the kernels.
X = np.random.default_rng(0).standard_normal((4, 5, 6), dtype=np.float32)
W = np.linspace(0.5, 2.0, 6, dtype=np.float32)
B = np.linspace(-0.3, 0.3, 6, dtype=np.float32)
EPS = 1e-4
COS = np.cos(X)  # weights the sum of y, so that every cotangent differs


def _twin() -> Callable[..., Any]:
    """The plain-JAX version: ``jax.custom_vjp`` whose fwd and bwd call the Pallas kernels."""

    def fwd(x: Any, w: Any, b: Any) -> Any:
        y, mean, rstd = _pallas.layer_norm_fwd_interpret(x, w, b, eps=EPS)
        return y, (x, w, mean, rstd)

    def bwd(res: Any, ct: Any) -> Any:
        dx, dw_rows = _pallas.layer_norm_bwd_rows_interpret(*res, ct)
        rows = tuple(range(ct.ndim - 1))
        return dx, jnp.sum(dw_rows, axis=rows), jnp.sum(ct, axis=rows)

    twin = jax.custom_vjp(lambda x, w, b: fwd(x, w, b)[0])
    twin.defvjp(fwd, bwd)
    return twin


def _ours(x: Any, w: Any, b: Any) -> Any:
    return layer_norm(x, w, b, eps=EPS)


def _loss(f: Callable[..., Any]) -> Callable[..., Any]:
    return lambda x, w, b: jnp.sum(f(x, w, b) * COS[: x.shape[0]])


def _close(got: Any, want: Any, rtol: float = 1e-6) -> None:
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=1e-6)


ARGS = (0, 1, 2)
TRANSFORMS: dict[str, Callable[[Callable[..., Any]], Any]] = {
    "call": lambda f: f(X, W, B),
    "grad": lambda f: jax.grad(_loss(f), ARGS)(X, W, B),
    "jit(grad)": lambda f: jax.jit(jax.grad(_loss(f), ARGS))(X, W, B),
    # Each batch member is its own layer norm: the per-row sums of dw and db stay apart.
    "vmap(grad)": lambda f: jax.vmap(jax.grad(_loss(f), ARGS), in_axes=(0, None, None))(
        np.stack([X, 2 * X]), W, B
    ),
    "grad(vmap)": lambda f: jax.grad(
        lambda x, w, b: jnp.sum(jax.vmap(f, in_axes=(0, None, None))(x, w, b) * COS), ARGS
    )(X, W, B),
}


@functools.cache
def _ours_under(transform: str) -> Any:
    """``layer_norm`` under ``transform``: computed once, compared with the twin and with
    the reference by the two tests below (the kernels run in Pallas's interpreter)."""
    return TRANSFORMS[transform](_ours)


@pytest.mark.parametrize("transform", list(TRANSFORMS))
def test_def_vjp_of_the_kernels_is_custom_vjp_of_the_same_kernels(transform: str) -> None:
    run = TRANSFORMS[transform]
    _close(_ours_under(transform), run(_twin()))


@pytest.mark.parametrize("transform", list(TRANSFORMS))
def test_the_kernels_agree_with_the_reference(transform: str) -> None:
    run = TRANSFORMS[transform]
    want = run(lambda x, w, b: layer_norm.reference(x, w, b, eps=EPS))
    _close(_ours_under(transform), want, rtol=2e-5)


def test_grad_runs_the_forward_and_backward_kernels() -> None:
    jaxpr = str(jax.make_jaxpr(jax.grad(_loss(_ours), ARGS))(X, W, B))
    assert "native.layer_norm_fwd" in jaxpr and "native.layer_norm_bwd" in jaxpr, jaxpr
    assert layer_norm.rule_sources()["vjp"] == "custom"


def test_forward_mode_is_refused_as_custom_vjp_refuses_it() -> None:
    with pytest.raises(jext.RuleError, match=r"native\.layer_norm"):
        jax.jvp(_ours, (X, W, B), (X, W, B))


def test_kernels_match_their_references_on_padded_rows_and_columns() -> None:
    # 130 columns: padded to 256; 3 rows: padded to one block of 8.
    x = np.cos(np.linspace(0.0, 9.0, 390, dtype=np.float32)).reshape(3, 130)
    w = np.linspace(0.5, 1.5, 130, dtype=np.float32)
    b = np.linspace(-1.0, 1.0, 130, dtype=np.float32)
    fwd = jax.jit(layer_norm_fwd)(x, w, b)
    _close(fwd, layer_norm_fwd.reference(x, w, b), rtol=2e-5)
    _, mean, rstd = fwd
    assert mean.shape == rstd.shape == (3,)
    ct = np.sin(x)
    got = jax.jit(layer_norm_bwd)(x, w, mean, rstd, ct)
    _close(got, layer_norm_bwd.reference(x, w, mean, rstd, ct), rtol=2e-4)
    # The backward kernel is the VJP of the forward pass's y.
    _, vjp = jax.vjp(lambda *a: layer_norm_fwd.reference(*a)[0], x, w, b)
    _close(got, vjp(ct), rtol=2e-4)


@pytest.mark.any_device
def test_exports_for_cuda_and_tpu_call_the_pallas_kernels() -> None:
    grad = jax.grad(_loss(_ours), ARGS)
    cuda = jext.lowering.export(grad, X, W, B, platforms=["cuda"])
    tpu = jext.lowering.export(grad, X, W, B, platforms=["tpu"])
    assert cuda.rules == {
        "cuda": {
            "native.layer_norm_fwd": "layer_norm_fwd_triton",
            "native.layer_norm_bwd": "_layer_norm_bwd_by_rows_kernel",
        }
    }
    assert tpu.rules == {
        "tpu": {
            "native.layer_norm_fwd": "layer_norm_fwd_mosaic_tpu",
            "native.layer_norm_bwd": "_layer_norm_bwd_by_rows_kernel",
        }
    }
    cuda_text, tpu_text = cuda.exported.mlir_module(), tpu.exported.mlir_module()
    assert cuda_text.count("custom_call @__gpu$xla.gpu.triton") == 2
    assert tpu_text.count("custom_call @tpu_custom_call") == 2
    for kernel in ("jext_native_layer_norm_fwd", "jext_native_layer_norm_bwd"):
        assert kernel in cuda_text and kernel in tpu_text
    assert cuda.custom_calls == ("__gpu$xla.gpu.triton",)  # allowed by jext, not by JAX


@pytest.mark.any_device
@pytest.mark.parametrize(
    "prim", [layer_norm, layer_norm_fwd, layer_norm_bwd, layer_norm_bwd_rows], ids=lambda p: p.name
)
def test_the_layer_norm_primitives_pass_the_conformance_checks(
    prim: jext.Primitive[..., Any],
) -> None:
    report = jext.testing.check_primitive(prim)
    assert report.ok
    statuses = {r.check: r.status for r in report.results}
    # def_vjp has no forward mode to compare a transpose with.
    assert statuses["transpose"] == ("n/a" if prim is layer_norm else "pass")


def test_a_wrong_backward_kernel_fails_the_jvp_check() -> None:
    @jext.primitive("testnative.layer_norm_bwd_off")
    def wrong(x: jax.Array, w: jax.Array, b: jax.Array, /, *, eps: float = 1e-5) -> jax.Array:
        return layer_norm.reference(x, w, b, eps=eps)

    def fwd(x: jax.Array, w: jax.Array, b: jax.Array, *, eps: float) -> Any:
        y, mean, rstd = layer_norm_fwd(x, w, b, eps=eps)
        return y, (x, w, mean, rstd)

    def bwd(res: Any, ct: jax.Array) -> tuple[jax.Array, ...]:
        return tuple(1.5 * c for c in layer_norm_bwd(*res, ct))

    wrong.def_vjp(fwd, bwd)
    wrong.def_examples(lambda: [jext.Example(X[0], W, B)])
    with pytest.raises(AssertionError, match="FAIL  jvp"):
        jext.testing.check_primitive(wrong, checks=["jvp"])


_SHARDED = textwrap.dedent(
    """
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    from jext_example_native import layer_norm

    mesh = Mesh(np.array(jax.devices()), ("x",))
    x = np.cos(np.arange(16 * 6, dtype=np.float32)).reshape(16, 6)
    w, b = np.linspace(0.5, 1.5, 6, dtype=np.float32), np.linspace(-1, 1, 6, dtype=np.float32)
    weights = np.sin(x)
    rows = jax.device_put(x, NamedSharding(mesh, P("x")))
    loss = lambda x, w, b: jnp.sum(layer_norm(x, w, b) * weights)
    for name, f in {"forward": layer_norm, "backward": jax.grad(loss, (0, 1, 2))}.items():
        run = jax.jit(f)
        text = run.lower(rows, w, b).compile().as_text()
        got, want = jax.tree.leaves(run(rows, w, b)), jax.tree.leaves(run(x, w, b))
        same = all(np.allclose(g, v, rtol=1e-5, atol=1e-6) for g, v in zip(got, want))
        print(name, "all-gather" in text, same, got[0].sharding.spec == P("x"))
    """
)


def test_rows_split_across_devices_stay_split_forward_and_backward() -> None:
    # jit on four host devices, x's rows split: no all-gather in either program, the values
    # of the unsharded run, and the result (the forward y, the backward dx) split by rows.
    done = run_on_four_cpus(_SHARDED)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.split()
    assert lines == ["forward", "False", "True", "True", "backward", "False", "True", "True"]


@pytest.mark.gpu
def test_the_triton_kernels_match_the_reference_on_a_gpu() -> None:
    gpu = jax.devices("gpu")[0]
    on_gpu = [jax.device_put(a, gpu) for a in (X, W, B)]
    _close(jax.jit(_ours)(*on_gpu), layer_norm.reference(X, W, B, eps=EPS), rtol=1e-5)
    want = jax.grad(_loss(lambda x, w, b: layer_norm.reference(x, w, b, eps=EPS)), ARGS)(X, W, B)
    _close(jax.jit(jax.grad(_loss(_ours), ARGS))(*on_gpu), want, rtol=2e-5)
    with jax.default_device(gpu):
        for prim in (layer_norm, layer_norm_fwd, layer_norm_bwd):
            assert jext.testing.check_primitive(prim).ok

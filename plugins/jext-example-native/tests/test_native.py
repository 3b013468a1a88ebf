"""jext-example-native as installed: its kernels against their jnp references, on CPU.

The C++ handlers run here; the CUDA handler and the Triton and Mosaic kernels are lowered
and exported for their platforms, and run only in the ``gpu``-marked tests.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jext_example_native import (
    _native_cpu,
    counter,
    layer_norm_bwd_rows,
    layer_norm_fwd,
    rms_norm,
    rms_norm_bwd,
    rms_norm_fwd,
    rms_normalize,
    softplus,
    swish,
)

import jext
import jext.lowering
import jext.testing

X = np.linspace(-4.0, 4.0, 12, dtype=np.float32).reshape(3, 4)
W = np.linspace(0.5, 2.0, 4, dtype=np.float32)

# name -> (primitive, operands, params, tolerance)
CASES: dict[str, tuple[jext.Primitive[..., Any], tuple[np.ndarray, ...], dict[str, Any]]] = {
    "softplus": (softplus, (X,), {"beta": 1.5}),
    "rms_norm": (rms_norm, (X, W), {"eps": 1e-3}),
    "swish": (swish, (X,), {"beta": 0.8}),
}
FFI_TARGETS = {"softplus": "native_softplus", "rms_norm": "native_rms_norm"}
RTOL = 2e-6


def _fn(name: str) -> tuple[Callable[..., Any], Callable[..., Any], tuple[np.ndarray, ...]]:
    prim, operands, params = CASES[name]

    def kernel(*xs: Any) -> Any:
        return prim(*xs, **params)

    def reference(*xs: Any) -> Any:
        return prim.reference(*xs, **params)

    return kernel, reference, operands


def _close(got: Any, want: Any, rtol: float = RTOL) -> None:
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("name", list(CASES))
def test_jit_matches_the_reference(name: str) -> None:
    kernel, reference, operands = _fn(name)
    _close(jax.jit(kernel)(*operands), reference(*operands))


@pytest.mark.parametrize("axis", [0, 1, None])
@pytest.mark.parametrize("name", list(CASES))
def test_vmap_matches_the_reference(name: str, axis: int | None) -> None:
    kernel, reference, (x, *rest) = _fn(name)
    # The first operand is a batch of 2 stacked along `axis` (None: not batched, the batch
    # size given), any other operand is shared, as a weight is.
    xs = x if axis is None else np.stack([x, 0.5 - x], axis=axis)
    axes = (axis, *([None] * len(rest)))
    size = 2 if axis is None else None
    got = jax.jit(jax.vmap(kernel, in_axes=axes, axis_size=size))(xs, *rest)
    _close(got, jax.vmap(reference, in_axes=axes, axis_size=size)(xs, *rest))


def test_vmap_of_the_row_wise_kernel_is_one_native_call() -> None:
    """The batch goes to the handler in one call (broadcast_all), with no loop around it."""
    x = jnp.asarray(np.stack([X, 2 * X]))
    text = jax.jit(jax.vmap(rms_norm, in_axes=(0, None))).lower(x, W).as_text()
    assert text.count("custom_call @native_rms_norm") == 1
    assert "stablehlo.while" not in text
    _close(jax.vmap(rms_norm, in_axes=(0, None))(x, W), rms_norm.reference(x, W))


@pytest.mark.parametrize("name", list(CASES))
def test_grad_matches_the_reference(name: str) -> None:
    kernel, reference, operands = _fn(name)
    argnums = tuple(range(len(operands)))
    got = jax.jit(jax.grad(lambda *xs: jnp.sum(kernel(*xs) ** 2), argnums))(*operands)
    want = jax.grad(lambda *xs: jnp.sum(reference(*xs) ** 2), argnums)(*operands)
    for g, w in zip(got, want, strict=True):
        _close(g, w, rtol=2e-5)


@pytest.mark.parametrize("name", list(CASES))
def test_grad_of_vmap_matches_the_reference(name: str) -> None:
    kernel, reference, operands = _fn(name)
    axes = (0, *([None] * (len(operands) - 1)))
    got = jax.grad(lambda x: jnp.sum(jax.vmap(kernel, axes)(x, *operands[1:]) ** 2))(X)
    want = jax.grad(lambda x: jnp.sum(jax.vmap(reference, axes)(x, *operands[1:]) ** 2))(X)
    _close(got, want, rtol=2e-5)


@pytest.mark.parametrize("name", list(FFI_TARGETS))
def test_cpu_executable_calls_the_handler_not_the_reference(name: str) -> None:
    kernel, reference, operands = _fn(name)
    hlo = jax.jit(kernel).lower(*operands).compile().as_text()
    assert f'custom_call_target="{FFI_TARGETS[name]}"' in hlo
    # The reference's own ops are absent: softplus's exp/log, rms_norm's rsqrt.
    for op in ("exponential(", "log-plus-one(", "rsqrt("):
        assert op not in hlo, op
    assert "rsqrt(" in jax.jit(reference).lower(*operands).compile().as_text() or name != "rms_norm"


@pytest.fixture(scope="module")
def exports() -> dict[str, jext.lowering.PlatformExport]:
    out = {}
    for name in CASES:
        kernel, _, operands = _fn(name)
        out[name] = jext.lowering.export(kernel, *operands)
    return out


def test_export_names_each_platforms_rule(exports: dict[str, jext.lowering.PlatformExport]) -> None:
    rules = {
        name: {p: r[CASES[name][0].name] for p, r in e.rules.items()} for name, e in exports.items()
    }
    assert rules == {
        "softplus": {
            "cpu": "ffi:native_softplus",
            "cuda": "ffi:native_softplus",
            "rocm": "reference",
            "tpu": "reference",
        },
        "rms_norm": {
            "cpu": "ffi:native_rms_norm",
            "cuda": "reference",
            "rocm": "reference",
            "tpu": "reference",
        },
        "swish": {
            "cpu": "swish_interpret",
            "cuda": "swish_triton",
            "rocm": "reference",
            "tpu": "swish_mosaic_tpu",
        },
    }


@pytest.mark.any_device
def test_export_lowers_each_platform_to_its_kernel() -> None:
    def custom_calls(fn: Callable[..., Any], operands: Any, platform: str) -> set[str]:
        text = jext.lowering.export(fn, *operands, platforms=[platform]).exported.mlir_module()
        return {
            target
            for target in ("native_softplus", "__gpu$xla.gpu.triton", "tpu_custom_call")
            if f"custom_call @{target}" in text
        }

    softplus_fn, _, softplus_ops = _fn("softplus")
    swish_fn, _, swish_ops = _fn("swish")
    assert custom_calls(softplus_fn, softplus_ops, "cuda") == {"native_softplus"}
    assert custom_calls(softplus_fn, softplus_ops, "tpu") == set()
    assert custom_calls(swish_fn, swish_ops, "cuda") == {"__gpu$xla.gpu.triton"}
    assert custom_calls(swish_fn, swish_ops, "tpu") == {"tpu_custom_call"}
    assert custom_calls(swish_fn, swish_ops, "cpu") == set()  # the interpreter: plain ops
    # The report names the calls jax.export refuses by default and jext allowed.
    allowed = jext.lowering.export(swish_fn, *swish_ops, platforms=["cuda", "tpu"]).custom_calls
    assert allowed == ("__gpu$xla.gpu.triton",)  # Mosaic TPU's call is allowed by JAX
    assert jext.lowering.export(softplus_fn, *softplus_ops).custom_calls == ("native_softplus",)


@pytest.mark.parametrize("name", list(CASES))
def test_serialize_round_trip_runs_the_cpu_kernel(
    name: str, exports: dict[str, jext.lowering.PlatformExport]
) -> None:
    _, reference, operands = _fn(name)
    restored = jax.export.deserialize(exports[name].exported.serialize())
    assert restored.platforms == ("cpu", "cuda", "rocm", "tpu")
    _close(restored.call(*operands), reference(*operands))


@pytest.mark.any_device
@pytest.mark.parametrize("name", list(CASES))
def test_native_rules_pass_the_batching_and_lowering_checks(name: str) -> None:
    # The other checks run on every installed primitive in tests/test_conformance.py.
    report = jext.testing.check_primitive(CASES[name][0], checks=["batching", "lowering"])
    assert report.ok


def test_a_kernel_that_disagrees_with_the_reference_fails_the_checks() -> None:
    @jext.primitive("testnative.softplus_doubled_beta")
    def doubled(x: jax.Array, /, *, beta: float = 1.0) -> jax.Array:
        return jnp.logaddexp(2 * beta * x, 0.0) / (2 * beta)

    # The softplus handler ignores the doubling: a kernel wired to the wrong reference.
    doubled.def_lowering(
        jext.lowering.ffi_rule("native_softplus", primitive=doubled, attrs={"beta": "float32"}),
        platform="cpu",
    )
    doubled.def_examples(lambda: [jext.Example(X)])
    with pytest.raises(AssertionError, match="FAIL  jvp"):
        jext.testing.check_primitive(doubled, checks=["jvp"])


def test_a_handler_registered_with_jax_directly_is_found() -> None:
    # Not through jext's hook: jext cannot list it, so it compiles a probe call to see.
    jax.ffi.register_ffi_target(
        "testnative_direct_softplus", _native_cpu.handlers()["jext_native_softplus"]
    )

    @jext.primitive("testnative.direct_softplus")
    def direct(x: jax.Array, /, *, beta: float = 1.0) -> jax.Array:
        return softplus.reference(x, beta=beta)

    direct.def_lowering(
        jext.lowering.ffi_rule(
            "testnative_direct_softplus", primitive=direct, attrs={"beta": "float32"}
        ),
        platform="cpu",
    )
    _close(jax.jit(direct)(X), softplus.reference(X))


# --- sharding: one subprocess on 8 host devices for every primitive checked -------------------


@jext.primitive("testnative.rms_norm_split_rows")
def rms_norm_split_rows(x: jax.Array, w: jax.Array, /, *, eps: float = 1e-6) -> jax.Array:
    return rms_norm.reference(x, w, eps=eps)


# Wrong: the kernel reduces over j, so splitting j makes each device normalize its part.
rms_norm_split_rows.def_lowering(
    jext.lowering.ffi_rule(
        "native_rms_norm", primitive=rms_norm_split_rows, attrs={"eps": "float32"}
    ),
    platform="cpu",
)
rms_norm_split_rows.def_sharding("i j, j -> i j")
rms_norm_split_rows.def_examples(lambda: [jext.Example(X, W)])


@jext.primitive("testnative.rms_norm_by_hand")
def rms_norm_by_hand(x: jax.Array, w: jax.Array, /, *, eps: float = 1e-6) -> jax.Array:
    return rms_norm.reference(x, w, eps=eps)


@rms_norm_by_hand.def_lowering(platform="cpu")
def _rms_norm_by_hand_cpu(x: jax.Array, w: jax.Array, *, eps: float) -> jax.Array:
    # jax.ffi.ffi_call written out, not through ffi_rule: jext finds the call in the trace.
    out = jax.ShapeDtypeStruct(x.shape, x.dtype)  # type: ignore[no-untyped-call]
    call = jax.ffi.ffi_call("native_rms_norm", out, vmap_method="broadcast_all")
    return call(x, w, eps=np.float32(eps))  # type: ignore[no-any-return]


rms_norm_by_hand.def_sharding("... i, i -> ... i", need_replication=["i"])
rms_norm_by_hand.def_examples(lambda: [jext.Example(X, W)])


@pytest.fixture(scope="module")
def sharding_checks() -> dict[str, tuple[str, str]]:
    results = jext.testing.check_sharding(
        softplus,
        rms_norm,
        swish,
        rms_norm_split_rows,
        rms_norm_by_hand,
        rms_norm_fwd,
        rms_norm_bwd,
        layer_norm_fwd,
        layer_norm_bwd_rows,
    )  # one subprocess
    return {name: (r.status, r.message) for name, r in results.items()}


@pytest.mark.parametrize("name", list(CASES))
def test_native_kernels_stay_sharded_on_8_devices(
    sharding_checks: dict[str, tuple[str, str]], name: str
) -> None:
    # Each split operand axis ran per shard: same values, no all-gather in the program.
    status, message = sharding_checks[CASES[name][0].name]
    assert status == "pass", message
    assert "operand 0 axis 0 (tiled) over 8" in message


@pytest.mark.parametrize("prim", [layer_norm_fwd, layer_norm_bwd_rows], ids=lambda p: p.name)
def test_the_pallas_layer_norm_kernels_stay_sharded_by_rows(
    sharding_checks: dict[str, tuple[str, str]], prim: jext.Primitive[..., Any]
) -> None:
    # Each kernel reduces over a row, kept whole; the rows are split (no all-gather).
    status, message = sharding_checks[prim.name]
    assert status == "pass", message
    assert "operand 0 axis 0 (tiled) over 8" in message
    assert "operand 0 axis 1 (factor 'i')" in message


@pytest.mark.parametrize("prim", [rms_norm_by_hand, rms_norm_fwd, rms_norm_bwd])
def test_a_hand_written_ffi_rule_and_jaxs_example_kernels_stay_sharded(
    sharding_checks: dict[str, tuple[str, str]], prim: jext.Primitive[..., Any]
) -> None:
    # A rule calling jax.ffi.ffi_call itself is partitioned by the sharding rule, as an
    # ffi_rule is: no all-gather of its rows.
    status, message = sharding_checks[prim.name]
    assert status == "pass", message
    assert "axis 0 (tiled) over 8" in message


def test_rms_norm_keeps_its_reduced_axis_whole(
    sharding_checks: dict[str, tuple[str, str]],
) -> None:
    _, message = sharding_checks["native.rms_norm"]
    assert "kept whole by the rule: example 0, operand 0 axis 1 (factor 'i')" in message
    assert rms_norm.rule_sources()["sharding"] == "custom"
    assert softplus.rule_sources()["sharding"] == swish.rule_sources()["sharding"] == "elementwise"


def test_a_rule_that_splits_the_reduced_axis_fails_the_sharding_check(
    sharding_checks: dict[str, tuple[str, str]],
) -> None:
    status, message = sharding_checks["testnative.rms_norm_split_rows"]
    assert status == "fail"
    assert "operand 0 axis 1 split over 8 devices: result 0 differs" in message


def test_handlers_come_from_the_compiled_extension_and_are_registered() -> None:
    handlers = _native_cpu.handlers()
    assert sorted(handlers) == [
        "jext_native_aliasing",
        "jext_native_counter",
        "jext_native_rms_norm",
        "jext_native_rms_norm_bwd",
        "jext_native_rms_norm_fwd",
        "jext_native_softplus",
    ]
    assert all(type(h).__name__ == "PyCapsule" for h in handlers.values())
    targets = jext._registry.registry().ffi_targets()
    owners = {key: owned.plugin for key, owned in targets.items()}
    assert owners[("native_softplus", "cpu")] == "example-native"
    assert targets[("native_rms_norm", "cpu")].item.batch_partitionable


def test_a_float64_param_keeps_the_kernels_float32_result() -> None:
    # The handlers write in x's dtype; a float64 param (x64 on) no longer promotes the
    # reference, whose float64 result the float32 kernel filled only in part.
    with jax.enable_x64(True):
        y = softplus(X, beta=np.float64(2.0))
        assert y.dtype == np.float32
        _close(y, softplus.reference(X, beta=2.0))
        jitted = jax.jit(lambda x: softplus(x, beta=np.float64(2.0)))
        _close(jitted(X), softplus.reference(X, beta=2.0))
        z = rms_norm(X, W, eps=np.float64(1e-3))
        assert z.dtype == np.float32
        _close(z, rms_norm.reference(X, W, eps=1e-3))
        s = swish(X, beta=np.float64(0.8))  # the Pallas kernel's out_shape is x's too
        assert s.dtype == np.float32
        _close(s, swish.reference(X, beta=0.8))


def test_operands_the_kernel_cannot_take_are_a_rule_error_naming_both_types() -> None:
    # A float64 w promotes the reference to float64; the handler writes x's float32.
    with jax.enable_x64(True), pytest.raises(jext.RuleError) as info:
        rms_norm(X, W.astype(np.float64))
    assert str(info.value).startswith(
        "FFI target 'native_rms_norm' (lowering 'native.rms_norm'): the kernel declares "
        "result(s) float32[3,4] (ffi_rule(results=...)), but the primitive's abstract "
        "evaluation gives float64[3,4] for operand(s) float32[3,4], float64[4]"
    )


def test_float64_runs_the_double_kernel() -> None:
    with jax.enable_x64(True):
        x = np.linspace(-3.0, 3.0, 7)
        _close(jax.jit(softplus)(x), softplus.reference(x), rtol=1e-14)
        assert jax.jit(softplus)(x).dtype == np.float64


# --- JAX's FFI examples: rms_norm_fwd/bwd, the counter, aliasing ----------------------------


def _rms_norm_fwd_jnp(x: jax.Array, eps: float = 1e-5) -> tuple[jax.Array, jax.Array]:
    scale = 1.0 / jnp.sqrt(jnp.mean(x * x, axis=-1) + eps)
    return x * scale[..., None], scale


def test_rms_norm_fwd_and_bwd_kernels_match_jnp() -> None:
    x = jnp.asarray(X)
    ct = jnp.asarray(np.cos(X))
    for run in (lambda f, *a: f(*a), lambda f, *a: jax.jit(f)(*a)):
        y, res = run(rms_norm_fwd, x)
        want_y, want_res = _rms_norm_fwd_jnp(x)
        _close(y, want_y)
        _close(res, want_res)
        assert res.shape == (3,)
        # The backward kernel is the VJP of the forward pass's first result.
        _, vjp = jax.vjp(lambda v: _rms_norm_fwd_jnp(v)[0], x)
        _close(run(rms_norm_bwd, res, x, ct), vjp(ct)[0], rtol=1e-5)
    hlo = jax.jit(rms_norm_bwd).lower(res, x, ct).compile().as_text()
    assert 'custom_call_target="native_rms_norm_bwd"' in hlo
    xs = jnp.stack([x, 2 * x])
    _close(jax.vmap(rms_norm_fwd)(xs)[1], jax.vmap(_rms_norm_fwd_jnp)(xs)[1])


def _jaxs_rms_norm() -> Any:
    """JAX's own example: custom_vjp around ffi_call of the same two kernels."""

    def fwd(x: Any) -> Any:
        row = jax.ShapeDtypeStruct(x.shape[:-1], x.dtype)  # type: ignore[no-untyped-call]
        like = jax.ShapeDtypeStruct(x.shape, x.dtype)  # type: ignore[no-untyped-call]
        call = jax.ffi.ffi_call("native_rms_norm_fwd", (like, row), vmap_method="broadcast_all")
        y, res = call(x, eps=np.float32(1e-5))
        return y, (res, x)

    def bwd(res: Any, ct: Any) -> Any:
        like = jax.ShapeDtypeStruct(ct.shape, ct.dtype)  # type: ignore[no-untyped-call]
        call = jax.ffi.ffi_call("native_rms_norm_bwd", like, vmap_method="broadcast_all")
        return (call(*res, ct),)

    rms = jax.custom_vjp(lambda x: fwd(x)[0])
    rms.defvjp(fwd, bwd)
    return rms


def test_a_forward_and_backward_kernel_pair_is_jaxs_custom_vjp_of_them() -> None:
    twin = _jaxs_rms_norm()
    x = jnp.asarray(X)
    w = jnp.asarray(np.cos(X))
    for t in (
        lambda f: f(x),
        lambda f: jax.grad(lambda v: jnp.sum(f(v) * w))(x),
        lambda f: jax.jit(jax.grad(lambda v: jnp.sum(f(v) * w)))(x),
        lambda f: jax.vmap(jax.grad(lambda v: jnp.sum(f(v) * w)))(jnp.stack([x, 2 * x])),
        lambda f: jax.grad(lambda v: jax.vmap(f)(v).sum())(jnp.stack([x, -x])),
    ):
        _close(t(rms_normalize), t(twin), rtol=1e-6)
    jaxpr = str(jax.make_jaxpr(jax.grad(lambda v: jnp.sum(rms_normalize(v) * w)))(x))
    assert "native.rms_norm_fwd" in jaxpr and "native.rms_norm_bwd" in jaxpr, jaxpr


@pytest.mark.parametrize("prim", [rms_norm_fwd, rms_norm_bwd, rms_normalize], ids=lambda p: p.name)
def test_jaxs_example_kernels_pass_the_conformance_checks(prim: jext.Primitive[..., Any]) -> None:
    assert jext.testing.check_primitive(prim).ok


def test_the_counter_counts_runs_whose_result_is_unused() -> None:
    # has_side_effect makes the equation effectful: jit keeps it, as JAX keeps ffi_call's.
    run = jax.jit(lambda x: (counter(index=103), x)[1])
    for _ in range(3):
        run(jnp.ones(2))
    assert int(counter(index=103)) == 3


def test_the_stateful_counter_counts_every_run_as_jaxs_own_ffi_call_does() -> None:
    assert [int(counter(index=101)) for _ in range(3)] == [0, 1, 2]
    run = jax.jit(lambda: counter(index=102) + 0)  # the result is used: the call stays
    assert [int(run()) for _ in range(3)] == [0, 1, 2]
    assert int(counter(index=102)) == 3  # three jitted runs counted
    # The same handler called by jax.ffi.ffi_call directly, as JAX's example does.
    jax.ffi.register_ffi_target(
        "testnative_jax_counter", _native_cpu.handlers()["jext_native_counter"]
    )
    out = jax.ShapeDtypeStruct((), jnp.int32)  # type: ignore[no-untyped-call]
    twin = jax.ffi.ffi_call("testnative_jax_counter", out, has_side_effect=True)
    run_twin = jax.jit(lambda: twin(index=np.int64(105)) + 0)
    assert [int(run_twin()) for _ in range(3)] == [0, 1, 2]
    # One state per index, whichever way the handler is called.
    assert int(counter(index=105)) == 3
    assert int(run_twin()) == 4


def test_the_counters_side_effect_reaches_the_custom_call_and_the_export() -> None:
    text = jax.jit(lambda: counter(index=103)).lower().as_text()
    assert re.search(r"custom_call @native_counter\(\).*has_side_effect = true", text)
    exported = jext.lowering.export(lambda: counter(index=104), platforms=["cpu"])
    assert exported.custom_calls == ("native_counter",)
    restored = jax.export.deserialize(exported.exported.serialize())
    assert [int(restored.call()) for _ in range(3)] == [0, 1, 2]
    assert counter.lowering_platforms() == {"cpu": "ffi:native_counter"}


@jext.primitive("testnative.in_place")
def in_place(x: jax.Array, /) -> jax.Array:
    return x


@jext.primitive("testnative.not_in_place")
def not_in_place(x: jax.Array, /) -> jax.Array:
    return x


# The handler fails unless XLA hands it the output in the input's buffer.
in_place.def_lowering(
    jext.lowering.ffi_rule(
        "native_aliasing", primitive=in_place, results=lambda x: x, input_output_aliases={0: 0}
    ),
    platform="cpu",
)
not_in_place.def_lowering(
    jext.lowering.ffi_rule("native_aliasing", primitive=not_in_place), platform="cpu"
)


def test_input_output_aliases_reach_xla() -> None:
    _close(jax.jit(in_place)(X), X)
    with pytest.raises(Exception, match="should point to the same data"):
        jax.block_until_ready(jax.jit(not_in_place)(X))


def test_a_hand_written_ffi_rule_runs_exports_and_passes_the_lowering_check() -> None:
    _close(jax.jit(rms_norm_by_hand)(X, W), rms_norm.reference(X, W))
    result = jext.lowering.export(rms_norm_by_hand, X, W)
    assert result.custom_calls == ("native_rms_norm",)
    _close(result.call(X, W), rms_norm.reference(X, W))
    report = jext.testing.check_primitive(rms_norm_by_hand, checks=["lowering"])
    assert report.ok


# --- on a GPU -------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["softplus", "swish"])
def test_cuda_kernels_match_the_reference(name: str) -> None:
    kernel, reference, operands = _fn(name)
    gpu = jax.devices("gpu")[0]
    on_gpu = [jax.device_put(x, gpu) for x in operands]
    _close(jax.jit(kernel)(*on_gpu), reference(*operands), rtol=1e-5)
    _close(jax.jit(jax.vmap(kernel))(*on_gpu), jax.vmap(reference)(*operands), rtol=1e-5)


@pytest.mark.gpu
def test_cuda_handler_was_built_and_registered() -> None:
    from jext_example_native import cuda_library

    assert cuda_library() is not None, "built without nvcc: reinstall where nvcc is on PATH"
    owners = {key: o.plugin for key, o in jext._registry.registry().ffi_targets().items()}
    assert owners[("native_softplus", "cuda")] == "example-native"
    hlo = jax.jit(softplus).lower(jax.device_put(X, jax.devices("gpu")[0])).compile().as_text()
    assert "native_softplus" in hlo


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(CASES))
def test_conformance_checks_pass_on_gpu(name: str) -> None:
    with jax.default_device(jax.devices("gpu")[0]):
        assert jext.testing.check_primitive(CASES[name][0]).ok


def test_built_for_a_newer_ffi_api_the_plugin_fails_in_one_line_before_xla(
    tmp_path: Any,
) -> None:
    """XLA refuses a handler built for a newer FFI API than jaxlib's at registration (and
    jaxlib 0.8 cannot start its CPU backend after that): the plugin reads the version its
    handlers were compiled with and fails first, telling the user to rebuild it.  The
    installed jaxlib's version is simulated where jext reads it (a second jaxlib build is
    too slow for the suite)."""
    import os
    import subprocess
    import sys

    built = _native_cpu.ffi_api_version()
    assert isinstance(built, tuple) and len(built) == 2 and built[1] >= 1
    code = (
        "import warnings, jax, jax.numpy as jnp\n"
        "from jext import _jax\n"
        f"_jax.installed_ffi_api = lambda: ({built[0]}, {built[1] - 1})\n"
        "import jext\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    jext.primitives()\n"
        "    status = {p.name: p.status for p in jext.plugins()}['example-native']\n"
        "    print(status)\n"
        "mine = [str(w.message) for w in caught if 'example-native' in str(w.message)]\n"
        "print(*mine, sep='\\n')\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("JEXT_")}
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    status, *messages = result.stdout.splitlines()
    assert status == "error"
    assert len(messages) == 1, messages
    assert (
        f"plugin 'example-native' was built against XLA FFI API {built[0]}.{built[1]}, which "
        f"the installed jaxlib {jax.lib.__version__} (FFI API {built[0]}.{built[1] - 1}) cannot "
        "load, so none of its FFI handlers is registered (its ops cannot lower on cpu); "
        "rebuild it against the installed jaxlib: pip install"
    ) in messages[0]

"""jext.lowering.ffi_rule and the FFI target registrar: what reaches XLA, and what is refused.

Lowering and exporting need no handler, so these tests read the exported module; the
handlers of jext-example-native run in that plugin's tests.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jext
import jext.lowering
from jext._registrars import FfiTargetRegistrar

X = jnp.linspace(-1.0, 1.0, 4, dtype=jnp.float32)


@jext.primitive("testsffi.scale", reference_lowering=True)
def scale(
    x: jax.Array,
    /,
    *,
    factor: float = 2.0,
    count: int = 3,
    flag: bool = True,
    mode: str = "fast",
    axes: tuple[int, ...] = (0, 1),
    note: str = "",
) -> jax.Array:
    # Only exported here (no handler runs), so the reference need not read the params.
    return 2.0 * x


scale.def_lowering(
    jext.lowering.ffi_rule(
        "testsffi_scale",
        primitive=scale,
        attrs={
            "factor": "float32",
            "count": "int32",
            "flag": "bool",
            "mode": "str",
            "axes": "int64[]",
        },
        ignore=["note"],
        vmap_method="broadcast_all",
    ),
    platform="cpu",
)


def _cpu_module(fn: Any, *args: Any) -> str:
    return str(jext.lowering.export(fn, *args, platforms=["cpu"]).exported.mlir_module())


def _custom_call(text: str, target: str) -> str:
    (line,) = [ln for ln in text.splitlines() if f"custom_call @{target}(" in ln]
    return line


def test_rule_is_named_after_its_target_per_platform() -> None:
    assert scale.lowering_platforms() == {
        "cpu": "ffi:testsffi_scale",
        "cuda": "reference",
        "rocm": "reference",
        "tpu": "reference",
    }
    result = jext.lowering.export(scale, X)
    assert result.rules["cpu"] == {"testsffi.scale": "ffi:testsffi_scale"}
    assert result.rules["tpu"] == {"testsffi.scale": "reference"}


def test_params_reach_the_handler_as_typed_attributes() -> None:
    call = _custom_call(
        _cpu_module(lambda x: scale(x, factor=0.5, count=7, flag=False, axes=(2, -1)), X),
        "testsffi_scale",
    )
    # A Python float would arrive as f64 and an int as i64: each has the declared type.
    assert "factor = 5.000000e-01 : f32" in call
    assert "count = 7 : i32" in call
    assert "flag = false" in call
    assert 'mode = "fast"' in call
    assert re.search(r"axes = dense<\[2, -1\]> : tensor<2xi64>", call)
    assert "note" not in call


def test_outputs_are_declared_by_the_primitives_abstract_eval() -> None:
    @jext.primitive("testsffi.split")
    def split(x: jax.Array, /) -> dict[str, jax.Array]:
        return {"n": jnp.sum(x > 0).astype(jnp.int32), "y": x[:2] * 2}

    split.def_lowering(jext.lowering.ffi_rule("testsffi_split", primitive=split), platform="cpu")
    call = _custom_call(_cpu_module(split, X), "testsffi_split")
    assert ": (tensor<4xf32>) -> (tensor<i32>, tensor<2xf32>)" in call


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"factor": True},
            r"'factor' = True cannot be passed as a float32 FFI attribute: expected a number",
        ),
        ({"count": 2.5}, r"'count' = 2.5 cannot be passed as a int32 .*not an integer"),
        ({"count": 2**40}, r"'count' = 1099511627776 .*out of range"),
        ({"flag": 2}, r"'flag' = 2 .*expected a bool, got int"),
        ({"mode": 3}, r"'mode' = 3 .*expected a str"),
        ({"axes": ((1, 2),)}, r"'axes' = \(\(1, 2\),\) .*1-D"),
        ({"factor": 1e300}, r"'factor' = 1e\+300 .*overflows float32"),
    ],
)
def test_a_param_that_does_not_fit_its_attribute_type_is_refused(
    params: dict[str, Any], message: str
) -> None:
    with pytest.raises(
        jext.StaticParamError, match="FFI target 'testsffi_scale': static param " + message
    ):
        _cpu_module(lambda x: scale(x, **params), X)


def test_whole_floats_convert_to_int_attributes() -> None:
    call = _custom_call(_cpu_module(lambda x: scale(x, count=4.0), X), "testsffi_scale")
    assert "count = 4 : i32" in call


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"attrs": {"factor": "float16"}}, r"attribute 'factor' has unknown type 'float16'"),
        ({"vmap_method": "vectorized"}, r"unknown vmap_method 'vectorized'"),
        (
            {"attrs": {"factor": "float32"}},
            r"static param\(s\) \['axes', 'count', 'flag', 'mode', 'note'\] of "
            r"'testsffi.scale' would not reach the handler",
        ),
        (
            {"attrs": {"scale": "float32"}, "ignore": ["factor"]},
            r"\['scale'\] are not static params",
        ),
        (
            {"attrs": {"factor": "float32"}, "ignore": ["factor"]},
            r"\['factor'\] are both in attrs= and ignore=",
        ),
    ],
)
def test_a_malformed_rule_is_refused_when_made(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(jext.DefinitionError, match=message):
        jext.lowering.ffi_rule("testsffi_bad", primitive=scale, **kwargs)


def test_export_allows_the_ffi_custom_call_and_round_trips() -> None:
    exported = jext.lowering.export(scale, X).exported
    restored = jax.export.deserialize(exported.serialize())
    assert restored.platforms == ("cpu", "cuda", "rocm", "tpu")
    assert "custom_call @testsffi_scale" in restored.mlir_module()


# --- the registrar ---------------------------------------------------------------------------


def test_registrar_refuses_what_is_not_a_handler() -> None:
    registrar = FfiTargetRegistrar("tests-plugin")
    with pytest.raises(jext.RegistrationError, match=r"expected a PyCapsule, a ctypes function"):
        registrar.add("testsffi_x", lambda: None)
    with pytest.raises(jext.RegistrationError, match=r"platform 'tpu'; expected one of"):
        registrar.add("testsffi_x", object(), platform="tpu")  # type: ignore[arg-type]
    assert registrar.staged() == []


def test_registrar_names_a_library_it_cannot_load(tmp_path: Path) -> None:
    registrar = FfiTargetRegistrar("tests-plugin")
    missing = tmp_path / "libnothere.so"
    with pytest.raises(jext.RegistrationError) as info:
        registrar.load_library(missing)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"plugin 'tests-plugin' cannot load FFI library '{missing}': ")
    assert "No such file or directory" in message
    not_elf = tmp_path / "libtext.so"
    not_elf.write_text("not a shared object")
    with pytest.raises(
        jext.RegistrationError, match=r"libtext\.so.*(invalid ELF header|too short)"
    ):
        registrar.load_library(not_elf)


def test_the_installed_ffi_api_is_read_from_jaxlibs_headers() -> None:
    from jext import _jax

    header = Path(jax.ffi.include_dir(), "xla", "ffi", "api", "c_api.h").read_text()
    installed = _jax.installed_ffi_api()
    assert installed is not None and installed == _jax.parse_ffi_api(header)
    assert f"#define XLA_FFI_API_MINOR {installed[1]}" in header
    assert _jax.parse_ffi_api("#define XLA_FFI_API_MAJOR 1\n#define XLA_FFI_API_MINOR 12\n") == (
        1,
        12,
    )
    assert _jax.parse_ffi_api("#define XLA_FFI_API_MAJOR 0\n") is None


@pytest.mark.parametrize(
    ("built", "refused"),
    [((0, 1), False), ((0, 3), False), ((0, 4), True), ((1, 0), True), ((1, 3), True)],
)
def test_registrar_refuses_handlers_built_for_a_newer_ffi_api(
    built: tuple[int, int], refused: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # XLA takes an older minor FFI API, never a newer one nor another major one (and a
    # refused handler stops jaxlib 0.8's CPU backend): jext refuses first.
    from jext import _jax

    monkeypatch.setattr(_jax, "installed_ffi_api", lambda: (0, 3))
    registrar = FfiTargetRegistrar("tests-plugin")
    if not refused:
        registrar.require_ffi_api(built)
        return
    with pytest.raises(jext.RegistrationError) as info:
        registrar.require_ffi_api(built, fallback="its ops use the XLA path")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(
        f"plugin 'tests-plugin' was built against XLA FFI API {built[0]}.{built[1]}, which the "
        f"installed jaxlib {_jax.JAXLIB_RELEASE} (FFI API 0.3) cannot load, so none of its FFI "
        "handlers is registered (its ops use the XLA path); rebuild it against the installed jaxlib"
    )
    monkeypatch.setattr(_jax, "installed_ffi_api", lambda: None)  # unknown: nothing refused
    registrar.require_ffi_api(built)


def test_ffi_rule_is_exported_from_the_facade() -> None:
    from jext.lowering import _ffi

    assert jext.lowering.ffi_rule is _ffi.ffi_rule
    assert np.isin("testsffi_scale", sorted(_ffi.ffi_targets()))


@pytest.mark.usefixtures("on_cpu")  # the cpu rule (elsewhere the reference lowers)
def test_a_target_without_a_handler_is_a_jext_error_naming_what_registers_it() -> None:
    # testsffi_scale lowers (and exports) without a handler; compiling it on cpu needs one.
    with pytest.raises(jext.LoweringError) as info:
        jax.jit(scale)(X)
    message = str(info.value)
    assert message.startswith(
        "primitive 'testsffi.scale': its cpu rule calls the XLA FFI target 'testsffi_scale', "
        "but no handler for it is registered on cpu."
    )
    assert "jext_register_ffi_targets hook" in message
    assert "registry.add('testsffi_scale', handler, platform='cpu')" in message


def test_gpu_handlers_are_registered_under_the_platform_names_xla_backends_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """jax.ffi passes a platform name other than "cpu"/"gpu" to XLA unchanged, and the
    CUDA and ROCm backends take handlers registered as "CUDA" and "ROCM": a handler
    registered for "cuda" is never found on a GPU (an H100, jax 0.11.2)."""
    from jaxlib import xla_client

    from jext import _jax

    seen: list[tuple[str, str]] = []
    monkeypatch.setattr(
        jax.ffi,
        "register_ffi_target",
        lambda name, handler, platform, api_version: seen.append((name, platform)),
    )
    for platform in ("cpu", "cuda", "rocm"):
        _jax.register_ffi_target(f"t_{platform}", object(), platform)
    assert seen == [("t_cpu", "cpu"), ("t_cuda", "CUDA"), ("t_rocm", "ROCM")]
    assert xla_client.xla_platform_names["gpu"] == "CUDA"  # jaxlib's own name for it


# --- the result types: the kernel's contract ---------------------------------------------


@jext.primitive("testsffi.scale64")
def scale64(x: jax.Array, /, *, factor: float = 2.0) -> jax.Array:
    return x * factor  # a float64 factor promotes a float32 x when x64 is on


scale64.def_lowering(
    jext.lowering.ffi_rule(
        "testsffi_scale64",
        primitive=scale64,
        results=lambda x: x,  # the handler writes x's shape and dtype
        attrs={"factor": "float32"},
    ),
    platform="cpu",
)


def test_declared_results_are_the_calls_results() -> None:
    call = _custom_call(_cpu_module(lambda x: scale64(x, factor=0.5), X), "testsffi_scale64")
    assert ": (tensor<4xf32>) -> tensor<4xf32>" in call


def test_a_reference_that_disagrees_with_the_kernels_result_types_is_a_rule_error() -> None:
    # With x64 on, a float64 param makes the reference float64 while the kernel writes
    # float32: the handler would leave the float64 buffer's upper half unwritten.
    with jax.enable_x64(True), pytest.raises(jext.RuleError) as info:
        _cpu_module(lambda x: scale64(x, factor=np.float64(2.0)), X)
    message = str(info.value)
    assert message.startswith(
        "FFI target 'testsffi_scale64' (lowering 'testsffi.scale64'): the kernel declares "
        "result(s) float32[4] (ffi_rule(results=...)), but the primitive's abstract evaluation "
        "gives float64[4] for operand(s) float32[4]"
    )


def test_declared_results_of_another_structure_are_a_rule_error() -> None:
    @jext.primitive("testsffi.pair")
    def pair(x: jax.Array, /) -> tuple[jax.Array, jax.Array]:
        return x, x

    pair.def_lowering(
        jext.lowering.ffi_rule("testsffi_pair", primitive=pair, results=lambda x: x),
        platform="cpu",
    )
    with pytest.raises(jext.RuleError, match=r"declared results .* have the structure"):
        _cpu_module(pair, X)


def test_results_may_read_the_params_they_declare() -> None:
    @jext.primitive("testsffi.head")
    def head(x: jax.Array, /, *, n: int = 2) -> jax.Array:
        return x[:n]

    def first_n(x: jax.ShapeDtypeStruct, *, n: int) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct((n,), x.dtype)  # type: ignore[no-untyped-call]

    head.def_lowering(
        jext.lowering.ffi_rule(
            "testsffi_head",
            primitive=head,
            results=first_n,
            attrs={"n": "int64"},
        ),
        platform="cpu",
    )
    call = _custom_call(_cpu_module(lambda x: head(x, n=3), X), "testsffi_head")
    assert ": (tensor<4xf32>) -> tensor<3xf32>" in call


# --- attributes: optional, computed --------------------------------------------------------


@jext.primitive("testsffi.attrs")
def with_attrs(
    x: jax.Array, y: jax.Array, /, *, seed: int | None = None, factor: float = 1.0
) -> jax.Array:
    return x + y


with_attrs.def_lowering(
    jext.lowering.ffi_rule(
        "testsffi_attrs",
        primitive=with_attrs,
        results=lambda x, y: x,
        attrs={
            "seed": "int64",
            "factor": "float32",
            # JAX's CUDA example passes the element count as an `n` attribute.
            "n": jext.lowering.ComputedAttr("uint64", lambda x, y: x.size),
            "scaled": jext.lowering.ComputedAttr(
                "float32", lambda x, y, *, factor: None if factor == 1.0 else 2 * factor
            ),
            "rows": jext.lowering.ComputedAttr("int32[]", lambda x, y: (x.shape[0], y.shape[0])),
        },
    ),
    platform="cpu",
)


def test_a_param_that_is_none_is_omitted_and_computed_attributes_are_passed() -> None:
    call = _custom_call(_cpu_module(with_attrs, X, X), "testsffi_attrs")
    assert "seed" not in call
    assert "scaled" not in call  # the computed value None: omitted
    assert "n = 4 : ui64" in call
    assert re.search(r"rows = dense<4> : tensor<2xi32>", call)
    call = _custom_call(
        _cpu_module(lambda x, y: with_attrs(x, y, seed=7, factor=0.5), X, X), "testsffi_attrs"
    )
    assert "seed = 7 : i64" in call
    assert "scaled = 1.000000e+00 : f32" in call


def test_a_computed_attribute_is_converted_and_checked_like_a_param() -> None:
    @jext.primitive("testsffi.bad_attr")
    def bad(x: jax.Array, /) -> jax.Array:
        return x

    bad.def_lowering(
        jext.lowering.ffi_rule(
            "testsffi_bad_attr",
            primitive=bad,
            attrs={"n": jext.lowering.ComputedAttr("int8", lambda x: x.size * 100)},
        ),
        platform="cpu",
    )
    with pytest.raises(
        jext.StaticParamError, match=r"'n' = 400 cannot be passed as a int8 .*range"
    ):
        _cpu_module(bad, X)


def test_a_computed_attribute_of_unknown_type_is_refused_when_made() -> None:
    with pytest.raises(jext.DefinitionError, match=r"attribute 'n' has unknown type 'int4'"):
        jext.lowering.ffi_rule(
            "testsffi_bad",
            primitive=with_attrs,
            attrs={
                "seed": "int64",
                "factor": "float32",
                "n": jext.lowering.ComputedAttr("int4", len),  # type: ignore[arg-type]
            },
        )


# --- input_output_aliases, has_side_effect -------------------------------------------------


@jext.primitive("testsffi.update")
def update(state: jax.Array, delta: jax.Array, /) -> tuple[jax.Array, jax.Array]:
    return state + delta, jnp.sum(delta)


def _update_rule(**kwargs: Any) -> Any:
    return jext.lowering.ffi_rule("testsffi_update", primitive=update, **kwargs)


update.def_lowering(_update_rule(input_output_aliases={0: 0}, has_side_effect=True), platform="cpu")


def test_input_output_aliases_and_the_side_effect_reach_the_custom_call() -> None:
    call = _custom_call(_cpu_module(update, X, X), "testsffi_update")
    assert "output_operand_aliases = [#stablehlo.output_operand_alias<" in call
    assert "operand_index = 0" in call
    assert "has_side_effect = true" in call
    call = _custom_call(_cpu_module(scale, X), "testsffi_scale")
    assert "has_side_effect" not in call and "output_operand_aliases" not in call


def test_the_rule_says_whether_its_call_has_side_effects() -> None:
    # The primitive core reads the attribute to declare the equation's effect.
    from jext.primitives._rules import FFI_SIDE_EFFECT_ATTR, LoweringEntry, Rule
    from jext.primitives._signature import RuleArity

    with_effect = _update_rule(has_side_effect=True)
    assert getattr(with_effect, FFI_SIDE_EFFECT_ATTR) is True
    assert getattr(_update_rule(), FFI_SIDE_EFFECT_ATTR) is False
    entry = LoweringEntry(Rule(with_effect, RuleArity(True, frozenset())))
    assert entry.ffi_side_effect and entry.ffi_target == "testsffi_update"


@pytest.mark.parametrize(
    ("aliases", "message"),
    [
        (
            {1: 0},
            r"input_output_aliases 1: 0 writes result 0 \(float32\[4\]\) in place of operand 1 "
            r"\(float32\[\]\); an aliased pair must have one shape and dtype",
        ),
        ({0: 2}, r"input_output_aliases 0: 2 names a missing operand or result"),
    ],
)
def test_an_alias_that_does_not_fit_the_call_is_a_rule_error(
    aliases: dict[int, int], message: str
) -> None:
    @jext.primitive(f"testsffi.update_bad_alias_{min(aliases)}")
    def bad(state: jax.Array, delta: jax.Array, /) -> tuple[jax.Array, jax.Array]:
        return state + delta, jnp.sum(delta)

    bad.def_lowering(
        jext.lowering.ffi_rule("testsffi_update", primitive=bad, input_output_aliases=aliases),
        platform="cpu",
    )
    with pytest.raises(jext.RuleError, match=message):
        _cpu_module(bad, X, jnp.float32(1.0))


@pytest.mark.parametrize(
    ("aliases", "message"),
    [({-1: 0}, r"ints >= 0"), ({0: 0, 1: 0}, r"one result several operands")],
)
def test_malformed_aliases_are_refused_when_made(aliases: dict[int, int], message: str) -> None:
    with pytest.raises(jext.DefinitionError, match=message):
        _update_rule(input_output_aliases=aliases)


# --- a hand-written rule calling jax.ffi.ffi_call ------------------------------------------


@jext.primitive("testsffi.hand")
def hand(x: jax.Array, /, *, factor: float = 2.0) -> jax.Array:
    return x * factor


@hand.def_lowering(platform="cpu")
def _hand_cpu(x: jax.Array, *, factor: float) -> jax.Array:
    out = jax.ShapeDtypeStruct(x.shape, x.dtype)  # type: ignore[no-untyped-call]
    return jax.ffi.ffi_call("testsffi_hand", out)(x, factor=np.float32(factor))


def test_export_allows_a_hand_written_rules_ffi_call_and_names_it() -> None:
    with pytest.raises(ValueError, match=r"Cannot serialize code with custom calls"):
        jax.export.export(jax.jit(hand), platforms=("cpu",))(X)  # JAX alone refuses it
    result = jext.lowering.export(hand, X)
    assert result.custom_calls == ("testsffi_hand",)
    assert result.rules["cpu"] == {"testsffi.hand": "_hand_cpu"}
    restored = jax.export.deserialize(result.exported.serialize())
    assert "custom_call @testsffi_hand" in restored.mlir_module()
    assert jext.lowering.export(scale, X).custom_calls == ("testsffi_scale",)
    assert jext.lowering.export(jnp.sin, X).custom_calls == ()


@pytest.mark.usefixtures("on_cpu")
def test_a_hand_written_rules_target_without_a_handler_is_a_jext_error() -> None:
    with pytest.raises(jext.LoweringError, match=r"calls the XLA FFI target 'testsffi_hand'"):
        jax.jit(hand)(X)

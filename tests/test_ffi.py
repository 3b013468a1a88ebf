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

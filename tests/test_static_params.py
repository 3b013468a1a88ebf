"""Static params: a fixed set of names, and the ways to pass a set of options."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jext


def test_var_keyword_params_are_refused_pointing_to_the_alternatives() -> None:
    with pytest.raises(jext.DefinitionError) as info:
        jext.primitive("static_params.var_kw")(lambda x, /, **attrs: x)
    message = str(info.value)
    assert "'**attrs' is not allowed" in message
    assert "one keyword-only param per key" in message
    assert "attrs=tuple(sorted(options.items()))" in message


def test_options_pass_as_a_tuple_of_pairs() -> None:
    @jext.primitive("static_params.affine")
    def affine(x: jax.Array, /, *, options: tuple[tuple[str, Any], ...] = ()) -> jax.Array:
        opts = dict(options)
        scale, shift = float(opts.get("scale", 1.0)), float(opts.get("shift", 0.0))
        return x * scale + shift

    x = np.arange(3.0, dtype=np.float32)
    options = tuple(sorted({"shift": 1.0, "scale": 2.0}.items()))
    np.testing.assert_allclose(jax.jit(lambda v: affine(v, options=options))(x), 2 * x + 1)
    grad = jax.grad(lambda v: affine(v, options=options).sum())(x)
    np.testing.assert_allclose(grad, jnp.full(3, 2.0))

"""jext and hijax compose: a jext primitive inside a hijax primitive's rules, and a hijax
primitive inside a jext primitive's reference, give under ``jit``, ``grad``, ``vmap`` and
their compositions the same values as the inner primitive alone.

hijax (``jax.experimental.hijax.HiPrim``) is JAX's own way of defining a primitive from a
Python class with ``expand``, ``jvp`` and ``batch`` methods; jax 0.12 builds some of
``jax.numpy`` on it (``jnp.ldexp``, ``jnp.frexp``).  Each inner primitive has a rule that
differs from its reference's derivative on purpose, so a rule the outer one stops applying
changes a number.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jext

try:
    from jax.experimental import hijax
except ImportError:  # jax 0.8 and 0.9 have no jax.experimental.hijax
    hijax = None

HiPrim: Any = getattr(hijax, "HiPrim", None)

pytestmark = pytest.mark.skipif(
    HiPrim is None,
    reason=f"jax {jax.__version__} has no jax.experimental.hijax.HiPrim (its hijax API, "
    "from jax 0.12 on; jax 0.10's hijax is an earlier, different experimental API)",
)

X = np.linspace(-1.5, 1.3, 4, dtype=np.float32)
XS = np.linspace(-1.0, 1.2, 12, dtype=np.float32).reshape(3, 4)


def close(ours: Any, alone: Any, what: str) -> None:
    assert jax.tree.structure(ours) == jax.tree.structure(alone), what
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(alone), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-6, atol=2e-6, err_msg=what)


def transformations(f: Callable[[Any], Any]) -> dict[str, Callable[[], Any]]:
    """``f`` (elementwise, float32 arrays) under each transformation and composition."""

    def scalar(x: Any) -> Any:
        return f(x[None])[0]

    def loss(x: Any) -> Any:
        return jnp.sum(f(x) * jnp.arange(1.0, 1.0 + x.shape[-1]))

    return {
        "eager": lambda: f(X),
        "jit": lambda: jax.jit(f)(X),
        "grad": lambda: jax.grad(loss)(X),
        "jit(grad)": lambda: jax.jit(jax.grad(loss))(X),
        "vmap": lambda: jax.vmap(f)(XS),
        "jit(vmap)": lambda: jax.jit(jax.vmap(f))(XS),
        "vmap(grad)": lambda: jax.vmap(jax.grad(loss))(XS),
        "jit(vmap(grad))": lambda: jax.jit(jax.vmap(jax.grad(loss)))(XS),
        "grad(vmap)": lambda: jax.grad(lambda xs: jnp.sum(jax.vmap(f)(xs) ** 2))(XS),
        "grad(grad)": lambda: jax.vmap(jax.grad(jax.grad(scalar)))(X),
        "jvp": lambda: jax.jvp(f, (X,), (jnp.ones_like(X),)),
        "vjp": lambda: jax.vjp(f, X)[1](jnp.linspace(0.5, 2.0, 4, dtype=np.float32)),
    }


CASES = list(transformations(lambda x: x))


# --- a jext primitive inside a hijax primitive's rules ---------------------------------------


@jext.primitive("hijaxtest.wsin")
def wsin(x: jax.Array, /) -> jax.Array:
    return jnp.sin(x)


@wsin.def_jvp
def _wsin_jvp(primals: Any, tangents: Any) -> Any:
    (x,), (dx,) = primals, tangents
    return wsin(x), 2.0 * jnp.cos(x) * dx  # twice the derivative, on purpose


if HiPrim is not None:

    class HiWrap(HiPrim):  # type: ignore[misc]
        """A hijax primitive whose expansion, JVP and batching rules call ``wsin``."""

        def __init__(self, aval: Any) -> None:
            self.in_avals = (aval,)
            self.out_aval = aval
            self.params = {"aval": aval}
            super().__init__()

        def expand(self, x: Any) -> Any:
            return wsin(x)

        def jvp(self, primals: Any, tangents: Any) -> Any:
            return jax.jvp(wsin, primals, tangents)

        lin, linearized = hijax.linearize_from_jvp
        vjp_fwd, vjp_bwd_retval = hijax.vjp_from_jvp

        def batch(self, axis_data: Any, args: Any, dims: Any) -> Any:
            (x,), (d,) = args, dims
            return jax.vmap(wsin, in_axes=d, out_axes=d, axis_size=axis_data.size)(x), d

    class HiCube(HiPrim):  # type: ignore[misc]
        """``x**3`` with a JVP rule of ``4 x**2 dx`` (not the derivative, on purpose)."""

        def __init__(self, aval: Any) -> None:
            self.in_avals = (aval,)
            self.out_aval = aval
            self.params = {"aval": aval}
            super().__init__()

        def expand(self, x: Any) -> Any:
            return x * x * x

        def jvp(self, primals: Any, tangents: Any) -> Any:
            (x,), (dx,) = primals, tangents
            if isinstance(dx, hijax.Zero):
                return self(x), dx
            return self(x), 4.0 * x * x * dx

        lin, linearized = hijax.linearize_from_jvp
        vjp_fwd, vjp_bwd_retval = hijax.vjp_from_jvp

        def batch(self, axis_data: Any, args: Any, dims: Any) -> Any:
            (x,), (d,) = args, dims
            return HiCube(jax.typeof(x))(x), d


def hi_wrap(x: Any) -> Any:
    return HiWrap(jax.typeof(x))(x)


@pytest.mark.parametrize("case", CASES)
def test_jext_primitive_inside_hijax_rules_as_alone(case: str) -> None:
    close(transformations(hi_wrap)[case](), transformations(wsin)[case](), case)


# --- a hijax primitive inside a jext primitive's reference ------------------------------------


def hi_cube(x: Any) -> Any:
    return HiCube(jax.typeof(x))(x)


@jext.primitive("hijaxtest.via_hijax")
def via_hijax(x: jax.Array, /) -> jax.Array:
    return hi_cube(x)


@pytest.mark.parametrize("case", CASES)
def test_hijax_primitive_inside_jext_reference_as_alone(case: str) -> None:
    close(transformations(via_hijax)[case](), transformations(hi_cube)[case](), case)


def test_the_inner_rules_apply() -> None:
    """The rules differ from the references' derivatives, so the comparisons above see them."""
    np.testing.assert_allclose(jax.grad(wsin)(0.5), 2 * np.cos(0.5), rtol=1e-6)
    np.testing.assert_allclose(jax.grad(hi_cube)(0.5), 1.0, rtol=1e-6)
    np.testing.assert_allclose(jax.grad(via_hijax)(0.5), 1.0, rtol=1e-6)
    # One equation each: the jext primitive stays a primitive around the hijax one.
    eqns = jax.make_jaxpr(via_hijax)(X).jaxpr.eqns
    assert [e.primitive.name for e in eqns] == ["hijaxtest.via_hijax"]

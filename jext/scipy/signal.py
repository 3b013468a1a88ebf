"""``jext.scipy.signal``: ``scipy.signal``'s functions for JAX, from jax.scipy and from plugins."""

from jext.scipy._scopes import ScipyFunction, module_dir, module_getattr


def __getattr__(name: str) -> ScipyFunction:
    return module_getattr("signal", name)


def __dir__() -> list[str]:
    return module_dir("signal")

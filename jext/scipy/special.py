"""``jext.scipy.special``: ``scipy.special``'s functions for JAX, from jax.scipy and plugins."""

from jext.scipy._scopes import ScipyFunction, module_dir, module_getattr


def __getattr__(name: str) -> ScipyFunction:
    return module_getattr("special", name)


def __dir__() -> list[str]:
    return module_dir("special")

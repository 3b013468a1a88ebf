"""XLA compile options for test programs whose results cannot depend on them.

XLA's optimization level 1, and XLA:CPU's older elemental code generator where XLA
has it (its fusion emitters take about 2.5 times longer to compile the test programs here;
jax 0.12's XLA:CPU has only those).  For programs
that compare two computations compiled together, or integer streams (which no
optimization may change by a bit), compiling is most of the cost and the answer is the
same; tests of what a user's default compilation gives keep ``jax.jit``.
:func:`xla_flags` gives the same options to a child interpreter, whose every compilation
takes them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax

from jext import _jax

FAST_COMPILE = {
    # Level 1, not 0: XLA:CPU's elemental emitter at level 0 miscompiles (jaxlib 0.8.3 to
    # 0.10.2: the gradient of jnp.hypot applied twice comes out wrong; tests/test_compile.py).
    "xla_backend_optimization_level": 1,
    "xla_llvm_disable_expensive_passes": True,
    "xla_cpu_use_fusion_emitters": False,
}


def compile_options() -> dict[str, Any] | None:
    """:data:`FAST_COMPILE` for ``Lowered.compile`` on CPU, its options the running XLA has
    (they are XLA:CPU's; on a GPU machine the default device compiles as usual: None)."""
    return _jax.xla_compile_options(FAST_COMPILE) if jax.default_backend() == "cpu" else None


def run_fast(f: Callable[..., Any], *args: Any) -> Any:
    """``jax.jit(f)(*args)``, compiled with :func:`compile_options`."""
    return jax.jit(f).lower(*args).compile(compile_options())(*args)


def xla_flags(inherited: str = "") -> str:
    """``XLA_FLAGS`` for a child interpreter: ``inherited`` (the parent's, e.g. an
    instruction-set setting) and :data:`FAST_COMPILE`'s options that the running XLA has
    (XLA aborts at start on a flag it does not know)."""
    accepted = _jax.xla_compile_options(FAST_COMPILE)
    ours = [f"--{name}={str(value).lower()}" for name, value in accepted.items()]
    return " ".join([*inherited.split(), *ours])

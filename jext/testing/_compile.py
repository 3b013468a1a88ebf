"""XLA compile options of the checks' programs that test a rule's structure, not its bits."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from jext import _jax

__all__ = ["STRUCTURE_COMPILE"]

_WANTED: Final[dict[str, Any]] = {
    # Level 1, not 0: XLA:CPU's elemental emitter at level 0 miscompiles (jaxlib 0.8.3 to
    # 0.10.2: the gradient of jnp.hypot applied twice comes out wrong; tests/test_compile.py).
    "xla_backend_optimization_level": 1,
    "xla_llvm_disable_expensive_passes": True,
    # XLA:CPU's older elemental emitter; jax 0.12's XLA has no such option (and no such
    # emitter), so _jax.xla_compile_options leaves it out there.
    "xla_cpu_use_fusion_emitters": False,
    # One LLVM module instead of XLA:CPU's split into parts compiled on its thread pool:
    # the same code, 10 to 40% less CPU to compile (a SciPy wrapper's programs: 3.1 s ->
    # 2.5 s), and `jext check` already compiles several programs at once on its threads.
    "xla_cpu_parallel_codegen_split_count": 1,
}


class _CompileOptions(Mapping[str, Any]):
    """The options of ``_WANTED`` the running XLA knows, probed at first use (not at
    import: the probe compiles a program, which starts JAX's backend)."""

    __slots__ = ()

    def _options(self) -> dict[str, Any]:
        return _jax.xla_compile_options(_WANTED)

    def __getitem__(self, name: str) -> Any:
        return self._options()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._options())

    def __len__(self) -> int:
        return len(self._options())

    def __repr__(self) -> str:
        return repr(self._options())


STRUCTURE_COMPILE: Final[Mapping[str, Any]] = _CompileOptions()
"""XLA's optimisation level 1, one LLVM module, and, where XLA:CPU has it, its older
elemental emitter, which compile several times faster than JAX's default.  Only for
programs whose comparisons sit far above the last-bit differences these options make
(``a*b + c`` may be one rounding at XLA:CPU's default, two here): never for values users
get, which come from the default compilation.  Passed to ``Lowered.compile`` as it is (a
read-only mapping of the options the running XLA accepts)."""

"""XLA compile options of the checks' programs that test a rule's structure, not its bits."""

from __future__ import annotations

from typing import Any, Final

__all__ = ["STRUCTURE_COMPILE"]

STRUCTURE_COMPILE: Final[dict[str, Any]] = {
    "xla_backend_optimization_level": 0,
    "xla_llvm_disable_expensive_passes": True,
    "xla_cpu_use_fusion_emitters": False,
}
"""XLA's lowest optimisation level and XLA:CPU's older elemental emitter, which compile
several times faster (a primitive's float32 ``jvp``/``transpose``/``batching`` program:
0.70 s -> 0.15 s CPU).  Only for programs whose comparisons sit far above the last-bit
differences these options make (``a*b + c`` is one rounding at XLA:CPU's default, two at
level 0): never for values users get, which come from the default compilation."""

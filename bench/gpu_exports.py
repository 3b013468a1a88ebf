"""The exports a GPU or TPU would run, made and checked on any machine (bench/gpu.sh's CPU half).

Run from the repository root::

    python bench/gpu_exports.py [--platforms cuda,rocm,tpu]

For every primitive jext-example-native registers (its namespace ``native``), its first
example is exported with ``jext.lowering.export`` for each platform, and the module's
structure is held to the rule ``lowering_platforms()`` names for that platform:

- ``ffi:<target>``: the module calls the custom call ``<target>``, and the export reports it
  among the targets it allowed;
- a Triton kernel (``*_triton``): ``__gpu$xla.gpu.triton``; a Mosaic TPU kernel
  (``*_mosaic_tpu``): ``tpu_custom_call``;
- ``reference``: no custom call that jax.export refuses by default.

A primitive without a rule for a platform must fail to export with ``jext.LoweringError``.
Prints one line per primitive and platform, then ``exports: N ok, M failed``; exit 1 if
anything failed.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import jext
import jext.lowering

NAMESPACE = "native."  # jext-example-native's


def expected_call(rule: str) -> str | None:
    """The custom call the module must contain for ``rule``, or None (the reference, or a
    traceable rule that calls other primitives)."""
    if rule.startswith("ffi:"):
        return rule.removeprefix("ffi:")
    if rule.endswith("_triton"):
        return "__gpu$xla.gpu.triton"
    if rule.endswith("_mosaic_tpu"):
        return "tpu_custom_call"
    return None


def check(prim: Any, platform: str) -> str | None:
    """None if ``prim``'s export for ``platform`` has the right structure, else why not."""
    example = prim.examples()[0]
    rule = prim.lowering_platforms().get(platform)

    def fn(*operands: Any) -> Any:
        return prim(*operands, **example.params)

    try:
        result = jext.lowering.export(fn, *example.operands, platforms=[platform])
    except jext.LoweringError as err:
        return None if rule is None else f"{rule}: {err}"
    if rule is None:
        return "exported although it has no rule for the platform"
    text = result.exported.mlir_module()
    want = expected_call(rule)
    if want is None:
        # A traceable rule may call kernels through other primitives (the export allowed
        # them); the reference calls none.
        if rule == "reference" and result.custom_calls:
            return f"reference, but calls {result.custom_calls}"
        return None
    if f"custom_call @{want}(" not in text and f'custom_call @"{want}"(' not in text:
        return f"{rule}: the module does not call {want}"
    if want != "tpu_custom_call" and want not in result.custom_calls:
        return f"{rule}: {want} is not among the targets the export allowed {result.custom_calls}"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--platforms", default="cuda,rocm,tpu")
    parser.add_argument("--smoke", action="store_true", help="the same: it is already quick")
    platforms = parser.parse_args().platforms.split(",")
    prims = [p for name, p in jext.primitives().items() if name.startswith(NAMESPACE)]
    failed = 0
    for prim in sorted(prims, key=lambda p: p.name):
        if not prim.examples():
            print(f"{prim.name}: no examples, not exported")
            continue
        for platform in platforms:
            why = check(prim, platform)
            rule = prim.lowering_platforms().get(platform, "no rule")
            print(f"{prim.name} {platform}: {'ok' if why is None else 'FAIL ' + why} ({rule})")
            failed += why is not None
    total = sum(len(platforms) for p in prims if p.examples())
    print(f"exports: {total - failed} ok, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

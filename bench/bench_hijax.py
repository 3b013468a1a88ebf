"""A jext primitive against a hijax primitive (``jax.experimental.hijax.HiPrim``) with the
same rules, side by side in one process.

Run from the repository root::

    python bench/bench_hijax.py

Both contenders are softplus ``jnp.logaddexp(beta * x, 0.0) / beta`` (``beta`` static)
with one JVP rule, ``sigmoid(beta * x) * dx``, and vectorized by applying the same
elementwise computation to the batch:

- **jext**: ``@jext.primitive("benchhijax.softplus")`` with ``def_jvp`` (batching, transpose
  and lowering derived from the reference);
- **hijax**: a ``HiPrim`` subclass with ``expand`` (the reference), ``jvp`` (the rule),
  ``vjp_from_jvp``/``linearize_from_jvp`` and ``batch``.

Measured, contenders interleaved (their order rotating every repetition), medians of
per-repetition ratios jext/hijax: the eager per-call time on float32[8]; trace + lower +
compile of ``jit`` of a chain of calls, of ``jit(grad)`` of its sum and of
``jit(vmap)``; and whether the compiled programs' HLO are identical once names and
metadata are normalised.  No goal: hijax is JAX's own experimental API, and the figures say
what choosing one over the other costs (bench/results/jax-0.12.md).

Needs a JAX with ``jax.experimental.hijax.HiPrim`` (0.12 on); elsewhere it says so and
exits 0.  ``--chain N`` and ``--reps N`` set the chain length (200) and the compile
repetitions (7); ``--smoke``: tiny sizes, one repetition, meaningless figures.
"""

from __future__ import annotations

import difflib
import re
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import jext

try:
    from jax.experimental import hijax as _hijax

    hijax: Any = _hijax
except ImportError:  # jax 0.8 and 0.9
    hijax = None

BETA = 2.0
SMOKE = "--smoke" in sys.argv[1:]
EAGER_REPS, EAGER_CALLS, CHAIN, COMPILE_REPS = (2, 2, 3, 1) if SMOKE else (41, 200, 200, 7)
for _flag, _value in zip(sys.argv[1:], sys.argv[2:], strict=False):
    if _flag == "--chain":  # fewer calls per chain, on a loaded machine
        CHAIN = int(_value)
    elif _flag == "--reps":
        COMPILE_REPS = int(_value)


def reference(x: jax.Array, /, *, beta: float = 1.0) -> jax.Array:
    return jnp.logaddexp(beta * x, 0.0) / beta


jext_softplus = jext.primitive("benchhijax.softplus")(reference)


@jext_softplus.def_jvp
def _jvp(primals: Any, tangents: Any, *, beta: float = 1.0) -> Any:
    (x,), (dx,) = primals, tangents
    return jext_softplus(x, beta=beta), jax.nn.sigmoid(beta * x) * dx


def make_hijax_softplus() -> Callable[..., jax.Array]:
    class HiSoftplus(hijax.HiPrim):  # type: ignore[misc]
        def __init__(self, aval: Any, beta: float) -> None:
            self.in_avals = (aval,)
            self.out_aval = aval
            self.params = {"aval": aval, "beta": beta}
            super().__init__()

        def expand(self, x: Any) -> Any:
            return reference(x, beta=self.params["beta"])

        def jvp(self, primals: Any, tangents: Any) -> Any:
            (x,), (dx,) = primals, tangents
            if isinstance(dx, hijax.Zero):
                return self(x), dx
            return self(x), jax.nn.sigmoid(self.params["beta"] * x) * dx

        lin, linearized = hijax.linearize_from_jvp
        vjp_fwd, vjp_bwd_retval = hijax.vjp_from_jvp

        def batch(self, axis_data: Any, args: Any, dims: Any) -> Any:
            (x,), (d,) = args, dims
            return HiSoftplus(jax.typeof(x), self.params["beta"])(x), d

    def softplus(x: jax.Array, /, *, beta: float = 1.0) -> jax.Array:
        out: jax.Array = HiSoftplus(jax.typeof(x), beta)(x)
        return out

    return softplus


def chain(fn: Callable[..., jax.Array], n: int) -> Callable[[jax.Array], jax.Array]:
    """A new Python function (so a jit cache miss) applying ``fn`` ``n`` times."""

    def f(x: jax.Array) -> jax.Array:
        for _ in range(n):
            x = fn(x, beta=BETA)
        return x

    return f


def ratio(a: list[float], b: list[float]) -> float:
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


def interleave(calls: dict[str, Callable[[], float]], reps: int) -> dict[str, list[float]]:
    names = list(calls)
    out: dict[str, list[float]] = {n: [] for n in names}
    for rep in range(reps):
        for n in names[rep % 2 :] + names[: rep % 2]:
            out[n].append(calls[n]())
    return out


def report(what: str, samples: dict[str, list[float]], unit: float, label: str) -> None:
    j, h = (statistics.median(samples[k]) * unit for k in ("jext", "hijax"))
    print(
        f"{what:<46} jext {j:9.2f} {label}  hijax {h:9.2f} {label}  "
        f"jext / hijax {ratio(samples['jext'], samples['hijax']):.3f}x"
    )


_clear_caches: Callable[[], None] = jax.clear_caches
# Module names, metadata, and the stack-frame tables (FileNames, ...) XLA prints first.
_NAMES = re.compile(
    r"(module @|HloModule )[\w.$-]+|, ?metadata=\{[^}]*\}|, ?loc\([^)]*\)|#loc\d*"
    r"|^(FileNames|FunctionNames|FileLocations|StackFrames)\n(\d+ .*\n)*",
    re.MULTILINE,
)


def main() -> None:
    if hijax is None or not hasattr(hijax, "HiPrim"):
        print(f"jax {jax.__version__} has no jax.experimental.hijax.HiPrim (jax 0.12 on)")
        print("jext / hijax: skipped")
        return
    contenders: dict[str, Callable[..., jax.Array]] = {
        "jext": jext_softplus,
        "hijax": make_hijax_softplus(),
    }
    x = jnp.linspace(-2.0, 2.0, 8, dtype=jnp.float32)
    xs = jnp.linspace(-2.0, 2.0, 64, dtype=jnp.float32).reshape(8, 8)
    want = np.asarray(reference(x, beta=BETA))
    for fn in contenders.values():
        np.testing.assert_allclose(np.asarray(fn(x, beta=BETA)), want, rtol=1e-6)
    print(f"jax {jax.__version__}, Python {sys.version.split()[0]}, {jax.default_backend()}")

    def eager(fn: Callable[..., jax.Array]) -> Callable[[], float]:
        def run() -> float:
            t0 = time.perf_counter()
            for _ in range(EAGER_CALLS):
                out = fn(x, beta=BETA)
            out.block_until_ready()
            return (time.perf_counter() - t0) / EAGER_CALLS

        return run

    for fn in contenders.values():
        eager(fn)()  # compile the per-primitive executable
    samples = interleave({k: eager(f) for k, f in contenders.items()}, EAGER_REPS)
    report("eager call, float32[8]", samples, 1e6, "us")

    def compile_time(
        fn: Callable[..., jax.Array], wrap: Callable[[Any], Any], arg: jax.Array
    ) -> Callable[[], float]:
        def run() -> float:
            _clear_caches()
            f = wrap(chain(fn, CHAIN))
            t0 = time.perf_counter()
            jax.jit(f).trace(arg).lower().compile()
            return time.perf_counter() - t0

        return run

    wraps: list[tuple[str, Callable[[Any], Any], jax.Array]] = [
        ("jit", lambda f: f, x),
        ("jit(grad(sum))", lambda f: jax.grad(lambda v: jnp.sum(f(v))), x),
        ("jit(vmap)", jax.vmap, xs),
    ]
    for name, wrap, arg in wraps:
        calls = {k: compile_time(f, wrap, arg) for k, f in contenders.items()}
        for run in calls.values():
            run()  # first-use costs
        samples = interleave(calls, COMPILE_REPS)
        report(f"trace+lower+compile {name}, {CHAIN} calls", samples, 1e3, "ms")

    for name, wrap, arg in wraps:
        texts = [
            _NAMES.sub("", jax.jit(wrap(chain(f, 2))).lower(arg).compile().as_text() or "")
            for f in contenders.values()
        ]
        same = "identical" if texts[0] == texts[1] else "differ"
        print(f"compiled HLO of {name}, 2 calls: {same}")
        if texts[0] != texts[1] and "--diff" in sys.argv[1:]:
            lines = [t.splitlines() for t in texts]
            print("\n".join(difflib.unified_diff(lines[0], lines[1], lineterm="")))
    print("jext / hijax: ratios reported, no goal")


if __name__ == "__main__":
    main()

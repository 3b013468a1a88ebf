"""One process of tests/test_multiprocess.py: ``python multiprocess_worker.py PID PORT``.

Joins a two-process ``jax.distributed`` run on localhost (CPU, gloo collectives), runs a
sharded ``jit`` over a global mesh of both processes' devices with a jext primitive and
a jext RNG, gathers the result and prints it as hex, one line per RNG implementation.
"""

from __future__ import annotations

import sys

import jax

WORKERS = 2
ROWS, COLS = 8, 2
IMPLS = ("jext.chacha20", "jext.threefry4x64")


def inputs() -> tuple[object, ...]:
    import numpy as np

    return (np.linspace(-2.0, 2.0, ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS),)


def step(x: jax.Array, impl: str) -> jax.Array:
    """What both the distributed run and the single-process reference compute."""
    import jext
    import jext.random

    softplus = jext.get_primitive("example.softplus")
    key = jext.random.key(7, impl=impl)
    out: jax.Array = softplus(x) + jax.random.uniform(key, x.shape)
    return out


def main() -> None:
    pid, port = int(sys.argv[1]), sys.argv[2]
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=f"127.0.0.1:{port}",
        num_processes=WORKERS,
        process_id=pid,
        initialization_timeout=40,
    )
    import numpy as np
    from jax.experimental import multihost_utils
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(jax.devices()), ("x",))
    sharding = NamedSharding(mesh, PartitionSpec("x"))
    (x,) = inputs()
    rows = ROWS // WORKERS
    local = np.asarray(x)[pid * rows : (pid + 1) * rows]
    global_x = jax.make_array_from_process_local_data(sharding, local, (ROWS, COLS))
    for impl in IMPLS:
        out = jax.jit(lambda v, impl=impl: step(v, impl), out_shardings=sharding)(global_x)
        local_rows = ",".join(str(s.index[0].start) for s in out.addressable_shards)
        full = np.asarray(multihost_utils.process_allgather(out, tiled=True))
        print("RESULT", pid, impl, jax.process_count(), local_rows, full.tobytes().hex())
    jax.distributed.shutdown()


if __name__ == "__main__":
    main()

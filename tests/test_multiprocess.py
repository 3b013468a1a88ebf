"""Two processes on localhost share one global mesh: a jext primitive and a jext RNG in a
sharded ``jit`` give each process its shard of the single-process result."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests import multiprocess_worker as worker

WORKER = Path(worker.__file__)
TIMEOUT_S = 60


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def results() -> dict[tuple[int, str], list[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JEXT_", "XLA_FLAGS"))}
    env.update(JAX_PLATFORMS="cpu", PYTHONPATH=os.pathsep.join(sys.path))
    port = str(_free_port())
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(pid), port],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for pid in range(worker.WORKERS)
    ]
    outputs: list[tuple[str, str]] = []
    try:
        for proc in procs:
            outputs.append(proc.communicate(timeout=TIMEOUT_S))
    finally:
        for proc in procs:  # never leave a worker behind, whatever failed
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err[-3000:]
    found: dict[tuple[int, str], list[str]] = {}
    for out, _ in outputs:
        for line in out.splitlines():
            if line.startswith("RESULT "):
                _, pid, impl, *fields = line.split()
                found[(int(pid), impl)] = fields
    return found


@pytest.mark.parametrize("impl", worker.IMPLS)
def test_each_process_holds_its_shard_of_the_single_process_result(
    results: dict[tuple[int, str], list[str]], impl: str
) -> None:
    import jax

    (x,) = worker.inputs()
    expected = np.asarray(jax.jit(lambda v: worker.step(v, impl))(x))
    rows = worker.ROWS // worker.WORKERS
    for pid in range(worker.WORKERS):
        count, local_rows, hexed = results[(pid, impl)]
        assert count == str(worker.WORKERS)
        assert local_rows == str(pid * rows)
        gathered = np.frombuffer(bytes.fromhex(hexed), dtype=np.float32).reshape(x.shape)
        np.testing.assert_array_equal(gathered, expected)

"""The ``gpu`` marker, and the CPU as JAX's default device for every other test.

The tests not marked ``gpu`` are about the C++ handlers and the Pallas interpreter: on a
machine with a GPU, JAX's default device would run the cuda rules (the CUDA handler, the
Triton kernels, the reference) in their place, and the CPU-only ``native.counter`` would
have no rule at all.  Such a machine runs the GPU rules in the ``gpu``-marked tests.
Tests marked ``any_device`` export for every platform and keep the default device:
Pallas's Triton lowering fails where a GPU exists but the default device is the CPU.
"""

from __future__ import annotations

from collections.abc import Iterator

import jax
import pytest


def _has_gpu() -> bool:
    try:
        return bool(jax.devices("gpu"))
    except RuntimeError:  # no GPU backend in this jaxlib, or no device
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a GPU backend (jax.devices('gpu') is empty)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _on_cpu_unless_marked_gpu(request: pytest.FixtureRequest) -> Iterator[None]:
    if any(request.node.get_closest_marker(name) for name in ("gpu", "any_device")):
        yield
        return
    with jax.default_device(jax.devices("cpu")[0]):
        yield

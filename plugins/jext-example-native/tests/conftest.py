"""The ``gpu`` marker: such tests run only where jax has a GPU backend."""

from __future__ import annotations

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

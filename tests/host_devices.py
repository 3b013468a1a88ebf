"""Scripts run on four host CPU devices, in a child interpreter: XLA fixes the number of
CPU devices when its backend starts, so a test that needs a mesh runs its script apart."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_on_four_cpus(script: str | Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` (source, or a file) on the CPU backend with four devices, the
    repository first on its path and no ``JEXT_*`` variable but those in ``env``."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("JEXT_")}
    full.update(
        XLA_FLAGS="--xla_force_host_platform_device_count=4",
        JAX_PLATFORMS="cpu",
        PYTHONPATH=os.pathsep.join([str(ROOT), *(p for p in sys.path if p)]),
        **env,
    )
    command = [str(script)] if isinstance(script, Path) else ["-c", script]
    return subprocess.run(
        [sys.executable, *command], env=full, capture_output=True, text=True, check=False
    )

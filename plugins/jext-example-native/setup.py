"""Build of jext-example-native's handlers: C++ always, CUDA only where nvcc is found.

The C++ handlers are an ordinary setuptools ``Extension`` (a CPython module exposing
PyCapsules), so the compiler setuptools already drives for every C extension builds them.
The CUDA handlers are a plain shared library compiled and linked by ``nvcc`` itself;
setuptools knows no ``.cu`` files, and nvcc links the static CUDA runtime by default, so
the library needs nothing from CUDA at run time beyond the driver.

Environment: ``JEXT_NATIVE_CUDA=0`` skips the CUDA build, ``=1`` makes a missing nvcc an
error; ``NVCC`` names the compiler (default: ``nvcc`` on PATH, then ``$CUDA_HOME/bin``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent


def _ffi_include_dir() -> str:
    import jax.ffi  # a build requirement (pyproject.toml), imported only when building

    return str(jax.ffi.include_dir())


def _find_nvcc() -> str | None:
    named = os.environ.get("NVCC")
    if named:
        return named
    found = shutil.which("nvcc")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and (Path(home) / "bin" / "nvcc").is_file():
            return str(Path(home) / "bin" / "nvcc")
    return None


def _cuda_wanted() -> str | None:
    """nvcc's path if the CUDA handlers are to be built, else None (said once, on stdout)."""
    wanted = os.environ.get("JEXT_NATIVE_CUDA", "auto").strip().lower()
    if wanted in ("0", "no", "false", "off"):
        print("jext-example-native: JEXT_NATIVE_CUDA=0, CUDA handlers not built")
        return None
    nvcc = _find_nvcc()
    if nvcc is None:
        if wanted in ("1", "yes", "true", "on"):
            raise RuntimeError("JEXT_NATIVE_CUDA=1 but no nvcc found (set NVCC or CUDA_HOME)")
        print("jext-example-native: no nvcc found, CUDA handlers not built (CPU only)")
    return nvcc


NVCC = _cuda_wanted()


class BuildNative(build_ext):
    """build_ext with the FFI headers on the include path; ``.cu`` sources go to nvcc."""

    def build_extensions(self) -> None:
        include = _ffi_include_dir()
        for ext in self.extensions:
            ext.include_dirs.append(include)
        super().build_extensions()

    def build_extension(self, ext: Extension) -> None:
        if not any(src.endswith(".cu") for src in ext.sources):
            super().build_extension(ext)
            return
        # A plain shared library (loaded with ctypes, never imported), named like an
        # extension module so that setuptools installs, copies and packages it as one.
        out = Path(self.get_ext_fullpath(ext.name))
        out.parent.mkdir(parents=True, exist_ok=True)
        includes = [arg for inc in ext.include_dirs for arg in ("-I", inc)]
        cmd = [
            str(NVCC), "-shared", "-O3", "-std=c++17", "-Xcompiler", "-fPIC",
            *includes, *ext.sources, "-o", str(out),
        ]  # fmt: skip
        print("jext-example-native:", " ".join(cmd))
        subprocess.run(cmd, check=True)


CXX_ARGS = ["-std=c++17", "-O3", "-fvisibility=hidden"]

ext_modules = [
    Extension(
        "jext_example_native._native_cpu",
        sources=["csrc/native_cpu.cc", "csrc/jax_examples.cc"],
        include_dirs=["csrc"],
        language="c++",
        extra_compile_args=CXX_ARGS,
    )
]
if NVCC is not None:
    ext_modules.append(
        Extension(
            "jext_example_native._native_cuda",
            sources=["csrc/native_cuda.cu"],
            include_dirs=["csrc"],
        )
    )

setup(ext_modules=ext_modules, cmdclass={"build_ext": BuildNative})

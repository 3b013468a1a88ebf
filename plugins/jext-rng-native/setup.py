"""Build of jext-rng-native's C++ handlers: one setuptools Extension against the FFI headers.

The same build as plugins/jext-example-native's CPU part (see its README for why
setuptools): the handlers are a CPython extension module exposing PyCapsules.  No
``-march`` flag: the AVX2 kernels (csrc/generators_avx2.h) are chosen at run time,
so the module runs on any x86-64 (and builds on other architectures without it).
"""

from __future__ import annotations

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class BuildNative(build_ext):
    """build_ext with the XLA FFI headers (shipped with jaxlib) on the include path."""

    def build_extensions(self) -> None:
        import jax.ffi  # a build requirement (pyproject.toml), imported only when building

        for ext in self.extensions:
            ext.include_dirs.append(str(jax.ffi.include_dir()))
        super().build_extensions()


setup(
    ext_modules=[
        Extension(
            "jext_rng_native._native_cpu",
            sources=["csrc/rng_cpu.cc"],
            depends=["csrc/generators.h", "csrc/generators_avx2.h"],
            include_dirs=["csrc"],
            language="c++",
            extra_compile_args=["-std=c++17", "-O3", "-fvisibility=hidden"],
            extra_link_args=["-pthread"],
        )
    ],
    cmdclass={"build_ext": BuildNative},
)

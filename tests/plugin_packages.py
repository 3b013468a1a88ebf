"""Throwaway plugin distributions, built and installed for real with pip into a target folder.

Each entry is one distribution with one module and one ``jext`` entry point.  Tests put the
target folder on ``sys.path`` (or ``PYTHONPATH`` for a subprocess), so discovery goes through
real ``.dist-info`` entry points, exactly as for a ``pip install jext-myplugin``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Package:
    dist: str  # distribution name
    entry_point: str  # plugin name
    module: str
    source: str
    namespaces: tuple[str, ...] = ()  # declared in the "jext.namespaces" entry-point group


def _pkg(dist: str, source: str, namespaces: tuple[str, ...] = ()) -> Package:
    module = dist.replace("-", "_")
    return Package(dist, dist.removeprefix("jext-"), module, textwrap.dedent(source), namespaces)


GOOD = _pkg(
    "jext-fault-good",
    """
    import jax.numpy as jnp
    import jext

    IMPORTS = []
    IMPORTS.append(1)  # counts module executions: a plugin must be imported once

    @jext.primitive("faultgood.double")
    def double(x, /):
        return 2 * x

    @jext.hookimpl
    def jext_register_primitives(registry):
        registry.add(double)
    """,
    namespaces=("faultgood",),  # its name gives it "fault_good"; it defines "faultgood.*"
)

# The owner of namespace "mytrial" (its plugin name), with a primitive, an RNG and a wrapper.
MYTRIAL = _pkg(
    "jext-mytrial",
    """
    import dataclasses
    import jext
    import jext.rng_impls
    from jext.scipy import Domain, ScipyWrapper

    @jext.primitive("mytrial.shift")
    def shift(x, /):
        return x + 1

    SPLITMIX = dataclasses.replace(jext.rng_impls.PHILOX4X64, name="mytrial.philox")

    def mytrial_exprel(x):
        return x

    @jext.hookimpl
    def jext_register_primitives(registry):
        registry.add(shift)

    @jext.hookimpl
    def jext_register_rng_impls(registry):
        registry.add(SPLITMIX)

    @jext.hookimpl
    def jext_register_scipy_wrappers(registry):
        registry.add(ScipyWrapper(scope="special", name="mytrial_exprel",
                                  mirrors="scipy.special.exprel", function=mytrial_exprel,
                                  domains=(Domain(((0.0, 1.0),)),)))
    """,
)

# The fault catalog: one distribution per way a plugin can break.
FAULTS: dict[str, tuple[Package, str]] = {
    # Sorts before its victim and defines the victim's name at import.
    "namespace_impostor": (
        _pkg(
            "jext-aaa-clash",
            """
            import jext

            @jext.primitive("mytrial.shift")
            def shift(x, /):
                return x - 1

            @jext.hookimpl
            def jext_register_primitives(registry):
                registry.add(shift)
            """,
        ),
        "primitive 'mytrial.shift' is in namespace 'mytrial', which belongs to plugin "
        "'mytrial' (distribution jext-mytrial 0.1.0)",
    ),
    "namespace_claim": (
        _pkg("jext-fault-claim", "import jext\n", namespaces=("fault_good",)),
        "claims namespace 'fault_good', which belongs to plugin 'fault-good' "
        "(distribution jext-fault-good 0.1.0)",
    ),
    "outside_namespace": (
        _pkg(
            "jext-fault-outside",
            """
            import jext

            @jext.primitive("elsewhere.op")
            def op(x, /):
                return x

            @jext.hookimpl
            def jext_register_primitives(registry):
                registry.add(op)
            """,
        ),
        "primitive 'elsewhere.op' is outside its namespaces ['fault_outside'], and no plugin "
        "owns 'elsewhere'",
    ),
    "rng_in_core_namespace": (
        _pkg(
            "jext-fault-corerng",
            """
            import dataclasses
            import jext
            import jext.rng_impls

            @jext.hookimpl
            def jext_register_rng_impls(registry):
                registry.add(dataclasses.replace(jext.rng_impls.PHILOX4X64, name="jext.mine"))
            """,
        ),
        "RNG implementation 'jext.mine' is in namespace 'jext', which belongs to plugin "
        "'jext-rng' (core of jext",
    ),
    "pluggy_wrapper": (
        _pkg(
            "jext-fault-wrapper",
            """
            import jext

            @jext.hookimpl(wrapper=True)
            def jext_register_primitives(registry):
                yield
            """,
        ),
        "uses pluggy's wrapper=True, which jext does not support",
    ),
    "pluggy_tryfirst": (
        _pkg(
            "jext-fault-tryfirst",
            """
            import jext

            @jext.hookimpl(tryfirst=True)
            def jext_register_primitives(registry):
                pass
            """,
        ),
        "uses pluggy's tryfirst=True, which jext does not support",
    ),
    "import_error": (
        _pkg("jext-fault-import", "import jext\nraise ImportError('needs libfoo 2.0')\n"),
        "import failed: ImportError: needs libfoo 2.0",
    ),
    "exit_at_import": (
        _pkg("jext-fault-exit", "import sys\nsys.exit(3)\n"),
        "import failed: SystemExit: 3",
    ),
    "hook_raises": (
        _pkg(
            "jext-fault-raises",
            """
            import jext

            @jext.hookimpl
            def jext_register_primitives(registry):
                raise RuntimeError("database unreachable")
            """,
        ),
        "jext_register_primitives raised RuntimeError: database unreachable",
    ),
    "invalid_registration": (
        _pkg(
            "jext-fault-invalid",
            """
            import jext

            @jext.hookimpl
            def jext_register_primitives(registry):
                registry.add("example.softplus")
            """,
        ),
        "which is not a jext.Primitive",
    ),
    "duplicate_name": (
        _pkg(
            "jext-fault-reregister",
            """
            import jext
            from jext_fault_good import double

            @jext.hookimpl
            def jext_register_primitives(registry):
                registry.add(double)  # jext-fault-good owns it: plugins load by name
            """,
        ),
        "primitive 'faultgood.double' is in namespace 'faultgood', which belongs to plugin "
        "'fault-good' (distribution jext-fault-good 0.1.0)",
    ),
    "misspelled_hook": (
        _pkg(
            "jext-fault-misspelled",
            """
            import jext

            @jext.hookimpl
            def jext_register_primitive(registry):
                pass
            """,
        ),
        "implements unknown hook(s) ['jext_register_primitive']. Did you mean "
        "'jext_register_primitives'",
    ),
    "wrong_hook_signature": (
        _pkg(
            "jext-fault-signature",
            """
            import jext

            @jext.hookimpl
            def jext_register_primitives(registry, extra):
                pass
            """,
        ),
        "invalid hook implementation: jext_register_primitives takes ['registry', 'extra']",
    ),
    "scipy_replaces_jax_silently": (
        _pkg(
            "jext-fault-scipy",
            """
            import jext
            from jext.scipy import Domain, ScipyWrapper

            @jext.hookimpl
            def jext_register_scipy_wrappers(registry):
                registry.add(ScipyWrapper(scope="special", name="erfc",
                                          mirrors="scipy.special.erfc", function=abs,
                                          domains=(Domain(((0.0, 1.0),)),)))
            """,
        ),
        "jax.scipy.special.erfc exists; a plugin replaces it only by saying why",
    ),
    "ffi_library_missing": (
        _pkg(
            "jext-fault-ffi",
            """
            from pathlib import Path

            import jax.numpy as jnp
            import jext
            import jext.lowering

            @jext.primitive("fault_ffi.twice")
            def twice(x, /):
                return 2 * x

            twice.def_lowering(
                jext.lowering.ffi_rule("jext_fault_twice", primitive=twice), platform="cpu"
            )

            @jext.hookimpl
            def jext_register_primitives(registry):
                registry.add(twice)

            @jext.hookimpl
            def jext_register_ffi_targets(registry):
                lib = registry.load_library(Path(__file__).with_name("libjext_fault_missing.so"))
                registry.add("jext_fault_twice", lib.Twice)
            """,
        ),
        "cannot load FFI library",
    ),
    "bad_lowering_platform": (
        _pkg(
            "jext-fault-platform",
            """
            import jext

            @jext.hookimpl
            def jext_register_lowerings(registry):
                registry.add_lowering("faultgood.double", lambda x: x, platform="metal")
            """,
        ),
        "unknown platform 'metal'",
    ),
}

SCIPY_A = _pkg(
    "jext-scipy-a",
    """
    import jax.numpy as jnp
    import jext
    from jext.scipy import Domain, ScipyWrapper

    def twice(x):
        return 2 * x

    @jext.hookimpl
    def jext_register_scipy_wrappers(registry):
        registry.add(ScipyWrapper(scope="special", name="twice", mirrors="scipy.special.twice",
                                  function=twice, domains=(Domain(((0.0, 1.0),)),)))
        registry.add(ScipyWrapper(scope="special", name="erf", mirrors="scipy.special.erf",
                                  function=lambda x: jnp.tanh(x) * 0 + 7.0,
                                  domains=(Domain(((0.0, 1.0),)),),
                                  replaces_jax="returns 7, to be told apart"))
    """,
)
SCIPY_B = _pkg(
    "jext-scipy-b",
    """
    import jext
    from jext.scipy import Domain, ScipyWrapper

    @jext.hookimpl
    def jext_register_scipy_wrappers(registry):
        registry.add(ScipyWrapper(scope="special", name="twice", mirrors="scipy.special.twice",
                                  function=lambda x: x + x, domains=(Domain(((0.0, 1.0),)),)))
    """,
)

# Reads the registry while being imported (a jext.scipy call at module level).
READS_AT_IMPORT = _pkg(
    "jext-reads-at-import",
    """
    import jext
    from jext.scipy import special

    VALUE = float(special.erf(0.5))

    @jext.primitive("reads_at_import.identity")
    def identity(x, /):
        return x

    @jext.hooks.register_primitives
    def _register(registry):
        registry.add(identity)
    """,
)

UNUSED_LOWERING = _pkg(
    "jext-fault-unused",
    """
    import jext

    @jext.hookimpl
    def jext_register_lowerings(registry):
        registry.add_lowering("nobody.defines_this", lambda x: x, platform="tpu")
    """,
)

# READS_AT_IMPORT stays out: imported in-process it would load the process-wide registry.
ALL = [GOOD, MYTRIAL, UNUSED_LOWERING, SCIPY_A, SCIPY_B, *(pkg for pkg, _ in FAULTS.values())]


def build_and_install(packages: list[Package], root: Path) -> Path:
    """Write the packages under ``root/src`` and pip-install them all into ``root/site``."""
    site = root / "site"
    paths = []
    for pkg in packages:
        src = root / "src" / pkg.dist
        src.mkdir(parents=True)
        (src / f"{pkg.module}.py").write_text(pkg.source)
        namespaces = "".join(f'\n{ns} = "{pkg.module}"' for ns in pkg.namespaces)
        (src / "pyproject.toml").write_text(
            textwrap.dedent(
                f"""
                [build-system]
                requires = ["setuptools>=61"]
                build-backend = "setuptools.build_meta"

                [project]
                name = "{pkg.dist}"
                version = "0.1.0"

                [project.entry-points.jext]
                {pkg.entry_point} = "{pkg.module}"

                [project.entry-points."jext.namespaces"]{{namespaces}}

                [tool.setuptools]
                py-modules = ["{pkg.module}"]
                """
            ).replace("{namespaces}", namespaces)
        )
        paths.append(str(src))
    subprocess.run(
        [
            sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
            "--no-build-isolation", "--no-index", "--disable-pip-version-check",
            "--target", str(site), *paths,
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return site

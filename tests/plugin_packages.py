"""Throwaway plugin distributions and environments, installed for real with pip.

Each entry is one distribution with one module and one ``jext`` entry point.  Tests put the
target folder on ``sys.path`` (or ``PYTHONPATH`` for a subprocess), so discovery goes through
real ``.dist-info`` entry points, exactly as for a ``pip install jext-myplugin``.

Everything here builds with what the *running* interpreter has installed (its setuptools,
its jext), never with the base interpreter's packages: a venv made with
``--system-site-packages`` from inside another venv sees the base interpreter's
site-packages, whose setuptools may be years old (``invalid command 'bdist_wheel'``).
"""

from __future__ import annotations

import base64
import hashlib
import site
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
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

    SPLITMIX = dataclasses.replace(
        jext.rng_impls.PHILOX4X64, name="mytrial.philox", tag="mytrial_phx"
    )

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

# Meta-plugins: each registers companions with jext.register_plugin while plugins load,
# one from its hook, one from its import (with a second companion that claims the first
# meta-plugin's namespace, which must fail saying so).  ORDER records the hooks as they run.
META_HOOK = _pkg(
    "jext-meta-hook",
    """
    import jext

    ORDER = []

    @jext.primitive("meta_hook_sub.triple")
    def triple(x, /):
        return 3 * x

    class Companion:
        @jext.hookimpl
        def jext_register_primitives(self, registrar):
            ORDER.append("meta-hook-sub primitives")
            registrar.add(triple)

        @jext.hookimpl
        def jext_register_rng_impls(self, registrar):
            ORDER.append("meta-hook-sub rng_impls")

    @jext.hookimpl
    def jext_register_primitives(registrar):
        ORDER.append("meta-hook primitives")
        jext.register_plugin(Companion(), "meta-hook-sub")

    @jext.hookimpl
    def jext_register_rng_impls(registrar):
        ORDER.append("meta-hook rng_impls")
    """,
)
META_IMPORT = _pkg(
    "jext-meta-import",
    """
    import jext

    @jext.primitive("meta_import_sub.halve")
    def halve(x, /):
        return x / 2

    class Companion:
        @jext.hookimpl
        def jext_register_primitives(self, registrar):
            registrar.add(halve)

    class Thief:
        @jext.hookimpl
        def jext_register_primitives(self, registrar):
            pass

    jext.register_plugin(Companion(), "meta-import-sub")
    jext.register_plugin(Thief(), "meta-import-thief", namespaces=["meta_hook"])
    """,
)

# READS_AT_IMPORT and the meta-plugins stay out: imported in-process they would load, or
# register into, the process-wide registry.
ALL = [GOOD, MYTRIAL, UNUSED_LOWERING, SCIPY_A, SCIPY_B, *(pkg for pkg, _ in FAULTS.values())]


#: pip without network, prompts or build isolation: builds use the running setuptools.
PIP_FLAGS = (
    "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
    "--disable-pip-version-check", "--no-input",
)  # fmt: skip


def running_site_dirs() -> list[str]:
    """The running interpreter's site-packages folders (a venv's own first), no duplicates."""
    dirs = [*site.getsitepackages(), sysconfig.get_path("purelib"), sysconfig.get_path("platlib")]
    if site.ENABLE_USER_SITE:  # never inside a venv; a plain interpreter also sees --user installs
        dirs.append(site.getusersitepackages())
    return list(dict.fromkeys(dirs))


def venv_over_running(env: Path) -> Path:
    """A new venv at ``env`` that sees the running environment's packages; its python.

    It has no system site packages: a ``.pth`` file adds the running interpreter's
    site-packages with ``site.addsitedir``, which also runs the ``.pth`` files there (so
    editable installs of jext and its plugins are seen).  What is pip-installed into the
    venv comes first on its path.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    python = env / "bin" / "python"
    own = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    lines = [f"import site; site.addsitedir({d!r})" for d in running_site_dirs()]
    (Path(own) / "_jext_tests_running_env.pth").write_text("\n".join(lines) + "\n")
    return python


def pip_install(python: Path, *paths: str) -> subprocess.CompletedProcess[str]:
    """pip-install local source trees into the environment of ``python``, built offline.

    ``--ignore-installed``: a distribution of the same name in the running environment
    (seen through the ``.pth`` file) must not stop the install or be uninstalled.
    """
    return subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", *PIP_FLAGS,
         "--ignore-installed", *paths],
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip


def _wheel(pkg: Package, folder: Path) -> Path:
    """``pkg`` as a wheel in ``folder``: its module and a ``.dist-info`` with entry points.

    Written directly (a wheel is a zip with a manifest) rather than built by setuptools: a
    setuptools build per package would be most of the catalog's cost, and pip installs these as
    it installs any wheel from an index.
    """
    name = pkg.dist.replace("-", "_")
    info = f"{name}-0.1.0.dist-info"
    namespaces = "".join(f"{ns} = {pkg.module}\n" for ns in pkg.namespaces)
    files = {
        f"{pkg.module}.py": pkg.source,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {pkg.dist}\nVersion: 0.1.0\n",
        f"{info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: jext-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
        f"{info}/entry_points.txt": (
            f"[jext]\n{pkg.entry_point} = {pkg.module}\n"
            + (f"\n[jext.namespaces]\n{namespaces}" if namespaces else "")
        ),
    }
    record = []
    for path, text in files.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}\n")
    files[f"{info}/RECORD"] = "".join(record) + f"{info}/RECORD,,\n"
    wheel = folder / f"{name}-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return wheel


def build_and_install(packages: list[Package], root: Path) -> Path:
    """Write the packages as wheels under ``root/wheels`` and pip-install them all into
    ``root/site``."""
    target = root / "site"
    wheels = root / "wheels"
    wheels.mkdir(parents=True)
    paths = [str(_wheel(pkg, wheels)) for pkg in packages]
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", *PIP_FLAGS, "--target", str(target), *paths],
        capture_output=True,
        text=True,
        check=False,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return target

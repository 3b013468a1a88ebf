"""Plugin-system overhead of jext: what ``import jext`` and ``jext.load_plugins()`` cost.

Run from the repository root (jext installed, e.g. ``pip install -e .``)::

    python bench/bench_plugins.py

Every timing is taken in a fresh Python subprocess, with the ``JEXT_*`` environment
variables removed and a private bytecode cache (``PYTHONPYCACHEPREFIX`` in a temporary
folder, ``PYTHONDONTWRITEBYTECODE`` unset), so that jext's modules are imported from
``.pyc`` files as in any installed package even where the environment disables writing
bytecode; a first, untimed run fills the cache.  Two measurements, each printing
``GOAL MET`` or ``GOAL MISSED`` with its numbers:

1. ``import jext`` over ``import jax``: each subprocess times ``import jax`` and then
   ``import jext`` with ``time.perf_counter`` (both contenders measured back to back in
   the same process); medians over the repetitions of the difference (goal: at most
   30 ms) and of the ratio (import jax + jext) / (import jax).  Interleaved with them,
   fewer runs with the 200 dummy plugins of measurement 2 on ``PYTHONPATH`` (info).  A
   probe run (dummies on the path) reports whether ``import jext`` imported any plugin
   module or scanned installed distributions for entry points (it must do neither;
   ``importlib.metadata.Distribution.discover``, which every scan goes through, is
   wrapped to record each scan's group and caller); ``jext.load_plugins()`` afterwards
   must trip the same probes, which shows that they work.
2. ``jext.load_plugins()`` with 200 installed dummy plugin distributions.  The benchmark
   writes 200 wheels (``jext-dummy-000`` ... ``jext-dummy-199``; one module each, which
   defines one ``jext.primitive`` named ``dummy_<i>.op`` at module level (inside the
   namespace ``dummy_<i>`` that its entry point ``dummy-<i>`` owns) and registers it
   in ``@jext.hookimpl jext_register_primitives``) directly with ``zipfile`` (standard
   layout: METADATA, WHEEL, entry_points.txt, RECORD with hashes) -- building them from
   source with setuptools takes over a second each, too slow for 200 -- and installs them
   all for real with ONE ``pip install --no-deps --no-build-isolation --no-index --target
   DIR --no-compile`` call, so pip itself writes the ``.dist-info`` folders (INSTALLER,
   RECORD, ...).
   Then, with ``PYTHONPATH=DIR``, subprocesses of two kinds, alternating, each after
   ``import jax`` and ``import jext`` (not timed), time

   (a) ``jext.load_plugins()``;
   (b) the baseline: ``importlib.metadata.entry_points(group="jext")`` plus ``ep.load()``
       for each entry point, i.e. the scan plus the plugins' own import time (which
       includes defining their primitives).

   Other ``jext`` plugins installed in the environment (e.g. the example plugins) are
   discovered and loaded by both.  Goal: (a)/(b) at most 1.2x, judged on the median of
   the per-pair ratios (each (a) run next to its (b) run); the ratio of the medians is
   printed too.

The machine may be shared and noisy: read the medians and ratios, not single runs.  A
missed goal also prints where the time goes (step timings and ``-X importtime`` for the
import, cProfile for loading).  The whole run takes about two minutes.

``--smoke`` (what ``tests/test_bench.py`` runs): 3 dummies, one repetition, no warm-up and no
diagnosis of a missed goal, so that every measurement runs end to end in seconds; its figures
mean nothing.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import zipfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

IMPORT_GOAL_MS = 30.0
IMPORT_REPS = 15
INFO_EVERY = 3  # an informative import variant runs every third repetition
DIAGNOSE_REPS = 3

N_PLUGINS = 200
LOAD_GOAL = 1.2
LOAD_REPS = 12  # (a)/(b) pairs

SMOKE = "--smoke" in sys.argv[1:]
if SMOKE:
    N_PLUGINS, IMPORT_REPS, LOAD_REPS, DIAGNOSE_REPS = 3, 1, 1, 1

DUMMY_SOURCE = """\
import jext


@jext.primitive("dummy_{i:03d}.op")  # in the namespace its plugin name owns
def op(x, /):
    return x


@jext.hookimpl
def jext_register_primitives(registry):
    registry.add(op)
"""

IMPORT_SCRIPT = """\
import json, time
t0 = time.perf_counter()
import jax
t1 = time.perf_counter()
import jext
t2 = time.perf_counter()
print(json.dumps([t1 - t0, t2 - t1]))
"""

# Which entry-point scans and plugin imports do `import jax`, `import jext` and
# `jext.load_plugins()` each cause?  argv[1] is jext's package folder.
PROBE_SCRIPT = """\
import importlib.metadata as md, json, os, sys

JEXT_DIR = sys.argv[1] + os.sep
METADATA_FILE = md.__file__
scans = []
_discover = md.Distribution.discover.__func__

def short(frame):
    return "/".join(frame.f_code.co_filename.split(os.sep)[-3:]) + f":{frame.f_lineno}"

def discover(cls, **kwargs):
    group = caller = culprit = None
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename == METADATA_FILE:
            if frame.f_code.co_name == "entry_points":
                group = frame.f_locals.get("params", {}).get("group")
        elif caller is None and not filename.startswith("<"):
            caller = short(frame)
        if culprit is None and filename.startswith(JEXT_DIR):
            culprit = short(frame)
        frame = frame.f_back
    scans.append({"group": group, "caller": caller, "jext_line": culprit})
    return _discover(cls, **kwargs)

md.Distribution.discover = classmethod(discover)

import jax
jax_scans = list(scans)
scans.clear()
import jext
import_scans = list(scans)
import_modules = set(sys.modules)
scans.clear()
jext.load_plugins()
load_scans = list(scans)
eps = md.entry_points(group="jext")
plugin_modules = {ep.module for ep in eps}
print(json.dumps({
    "entry_points": len(eps),
    "dummies": sum(ep.name.startswith("dummy-") for ep in eps),
    "jax_scans": jax_scans,
    "import_scans": import_scans,
    "import_plugin_modules": sorted(import_modules & plugin_modules),
    "load_scans": load_scans,
    "load_plugin_modules": len(set(sys.modules) & plugin_modules),
}))
"""

# `import jax; import jext` cut into steps, each timed after the previous ones: what JAX
# work `import jext` triggers, and what is left for jext's own modules.
IMPORT_STEPS: list[tuple[str, str]] = [
    ("import jax", "import jax"),
    (
        "JAX backend init + first computation (`jnp.zeros(())`)",
        "import jax.numpy as jnp; jnp.zeros(())",
    ),
    ("import jax.extend.core (all of jax.extend, pallas too)", "import jax.extend.core"),
    ("import pluggy", "import pluggy"),
    ("import jext (the rest: jext's own modules)", "import jext"),
]

STEPS_SCRIPT = """\
import json, sys, time
times = []
for code in json.loads(sys.argv[1]):
    t0 = time.perf_counter()
    exec(code)
    times.append(time.perf_counter() - t0)
print(json.dumps(times))
"""

LOAD_SCRIPT = """\
import json, time
import jax
import jext
t0 = time.perf_counter()
jext.load_plugins()
t1 = time.perf_counter()
reg = jext._registry.registry()
print(json.dumps({
    "seconds": t1 - t0,
    "plugins": len(reg.plugins()),
    "loaded": sum(p.status == "loaded" for p in reg.plugins()),
    "dummy_primitives": sum(n.startswith("dummy") for n in jext.primitives()),
    "problems": reg.problems(),
}))
"""

BASELINE_SCRIPT = """\
import json, time
import jax
import jext
from importlib.metadata import entry_points
t0 = time.perf_counter()
modules = [ep.load() for ep in entry_points(group="jext")]
t1 = time.perf_counter()
print(json.dumps({"seconds": t1 - t0, "plugins": len(modules)}))
"""

PROFILE_SCRIPT = """\
import cProfile, sys
import jax
import jext
cProfile.run("jext.load_plugins()", sys.argv[1])
"""

_METADATA = "importlib/metadata/__init__.py"

# (label, file path suffix, function name) of the cProfile entries worth reporting.
PROFILE_PARTS: list[tuple[str, str, str]] = [
    ("entry_points(group='jext') scan [baseline too]", _METADATA, "entry_points"),
    ("EntryPoint.load: plugin imports [baseline too]", _METADATA, "load"),
    ("Distribution.name (parses METADATA)", _METADATA, "name"),
    ("Distribution.version (parses METADATA again)", _METADATA, "version"),
    ("pluggy PluginManager.register", "pluggy/_manager.py", "register"),
    ("pluggy PluginManager.get_hookcallers", "pluggy/_manager.py", "get_hookcallers"),
    ("Registry._run_hooks (hooks + commits)", "jext/_registry.py", "_run_hooks"),
    ("  of which HookCaller.call (runs hooks)", "jext/_hookcall.py", "call"),
    ("HookCaller.implementations (finds impls)", "jext/_hookcall.py", "implementations"),
]


# --- helpers -------------------------------------------------------------------------------


def _env(pycache: Path, pythonpath: Path | None = None) -> dict[str, str]:
    """This environment without ``JEXT_*``, bytecode cached under ``pycache``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JEXT_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(pythonpath), env.get("PYTHONPATH")) if p
        )
    return env


def _python(
    args: list[str], env: dict[str, str], *, show_stderr: bool = True
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"subprocess {args[:2]} failed:\n{proc.stderr}")
    if proc.stderr and show_stderr:
        print(textwrap.indent(proc.stderr.rstrip(), "   stderr: "))
    return proc


def _run_json(script: str, env: dict[str, str], *args: str) -> Any:
    return json.loads(_python(["-c", script, *args], env).stdout.splitlines()[-1])


def _paired_ratio(a: list[float], b: list[float]) -> float:
    """Median of per-repetition ratios a/b (each pair measured back to back)."""
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


def _spread_ms(samples: list[float]) -> str:
    if len(samples) < 2:
        return f"{samples[0] * 1e3:7.1f} ms"
    q1, median, q3 = (q * 1e3 for q in statistics.quantiles(samples, n=4))
    return f"{median:7.1f} ms (middle half {q1:.1f}..{q3:.1f})"


def _goal(met: bool) -> str:
    return "GOAL MET" if met else "GOAL MISSED"


def _jext_dir() -> str:
    spec = importlib.util.find_spec("jext")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("jext is not installed")
    return str(Path(next(iter(spec.submodule_search_locations))).resolve())


# --- the dummy plugins ---------------------------------------------------------------------


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"sha256={digest.decode()}"


def _write_wheel(i: int, folder: Path) -> Path:
    """A pure-Python wheel for distribution ``jext-dummy-<i>``, written with zipfile."""
    dist, module = f"jext-dummy-{i:03d}", f"jext_dummy_{i:03d}"
    info = f"{module}-0.1.0.dist-info"
    files = {
        f"{module}.py": DUMMY_SOURCE.format(i=i),
        f"{info}/METADATA": (
            f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1.0\nRequires-Dist: jext\n\n"
        ),
        f"{info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: bench_plugins\nRoot-Is-Purelib: true\n"
            "Tag: py3-none-any\n\n"
        ),
        f"{info}/entry_points.txt": f"[jext]\ndummy-{i:03d} = {module}\n",
    }
    blobs = {name: text.encode() for name, text in files.items()}
    record = "".join(f"{n},{_record_hash(b)},{len(b)}\n" for n, b in blobs.items())
    blobs[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    wheel = folder / f"{module}-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in blobs.items():
            zf.writestr(name, data)
    return wheel


def install_dummies(root: Path) -> Path:
    """Write ``N_PLUGINS`` dummy wheels and pip-install them with one call; the target."""
    wheels_dir, site = root / "wheels", root / "site"
    wheels_dir.mkdir()
    t0 = time.perf_counter()
    wheels = [_write_wheel(i, wheels_dir) for i in range(N_PLUGINS)]
    t1 = time.perf_counter()
    subprocess.run(
        [
            sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
            "--no-build-isolation", "--no-index", "--disable-pip-version-check",
            "--no-compile",  # the timed runs keep their bytecode in a cache of their own
            "--target", str(site), *map(str, wheels),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    t2 = time.perf_counter()
    infos = sorted(site.glob("jext_dummy_*.dist-info"))
    installers = {
        (d / "INSTALLER").read_text().strip() for d in infos if (d / "INSTALLER").exists()
    }
    print(
        f"setup: wrote {len(wheels)} dummy wheels with zipfile in {t1 - t0:.2f} s; one `pip "
        f"install --no-deps --no-build-isolation --no-index --target DIR --no-compile` "
        f"installed them in "
        f"{t2 - t1:.1f} s: {len(infos)} .dist-info folders, INSTALLER "
        f"{', '.join(sorted(installers)) or 'missing'}"
    )
    if len(infos) != N_PLUGINS:
        raise RuntimeError(f"expected {N_PLUGINS} installed dummies, found {len(infos)}")
    return site


# --- 1. import jext ------------------------------------------------------------------------


def _describe_scans(scans: list[dict[str, str | None]]) -> str:
    if not scans:
        return "none"
    return "; ".join(
        f"group {s['group']!r} from {s['caller']}"
        + (f", triggered by {s['jext_line']}" if s["jext_line"] else "")
        for s in scans
    )


def _diagnose_import(pycache: Path) -> None:
    """Step timings of ``import jax; import jext``, and jext's own modules by self time."""
    env = _env(pycache)
    codes = json.dumps([code for _, code in IMPORT_STEPS])
    runs = [_run_json(STEPS_SCRIPT, env, codes) for _ in range(DIAGNOSE_REPS)]
    print(f"   where the time goes: the same imports cut into steps (medians of {len(runs)} runs)")
    for k, (label, _) in enumerate(IMPORT_STEPS):
        print(f"     {label:<56} {statistics.median(r[k] for r in runs) * 1e3:7.1f} ms")

    setup = "; ".join(code for _, code in IMPORT_STEPS[:-1])
    err = _python(["-X", "importtime", "-c", f"{setup}; import jext"], env, show_stderr=False)
    rows: list[tuple[int, str]] = []  # self us, module; the last top-level import is jext's
    for line in reversed(err.stderr.splitlines()):
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _, name = line.removeprefix("import time:").split("|")
        if rows and not name.startswith("  "):
            break
        rows.append((int(self_us), name.strip()))
    top = sorted(rows, reverse=True)[:6]
    print(
        f"     -X importtime of that last step: {len(rows)} modules; by self time: "
        + ", ".join(f"{name} {us / 1e3:.1f} ms" for us, name in top)
    )


def bench_import(site: Path, pycache: Path) -> bool:
    cached, with_dummies = _env(pycache), _env(pycache, site)
    if not SMOKE:
        _run_json(IMPORT_SCRIPT, cached)  # warm-up: fills the bytecode cache (jax's too)
        _run_json(IMPORT_SCRIPT, with_dummies)
    contenders = {"main": cached, "dummies": with_dummies}
    samples: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in contenders}
    for rep in range(IMPORT_REPS):
        names = ["main", "dummies"] if rep % INFO_EVERY == 0 else ["main"]
        for name in names if rep % 2 else names[::-1]:
            t_jax, t_jext = _run_json(IMPORT_SCRIPT, contenders[name])
            samples[name][0].append(float(t_jax))
            samples[name][1].append(float(t_jext))

    jax_s, jext_s = samples["main"]
    delta_ms = statistics.median(jext_s) * 1e3
    ratio = statistics.median((a + b) / a for a, b in zip(jax_s, jext_s, strict=True))
    print(f"1. `import jext` after `import jax`, medians of {IMPORT_REPS} fresh subprocesses")
    print(f"   import jax                 {_spread_ms(jax_s)}")
    print(f"   then import jext           {_spread_ms(jext_s)}")
    print(f"   (import jax + jext) / (import jax) = {ratio:.3f}x (median of per-run ratios)")
    runs = samples["dummies"][1]
    print(
        f"   info: import jext with the {N_PLUGINS} dummies on PYTHONPATH: "
        f"{statistics.median(runs) * 1e3:.1f} ms (median of {len(runs)})"
    )

    probe = _run_json(PROBE_SCRIPT, with_dummies, _jext_dir())
    plugin_mods = probe["import_plugin_modules"]
    scans = probe["import_scans"]
    lazy = not scans and not plugin_mods
    load_groups = sorted({str(s["group"]) for s in probe["load_scans"]})
    print(
        f"   probe, {probe['entry_points']} jext entry points installed ({probe['dummies']} "
        f"dummies), `import jext` after `import jax`:"
    )
    print(f"     plugin modules imported: {', '.join(plugin_mods) or 'none'}")
    print(f"     entry-point scans: {_describe_scans(probe['import_scans'])}")
    print(
        f"     (probe check: `import jax` alone scanned {len(probe['jax_scans'])}x; "
        f"jext.load_plugins() then scanned {len(probe['load_scans'])}x, groups "
        f"{', '.join(load_groups)}, and imported {probe['load_plugin_modules']} plugin modules)"
    )
    met = delta_ms <= IMPORT_GOAL_MS and lazy
    if not met and not SMOKE:
        _diagnose_import(pycache)
    groups = ", ".join(sorted({repr(s["group"]) for s in scans}))
    laziness = f"imports {len(plugin_mods)} plugin module(s) and scans entry points " + (
        f"{len(scans)}x (group {groups})" if scans else "0x"
    )
    print(
        f"   {_goal(met)}: `import jext` adds {delta_ms:.1f} ms to `import jax` ({ratio:.3f}x; "
        f"goal <= {IMPORT_GOAL_MS:.0f} ms) and {laziness} (goal: 0 and 0x)"
    )
    return met


# --- 2. load_plugins -----------------------------------------------------------------------


def _profile_load(env: dict[str, str], root: Path) -> None:
    """cProfile of one ``jext.load_plugins()``: the parts that matter, by cumulative time."""
    out = root / "load.prof"
    _python(["-c", PROFILE_SCRIPT, str(out)], env)
    # pstats keeps its table untyped: {(file, line, function): (cc, calls, tottime, cumtime, _)}
    stats: Any = pstats.Stats(str(out))
    table: dict[tuple[str, int, str], tuple[Any, ...]] = stats.stats

    def cumulative(suffix: str, function: str) -> tuple[float, int]:
        hits = [
            (float(v[3]), int(v[1]))
            for (filename, _, name), v in table.items()
            if name == function and filename.replace(os.sep, "/").endswith(suffix)
        ]
        return max(hits, default=(0.0, 0))

    total, _ = cumulative("jext/_registry.py", "load_plugins")
    print(f"   cProfile of one jext.load_plugins() ({total * 1e3:.0f} ms under the profiler):")
    shared = 0.0
    for label, suffix, function in PROFILE_PARTS:
        seconds, calls = cumulative(suffix, function)
        if "[baseline too]" in label:
            shared += seconds
        print(
            f"     {label:<48} {seconds * 1e3:7.1f} ms {seconds / total:5.1%} in {calls:4d} calls"
        )
    print(
        f"     jext's own share (total - the [baseline too] parts)  "
        f"{(total - shared) * 1e3:7.1f} ms {(total - shared) / total:5.1%}"
    )


def bench_load(site: Path, pycache: Path, root: Path) -> bool:
    env = _env(pycache, site)
    contenders = [("load_plugins", LOAD_SCRIPT), ("baseline", BASELINE_SCRIPT)]
    for _, script in contenders if not SMOKE else ():  # warm-up: bytecode cache, page cache
        _run_json(script, env)
    samples: dict[str, list[float]] = {name: [] for name, _ in contenders}
    last: dict[str, Any] = {}
    for rep in range(LOAD_REPS):
        for name, script in contenders if rep % 2 == 0 else contenders[::-1]:
            last[name] = _run_json(script, env)
            samples[name].append(float(last[name]["seconds"]))
    loaded, base = last["load_plugins"], last["baseline"]
    if loaded["dummy_primitives"] != N_PLUGINS or loaded["problems"]:
        raise RuntimeError(f"the dummy plugins did not all load: {loaded}")

    a, b = samples["load_plugins"], samples["baseline"]
    ratio = _paired_ratio(a, b)
    of_medians = statistics.median(a) / statistics.median(b)
    per_plugin_ms = (statistics.median(a) - statistics.median(b)) * 1e3 / loaded["plugins"]
    print(
        f"2. loading {loaded['plugins']} installed plugins ({N_PLUGINS} dummies), medians of "
        f"{LOAD_REPS} alternating fresh subprocesses each"
    )
    print(
        f"   (a) jext.load_plugins()         {_spread_ms(a)}  "
        f"[{loaded['loaded']} loaded, {loaded['dummy_primitives']} dummy primitives]"
    )
    print(f"   (b) entry_points() + ep.load()  {_spread_ms(b)}  [{base['plugins']} modules]")
    print(
        f"   (a)/(b) = {ratio:.3f}x (median of paired ratios; ratio of medians "
        f"{of_medians:.3f}x); jext adds {per_plugin_ms:.2f} ms per plugin"
    )
    met = ratio <= LOAD_GOAL
    if not met and not SMOKE:
        _profile_load(env, root)
    print(
        f"   {_goal(met)}: load_plugins/baseline {ratio:.3f}x ({statistics.median(a) * 1e3:.1f} "
        f"vs {statistics.median(b) * 1e3:.1f} ms; goal <= {LOAD_GOAL:.1f}x)"
    )
    return met


def main() -> int:
    print(
        f"jax {version('jax')}, jext {version('jext')}, pluggy {version('pluggy')}, "
        f"python {sys.version.split()[0]}; PYTHONDONTWRITEBYTECODE="
        f"{os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r} here, the timed runs use a "
        "private bytecode cache"
    )
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="jext-bench-plugins-") as tmp:
        root = Path(tmp)
        pycache = root / "pycache"
        site = install_dummies(root)
        results = [bench_import(site, pycache)]
        print(f"   ({time.perf_counter() - start:.0f} s so far)")
        results.append(bench_load(site, pycache, root))
    print(f"goals met: {sum(results)}/{len(results)} (total {time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

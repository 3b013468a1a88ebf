"""Plugin-system overhead of jext: what ``import jext`` and ``jext.load_plugins()`` cost.

Run from the repository root (jext installed, e.g. ``pip install -e .``)::

    python bench/bench_plugins.py

Every timing is taken in a fresh Python subprocess (so nothing is cached in-process), the
``JEXT_*`` environment variables removed.  Two measurements, each printing ``GOAL MET`` or
``GOAL MISSED`` with its numbers:

1. ``import jext`` over ``import jax``: each subprocess times ``import jax`` and then
   ``import jext`` with ``time.perf_counter`` (so both contenders are measured in the same
   process, back to back); medians over the repetitions of the difference (goal: at most
   30 ms) and of the ratio (import jax + jext) / (import jax).  A separate check run, with
   the 200 dummy plugins of measurement 2 on the path, reports whether ``import jext``
   imported any plugin module or scanned installed distributions (it must do neither;
   ``importlib.metadata.Distribution.discover``, which every entry-point scan goes through,
   is wrapped to count calls); after ``jext.load_plugins()`` the same probes must fire,
   which shows that they work.
2. ``jext.load_plugins()`` with 200 installed dummy plugin distributions.  The benchmark
   writes 200 wheels (``jext-dummy-000`` ... ``jext-dummy-199``; one module each, which
   defines one ``jext.primitive`` named ``dummy<i>.op`` at module level and registers it in
   ``@jext.hookimpl jext_register_primitives``) directly with ``zipfile`` (standard layout:
   METADATA, WHEEL, entry_points.txt, RECORD with hashes) -- building them from source with
   setuptools takes over a second each, too slow for 200 -- and installs them all for real
   with ONE ``pip install --no-deps --no-build-isolation --no-index --target DIR`` call, so
   pip writes the ``.dist-info`` folders (INSTALLER, RECORD, ...) and byte-compiles the
   modules as for any ``pip install``.  Then, with ``PYTHONPATH=DIR``, subprocesses of two
   kinds, alternating, each after ``import jax`` and ``import jext`` (not timed) time

   (a) ``jext.load_plugins()``;
   (b) the baseline: ``importlib.metadata.entry_points(group="jext")`` plus ``ep.load()``
       for each entry point, i.e. the scan plus the plugins' own import time (which
       includes defining their primitives).

   Any other ``jext`` plugins installed in the environment (e.g. the example plugins)
   are discovered and loaded by both.  Goal: (a)/(b) at most 1.2x, judged on the median
   of the per-pair ratios (each (a) run next to its (b) run); the ratio of the medians
   is printed too.

The machine may be shared and noisy: read the medians and ratios, not single runs.  A
missed goal also prints where the time goes (``-X importtime`` for the import, cProfile
for loading).  The whole run takes one to two minutes.
"""

from __future__ import annotations

import base64
import hashlib
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

N_PLUGINS = 200
LOAD_GOAL = 1.2
LOAD_REPS = 15  # (a)/(b) pairs

PROFILE_LINES = 14

DUMMY_SOURCE = """\
import jext


@jext.primitive("dummy{i}.op")
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

# Does `import jext` scan distributions or import a plugin?  Then the same after loading,
# to show that the probes detect both.
PROBE_SCRIPT = """\
import importlib.metadata as md, json, sys

scans = []
_discover = md.Distribution.discover.__func__

def discover(cls, **kwargs):
    scans.append(1)
    return _discover(cls, **kwargs)

md.Distribution.discover = classmethod(discover)

import jax
import jext

import_scans, import_modules = len(scans), set(sys.modules)
eps = md.entry_points(group="jext")
plugin_modules = {ep.module for ep in eps}
scans.clear()
jext.load_plugins()
print(json.dumps({
    "entry_points": len(eps),
    "dummies": sum(ep.name.startswith("dummy-") for ep in eps),
    "import_scans": import_scans,
    "import_plugin_modules": sorted(import_modules & plugin_modules),
    "load_scans": len(scans),
    "load_plugin_modules": len(set(sys.modules) & plugin_modules),
}))
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


# --- helpers -------------------------------------------------------------------------------


def _env(pythonpath: Path | None = None) -> dict[str, str]:
    """This environment without ``JEXT_*`` variables, ``pythonpath`` prepended if given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JEXT_")}
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(pythonpath), env.get("PYTHONPATH")) if p
        )
    return env


def _python(
    args: list[str], env: dict[str, str], *, stderr: bool = False
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"subprocess {args[:2]} failed:\n{proc.stderr}")
    if proc.stderr and not stderr:
        print(textwrap.indent(proc.stderr.rstrip(), "   stderr: "))
    return proc


def _run_json(script: str, env: dict[str, str]) -> Any:
    return json.loads(_python(["-c", script], env).stdout.splitlines()[-1])


def _paired_ratio(a: list[float], b: list[float]) -> float:
    """Median of per-repetition ratios a/b (each pair measured back to back)."""
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


def _spread_ms(samples: list[float]) -> str:
    q1, median, q3 = (q * 1e3 for q in statistics.quantiles(samples, n=4))
    return f"{median:7.1f} ms (middle half {q1:.1f}..{q3:.1f})"


def _goal(met: bool) -> str:
    return "GOAL MET" if met else "GOAL MISSED"


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
            "--target", str(site), *map(str, wheels),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    t2 = time.perf_counter()
    infos = sorted(site.glob("jext_dummy_*.dist-info"))
    installer = {(d / "INSTALLER").read_text().strip() for d in infos if (d / "INSTALLER").exists()}
    print(
        f"setup: wrote {len(wheels)} dummy wheels with zipfile in {t1 - t0:.2f} s, installed "
        f"them with one `pip install --no-deps --no-build-isolation --no-index --target` "
        f"in {t2 - t1:.1f} s -> {len(infos)} .dist-info folders (INSTALLER: "
        f"{', '.join(sorted(installer)) or 'none'})"
    )
    if len(infos) != N_PLUGINS:
        raise RuntimeError(f"expected {N_PLUGINS} installed dummies, found {len(infos)}")
    return site


# --- 1. import jext ------------------------------------------------------------------------


def _importtime_breakdown(env: dict[str, str]) -> None:
    """The modules that ``import jext`` brings in, by cumulative time (one -X importtime run)."""
    err = _python(["-X", "importtime", "-c", "import jax; import jext"], env, stderr=True).stderr
    rows: list[tuple[int, int, int, str]] = []  # self us, cumulative us, depth, module
    after_jax = False
    for line in err.splitlines():
        if not line.startswith("import time:") or "|" not in line or "self [us]" in line:
            continue
        self_field, cum_field, name = line.removeprefix("import time:").split("|")
        depth = (len(name) - len(name.lstrip()) - 1) // 2
        if after_jax:
            rows.append((int(self_field), int(cum_field), depth, name.strip()))
        elif name.strip() == "jax" and depth == 0:
            after_jax = True
    total = sum(r[0] for r in rows)
    print(f"   where `import jext` spends its time (-X importtime, one run, {total / 1e3:.0f} ms):")
    by_package: dict[str, int] = {}
    for self_us, _, _, name in rows:
        parts = name.split(".")
        key = ".".join(parts[:3] if parts[0] in ("jax", "jaxlib") else parts[:1])
        by_package[key] = by_package.get(key, 0) + self_us
    top = sorted(by_package.items(), key=lambda kv: -kv[1])[:8]
    print("     self time by package: " + ", ".join(f"{k} {v / 1e3:.0f} ms" for k, v in top))
    top_level = [r for r in rows if r[2] <= 1]
    print("     top-level imports (cumulative): " + ", ".join(
        f"{name} {cum / 1e3:.0f} ms" for _, cum, _, name in
        sorted(top_level, key=lambda r: -r[1])[:8]
    ))  # fmt: skip


def bench_import(site: Path) -> bool:
    env = _env()
    _run_json(IMPORT_SCRIPT, env)  # warm-up: page cache, .pyc files
    jax_s: list[float] = []
    jext_s: list[float] = []
    for _ in range(IMPORT_REPS):
        t_jax, t_jext = _run_json(IMPORT_SCRIPT, env)
        jax_s.append(float(t_jax))
        jext_s.append(float(t_jext))
    ratios = [(a + b) / a for a, b in zip(jax_s, jext_s, strict=True)]
    delta_ms = statistics.median(jext_s) * 1e3
    ratio = statistics.median(ratios)

    print(f"1. `import jext` after `import jax`, medians of {IMPORT_REPS} fresh subprocesses")
    print(f"   import jax          {_spread_ms(jax_s)}")
    print(f"   then import jext    {_spread_ms(jext_s)}")
    print(f"   (import jax + jext) / (import jax) = {ratio:.3f}x (median of per-run ratios)")

    probe = _run_json(PROBE_SCRIPT, _env(site))
    clean = not probe["import_scans"] and not probe["import_plugin_modules"]
    print(
        f"   `import jext` with {probe['entry_points']} jext entry points installed "
        f"({probe['dummies']} dummies): {probe['import_scans']} distribution scans, "
        f"plugin modules imported: {probe['import_plugin_modules'] or 'none'}"
        f" -> {'lazy, as required' if clean else 'NOT LAZY'}"
    )
    print(
        f"   (probe check: jext.load_plugins() then made {probe['load_scans']} scan(s) and "
        f"imported {probe['load_plugin_modules']} plugin modules)"
    )
    met = delta_ms <= IMPORT_GOAL_MS and clean
    if not met:
        _importtime_breakdown(env)
    print(
        f"   {_goal(met)}: `import jext` adds {delta_ms:.1f} ms to `import jax` "
        f"({ratio:.3f}x; goal <= {IMPORT_GOAL_MS:.0f} ms) and "
        f"{'loads no plugin' if clean else 'LOADS PLUGINS'} at import"
    )
    return met


# --- 2. load_plugins -----------------------------------------------------------------------


def _profile_load(env: dict[str, str], root: Path) -> None:
    out = root / "load.prof"
    _python(["-c", PROFILE_SCRIPT, str(out)], env)
    stats = pstats.Stats(str(out))
    total: float = stats.total_tt  # type: ignore[attr-defined]
    print(f"   cProfile of jext.load_plugins() (one run, {total * 1e3:.0f} ms under the profiler),")
    print("   top functions by cumulative time:")
    entries: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    rows = sorted(entries.items(), key=lambda kv: -kv[1][3])
    for (filename, line, func), (_, ncalls, tottime, cumtime, _) in rows[:PROFILE_LINES]:
        where = "/".join(Path(filename).parts[-2:]) if filename != "~" else "builtin"
        print(
            f"     {cumtime * 1e3:7.1f} ms cum {tottime * 1e3:6.1f} ms self {ncalls:6d}x "
            f"{where}:{line}({func})"
        )


def bench_load(site: Path, root: Path) -> bool:
    env = _env(site)
    contenders = [("load_plugins", LOAD_SCRIPT), ("baseline", BASELINE_SCRIPT)]
    for _, script in contenders:  # warm-up: page cache, .pyc files
        first = _run_json(script, env)
    samples: dict[str, list[float]] = {name: [] for name, _ in contenders}
    checked: dict[str, Any] = {}
    for rep in range(LOAD_REPS):
        order = contenders if rep % 2 == 0 else contenders[::-1]
        for name, script in order:
            result = _run_json(script, env)
            samples[name].append(float(result["seconds"]))
            checked[name] = result
    loaded, base = checked["load_plugins"], checked["baseline"]
    if loaded["dummy_primitives"] != N_PLUGINS or loaded["problems"]:
        raise RuntimeError(f"the dummy plugins did not all load: {loaded}")
    del first

    a, b = samples["load_plugins"], samples["baseline"]
    ratio = _paired_ratio(a, b)
    of_medians = statistics.median(a) / statistics.median(b)
    print(
        f"2. loading {loaded['plugins']} installed plugins ({N_PLUGINS} dummies), medians of "
        f"{LOAD_REPS} alternating fresh subprocesses each"
    )
    print(
        f"   (a) jext.load_plugins()          {_spread_ms(a)}  "
        f"[{loaded['loaded']} loaded, {loaded['dummy_primitives']} dummy primitives]"
    )
    print(f"   (b) entry_points() + ep.load()   {_spread_ms(b)}  [{base['plugins']} modules]")
    per_plugin_ms = (statistics.median(a) - statistics.median(b)) * 1e3 / loaded["plugins"]
    print(
        f"   (a)/(b) = {ratio:.3f}x (median of paired ratios; ratio of medians "
        f"{of_medians:.3f}x); jext's own share {per_plugin_ms:.2f} ms per plugin"
    )
    met = ratio <= LOAD_GOAL
    if not met:
        _profile_load(env, root)
    print(
        f"   {_goal(met)}: load_plugins/baseline {ratio:.3f}x ({statistics.median(a) * 1e3:.1f} "
        f"vs {statistics.median(b) * 1e3:.1f} ms; goal <= {LOAD_GOAL:.1f}x)"
    )
    return met


def main() -> int:
    print(
        f"jax {version('jax')}, jext {version('jext')}, pluggy {version('pluggy')}, "
        f"python {sys.version.split()[0]}"
    )
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="jext-bench-plugins-") as tmp:
        root = Path(tmp)
        site = install_dummies(root)
        results = [bench_import(site), bench_load(site, root)]
    print(f"goals met: {sum(results)}/{len(results)} (total {time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``jext check``'s cache folder: compiled programs and slow oracles' values are read back
by a later run, stay apart where anything they depend on changed, and never change a
report (a wrong rule fails warm as it does cold)."""

from __future__ import annotations

import errno
import functools
import importlib
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jext._cli import main as cli_main
from jext.testing import _cache
from jext.testing._cache import cached_oracle, check_cache_in
from jext.testing._checks import check_report
from jext.testing._scipy_checks import run_scipy_check, scipy_report
from tests.test_checks import make
from tests.test_scipy_checks import erf_wrapper


def test_compiled_programs_are_read_back_and_a_wrong_rule_still_fails(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``jext check``'s cache (``check_cache_in``, around its checks): a later run
    reads back what the first compiled instead of compiling it, with the same report, and
    a wrong rule fails warm as it did cold."""
    # This primitive's programs compile in less than the cache's threshold on a quiet
    # machine (its structure programs at STRUCTURE_COMPILE): keep every one of them here.
    monkeypatch.setattr(_cache, "_MIN_COMPILE_S", 0.0)
    # Programs whose outputs are read back are not compiled at all: keep none here.
    monkeypatch.setattr(_cache, "_MIN_RUN_S", float("inf"))
    prim = make("cached", lambda x, /: jnp.sin(x) * 2)
    prim.def_jvp(lambda p, t: (prim(p[0]), 3.0 * jnp.cos(p[0]) * t[0]))  # wrong: 2 cos x
    hits: list[str] = []

    def on_event(event: str, **kwargs: Any) -> None:
        if event == "/jax/compilation_cache/cache_hits":
            hits.append(event)

    cache = tmp_path / "cache"
    reports = []
    jax.monitoring.register_event_listener(on_event)
    try:
        for _ in range(2):
            with check_cache_in(cache):
                reports.append(check_report(prim, checks=["jit", "jvp"]))
            hits.append("end of run")
    finally:
        jax.monitoring.unregister_event_listener(on_event)
    cold, warm = reports
    assert hits.index("end of run") == 0 and len(hits) > 2  # hits in the second run only
    assert [(r.check, r.status, r.message) for r in warm.results] == [
        (r.check, r.status, r.message) for r in cold.results
    ]
    assert [r.status for r in cold.results] == ["pass", "fail"]
    assert (cache / ".gitignore").read_text().endswith("*\n")
    assert list(cache.glob("xla-*/*"))  # the compiled programs, one folder per processor
    assert jax.config.jax_compilation_cache_dir is None  # JAX's own setting is back


def test_cli_check_cache_is_switched_off_by_a_flag_or_the_environment(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["check", "example.softplus", "--checks", "abstract_eval", "-q"]
    assert cli_main([*args, "--cache-dir", str(tmp_path / "flag"), "--no-cache"]) == 0
    monkeypatch.setenv("JEXT_NO_CACHE", "1")
    monkeypatch.setenv("JEXT_CACHE_DIR", str(tmp_path / "env"))
    assert cli_main(args) == 0
    assert not (tmp_path / "flag").exists() and not (tmp_path / "env").exists()
    monkeypatch.setenv("JEXT_NO_CACHE", "0")
    assert cli_main(args) == 0
    assert (tmp_path / "env" / "CACHEDIR.TAG").exists()
    capsys.readouterr()


_PROBE = "jext_oracle_probe"


def _probe_package(root: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A package of its own defining an oracle that counts its calls (its sources are
    part of the oracle values' key, so the test changes them)."""
    package = root / _PROBE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "oracles.py").write_text(
        "import numpy as np\n"
        "calls = []\n\n"
        "def cube(x):\n"
        "    calls.append(np.shape(x))\n"
        "    return np.asarray(x, np.float64) ** 3\n"
    )
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.delitem(sys.modules, _PROBE, raising=False)
    monkeypatch.delitem(sys.modules, f"{_PROBE}.oracles", raising=False)
    return importlib.import_module(f"{_PROBE}.oracles")


def test_oracle_values_are_read_back_until_inputs_sources_or_versions_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_cache, "_MIN_ORACLE_S", 0.0)  # keep every answer
    oracles = _probe_package(tmp_path / "src", monkeypatch)
    x, y = np.linspace(-1.0, 1.0, 5), np.linspace(0.0, 2.0, 7)

    def run(*inputs: Any, label: str = "probe.cube") -> list[Any]:
        """One ``jext check`` run asking the oracle at ``inputs``."""
        with check_cache_in(tmp_path / "cache"):
            ask = cached_oracle(oracles.cube, label)
            return [ask(v) for v in inputs]

    first = run(x, x, y)
    assert oracles.calls == [(5,), (7,)]  # the second x was read back
    np.testing.assert_array_equal(first[1], x**3)
    np.testing.assert_array_equal(run(x, y)[1], y**3)
    assert len(oracles.calls) == 2  # a later run reads both back
    run(x, label="probe.other")
    run(x.astype(np.float32))
    assert len(oracles.calls) == 4  # another label, another dtype: asked afresh
    # Any source file of the oracle's package changes (here one it does not even import:
    # an oracle's helpers may live anywhere in it): everything is asked afresh.
    (tmp_path / "src" / _PROBE / "helpers.py").write_text("# new\n")
    run(x, y)
    assert len(oracles.calls) == 6
    monkeypatch.setattr(platform, "python_version", lambda: "3.99.0")
    run(x)
    assert len(oracles.calls) == 7
    # Outside a run with a cache, and with --no-cache, the oracle is asked as it is.
    assert cached_oracle(oracles.cube, "probe.cube") is oracles.cube
    with check_cache_in(None):
        assert cached_oracle(oracles.cube, "probe.cube") is oracles.cube


def test_fast_answers_and_other_kinds_are_not_kept_and_a_cut_file_is_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, calls, x = tmp_path / "cache", [], np.arange(3.0)

    def sine(v: Any) -> Any:
        calls.append("sine")
        return np.sin(v)

    def pair(v: Any) -> Any:
        calls.append("pair")
        return np.sin(v), np.cos(v)

    def kept() -> list[Path]:
        return sorted(cache.glob("oracle-*/*/*.answer"))

    with check_cache_in(cache):
        cached_oracle(sine, "sine")(x)  # microseconds: cheaper to ask again
    assert not kept()
    monkeypatch.setattr(_cache, "_MIN_ORACLE_S", 0.0)
    with check_cache_in(cache):
        assert isinstance(cached_oracle(pair, "pair")(x), tuple)  # not one array
        assert not kept()
        cached_oracle(sine, "sine")(x)
    (file,) = kept()
    file.write_bytes(file.read_bytes()[:40])  # cut short, as by a run that was killed
    with check_cache_in(cache):
        np.testing.assert_array_equal(cached_oracle(sine, "sine")(x), np.sin(x))
    assert calls == ["sine", "pair", "sine", "sine"] and file.stat().st_size > 40


def test_a_wrong_wrapper_fails_with_oracle_values_read_back_as_it_did_asking_the_oracle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_cache, "_MIN_ORACLE_S", 0.0)
    oracles = _probe_package(tmp_path / "src", monkeypatch)

    def wrapper(function: Any) -> Any:
        return erf_wrapper(function, oracle=oracles.cube, differentiable=())

    checks = ["values", "edge_cases"]
    reports = []
    for _ in range(2):
        with check_cache_in(tmp_path / "cache"):
            right, wrong = wrapper(lambda x: x**3), wrapper(lambda x: x**3 + 1e-9 * jnp.sin(x))
            reports.append([scipy_report(w, checks=checks) for w in (right, wrong)])
        oracles.calls.append("end of run")
    cold, warm = (
        [(r.check, r.status, r.message) for rep in run for r in rep.results] for run in reports
    )
    assert warm == cold
    assert [status for _, status, _ in cold] == ["pass", "pass", "fail", "fail"]
    # The second run asked the oracle nothing: every answer was read back.
    assert oracles.calls[-1] == "end of run" and oracles.calls.count("end of run") == 2
    assert oracles.calls.index("end of run") == len(oracles.calls) - 2


# --- a folder that is not safe or not usable: a warning, and no cache -------------------------


def _unused(folder: Path, match: str) -> None:
    """``check_cache_in(folder)`` warns (``match``) and runs the block without a cache."""
    with pytest.warns(_cache.CacheWarning, match=match), check_cache_in(folder) as host:
        assert host is None
        assert jax.config.jax_compilation_cache_dir is None


def test_a_folder_others_can_write_to_is_not_used(tmp_path: Path) -> None:
    """JAX runs what it reads back: a folder another user could have filled is refused,
    as ssh refuses a group- or world-writable ``~/.ssh``."""
    for mode in (0o777, 0o770, 0o702):
        cache = tmp_path / f"cache-{mode:o}"
        cache.mkdir()
        cache.chmod(mode)
        _unused(cache, rf"writable by others \(mode 0{mode:o}")
        assert list(cache.iterdir()) == []  # nothing read, nothing written
    private = tmp_path / "private"
    private.mkdir(mode=0o755)
    with check_cache_in(private) as host:  # readable by others is fine
        assert host is not None


def test_a_folder_of_another_user_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    owner = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: owner + 1)
    _unused(cache, f"owned by uid {owner}, not by this user")


def test_links_are_never_followed(tmp_path: Path) -> None:
    """Neither a linked folder nor a dangling ``CACHEDIR.TAG`` link (writing through it
    would create a file wherever it points)."""
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    _unused(tmp_path / "link", "is a symbolic link")
    assert list(real.iterdir()) == []
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    outside = tmp_path / "outside" / "planted"
    outside.parent.mkdir()
    (cache / "CACHEDIR.TAG").symlink_to(outside)
    _unused(cache, r"CACHEDIR\.TAG is a symbolic link")
    assert not outside.exists()


def test_a_folder_nothing_can_be_created_in_is_not_used(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    _unused(tmp_path / "file" / "cache", "cannot create it")
    _unused(tmp_path / "file", "is not a folder")


def test_a_relative_xdg_cache_home_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """The XDG spec: relative paths are invalid and ignored (it would name a folder under
    whatever the current directory is)."""
    monkeypatch.delenv("JEXT_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "relative-cache")
    assert _cache.default_cache_dir() == Path.home() / ".cache" / "jext"
    monkeypatch.setenv("XDG_CACHE_HOME", "/abs/cache")
    assert _cache.default_cache_dir() == Path("/abs/cache/jext")


def test_a_changed_or_moved_answer_is_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each answer is stored with the digest of its key and bytes: eight changed bytes
    (an answer of 1e300) or another key's file is asked again, never served as truth."""
    monkeypatch.setattr(_cache, "_MIN_ORACLE_S", 0.0)
    cache, calls = tmp_path / "cache", []

    def sine(v: Any) -> Any:
        calls.append(np.shape(v))
        return np.sin(v)

    x, y = np.arange(3.0), np.arange(4.0)
    with check_cache_in(cache):
        ask = cached_oracle(sine, "sine")
        ask(x), ask(y)
    (file_x, file_y) = sorted(cache.glob("oracle-*/*/*.answer"), key=lambda p: p.stat().st_size)
    file_x.write_bytes(file_x.read_bytes()[:-8] + np.float64(1e300).tobytes())
    with check_cache_in(cache):
        np.testing.assert_array_equal(cached_oracle(sine, "sine")(x), np.sin(x))
    assert calls == [(3,), (4,), (3,)]
    file_x.write_bytes(file_y.read_bytes())  # another key's answer, whole
    with check_cache_in(cache):
        np.testing.assert_array_equal(cached_oracle(sine, "sine")(x), np.sin(x))
        np.testing.assert_array_equal(cached_oracle(sine, "sine")(x), np.sin(x))
    assert calls == [(3,), (4,), (3,), (3,)]  # asked once, then read back


def test_a_failed_write_leaves_no_part_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_cache, "_MIN_ORACLE_S", 0.0)
    cache = tmp_path / "cache"

    def full(*args: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with check_cache_in(cache):
        monkeypatch.setattr(_cache.os, "replace", full)
        x = np.arange(3.0)
        np.testing.assert_array_equal(cached_oracle(np.sin, "sine")(x), np.sin(x))
    assert sorted(p.name for p in cache.rglob("*") if p.is_file()) == [".gitignore", "CACHEDIR.TAG"]


# --- what an oracle's answers are keyed by, whatever form the oracle takes -------------------

_HELPERS, _DECO = "jext_oracle_helpers", "jext_oracle_deco"


def _oracle_packages(root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """A plugin-like package of oracle helpers (counting their calls), and another holding a
    decorator made with functools.wraps."""
    sources = {
        f"{_HELPERS}/__init__.py": (
            "import numpy as np\n"
            "import scipy.special\n"
            "calls = []\n\n"
            "def cube(x):\n"
            "    calls.append('cube')\n"
            "    return np.asarray(x, np.float64) ** 3\n\n"
            "def square(x):\n"
            "    return np.asarray(x, np.float64) ** 2\n\n"
            "def scaled(k, x):\n"
            "    calls.append('scaled')\n"
            "    return k * np.asarray(x, np.float64)\n\n"
            "def cube_scalar(x):\n"
            "    calls.append('cube_scalar')\n"
            "    return x**3\n\n"
            "def square_scalar(x):\n"
            "    return x**2\n\n"
            "def erf_of(options, x):\n"
            "    return scipy.special.erf(x)\n\n"
            "LAMBDAS = (lambda x: x + 1.0, lambda x: x - 1.0)\n\n"
            "class Scaled:\n"
            "    def __init__(self, k):\n"
            "        self.k = k\n\n"
            "    def __call__(self, x):\n"
            "        return self.k * np.asarray(x, np.float64)\n"
        ),
        f"{_DECO}/__init__.py": (
            "import functools\n\n"
            "def logged(fn):\n"
            "    @functools.wraps(fn)\n"
            "    def wrapper(*args):\n"
            "        return fn(*args)\n"
            "    return wrapper\n"
        ),
    }
    for relative, text in sources.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    monkeypatch.syspath_prepend(str(root))
    for name in (_HELPERS, _DECO):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return importlib.import_module(_HELPERS), importlib.import_module(_DECO)


@pytest.mark.parametrize("form", ["function", "partial", "vectorize", "wraps"])
def test_an_oracle_is_asked_afresh_when_the_code_it_runs_changes(
    form: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An oracle made with functools.partial, np.vectorize or a functools.wraps decorator
    is keyed by the package of the helper it runs (not by functools' or NumPy's), and a
    wrapper also by its own package."""
    monkeypatch.setattr(_cache, "_MIN_ORACLE_S", 0.0)
    helpers, deco = _oracle_packages(tmp_path / "src", monkeypatch)
    oracle = {
        "function": helpers.cube,
        "partial": functools.partial(helpers.scaled, 2.0),
        "vectorize": np.vectorize(helpers.cube_scalar, otypes=[np.float64]),
        "wraps": deco.logged(helpers.cube),
    }[form]
    x = np.linspace(-1.0, 1.0, 5)

    def asked() -> bool:
        """One ``jext check`` run: whether it asked the oracle (else it read back)."""
        before = len(helpers.calls)
        with check_cache_in(tmp_path / "cache"):
            cached_oracle(oracle, "probe")(x)
        return len(helpers.calls) > before

    assert asked() and not asked()
    (tmp_path / "src" / _HELPERS / "more.py").write_text("# the helper's package changed\n")
    assert asked() and not asked()
    (tmp_path / "src" / _DECO / "more.py").write_text("# the decorator's package changed\n")
    assert asked() is (form == "wraps")


def test_oracles_that_may_answer_differently_have_different_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import scipy.special
    import scipy.stats

    helpers, deco = _oracle_packages(tmp_path / "src", monkeypatch)
    _cache._sources_digest.cache_clear()  # read afresh, as each `jext check` run does

    def key(oracle: Any) -> str:
        got = _cache.oracle_identity(oracle)
        assert isinstance(got, str), got
        return got

    different = [
        (helpers.cube, helpers.square),
        helpers.LAMBDAS,  # two lambdas on one line
        (functools.partial(helpers.scaled, 2.0), functools.partial(helpers.scaled, 3.0)),
        (functools.partial(helpers.scaled, 2.0), functools.partial(helpers.scaled, 2)),
        (functools.partial(helpers.scaled, k=0.0), functools.partial(helpers.scaled, k=-0.0)),
        (np.vectorize(helpers.cube_scalar), np.vectorize(helpers.square_scalar)),
        (np.vectorize(helpers.cube_scalar), np.vectorize(helpers.cube_scalar, otypes="f")),
        (deco.logged(helpers.cube), deco.logged(helpers.square)),
        (deco.logged(helpers.cube), helpers.cube),
        (scipy.stats.t.cdf, scipy.stats.norm.cdf),  # one function: rv_continuous.cdf
        (scipy.stats.t(3).cdf, scipy.stats.t(4).cdf),
        (scipy.special.erf, scipy.special.erfc),
        (np.exp2, scipy.special.exp2),  # ufuncs of one name in two libraries
        (helpers.Scaled(2.0), helpers.Scaled(3.0)),
    ]
    for a, b in different:
        assert key(a) != key(b), (a, b)
    # Built again, the same oracle: the same key, in this process and in another.
    made = [
        "functools.partial(helpers.scaled, 2.0)",
        "np.vectorize(helpers.cube_scalar)",
        "deco.logged(helpers.cube)",
        "scipy.stats.t(3).cdf",
        "scipy.stats.t.cdf",
        "scipy.special.erf",
        "helpers.Scaled(2.0)",
    ]
    scope = {"functools": functools, "np": np, "scipy": scipy, "helpers": helpers, "deco": deco}
    here = [key(eval(text, scope)) for text in made]
    assert here == [key(eval(text, scope)) for text in made]
    code = (
        "import functools, sys, numpy as np, scipy.special, scipy.stats\n"
        f"sys.path.insert(0, {str(tmp_path / 'src')!r})\n"
        f"import {_HELPERS} as helpers, {_DECO} as deco\n"
        "from jext.testing._cache import oracle_identity\n"
        f"for text in {made!r}:\n"
        "    print(oracle_identity(eval(text)))\n"
    )
    other = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert other.stdout.split() == here, other.stderr


def test_an_oracle_that_cannot_be_identified_keeps_no_answer_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import jax.scipy.special as jsp

    monkeypatch.setattr(_cache, "_MIN_ORACLE_S", 0.0)
    helpers, _ = _oracle_packages(tmp_path / "src", monkeypatch)
    made_by_numpy = np.frompyfunc(helpers.cube_scalar, 1, 1)
    unknown = [
        functools.partial(helpers.erf_of, object()),  # a bound value with no key
        lambda x: made_by_numpy(x).astype(np.float64),  # a ufunc that names no module
    ]
    with check_cache_in(tmp_path / "cache"):
        for oracle in unknown:
            assert cached_oracle(oracle, "probe") is oracle
            assert (_cache.uncached_reason(oracle) or "").startswith(
                "its answers are not kept between runs: "
            )
        assert _cache.uncached_reason(helpers.cube) is None
        # `jext check --verbose` prints the passing check's message.
        result = run_scipy_check(erf_wrapper(jsp.erf, oracle=unknown[0]), "values")
    assert result.status == "pass"
    assert result.message.startswith("the oracle: its answers are not kept between runs: ")
    assert not list((tmp_path / "cache").glob("oracle-*/*/*.answer"))


# --- the outputs of the checks' programs -----------------------------------------------------


def _counted_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every program :func:`run_kept` compiles and runs (not read back), by its first line."""
    runs: list[str] = []
    real = _cache._run

    def run(lowered: Any, options: Any, args: Any) -> Any:
        runs.append(lowered.as_text().splitlines()[0])
        return real(lowered, options, args)

    monkeypatch.setattr(_cache, "_run", run)
    monkeypatch.setattr(_cache, "_MIN_RUN_S", 0.0)
    return runs


def _kept_outputs(cache: Path) -> list[Path]:
    return sorted(cache.glob("oracle-*/*/*.outputs"))


def test_program_outputs_are_read_back_only_for_the_same_program_options_and_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A program's outputs are read back, bit for bit and in their tree, where the same
    program compiled with the same options ran on byte-identical inputs; anything else
    runs."""
    runs, cache = _counted_runs(monkeypatch), tmp_path / "cache"

    def f(x: Any, y: Any) -> Any:
        return {"sum": x + y, "parts": [jnp.sin(x), (y * 3).astype(jnp.int32)]}

    def g(x: Any, y: Any) -> Any:
        return {"sum": x - y, "parts": [jnp.sin(x), (y * 3).astype(jnp.int32)]}

    x, y = np.linspace(0.0, 1.0, 5, dtype=np.float32), np.float32(2.5)
    options = {"xla_backend_optimization_level": 0}
    want = jax.tree.map(np.asarray, jax.jit(f)(x, y))
    for _ in range(2):
        with check_cache_in(cache):
            got = _cache.run_kept(f, (x, y), None)
            assert jax.tree.structure(got) == jax.tree.structure(want)
            for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
                assert np.asarray(a).dtype == b.dtype
                np.testing.assert_array_equal(np.asarray(a), b)
    assert len(runs) == 1 and len(_kept_outputs(cache)) == 1
    with check_cache_in(cache):
        _cache.run_kept(f, (x, np.float32(2.0)), None)  # other input bytes
        _cache.run_kept(f, (x.astype(np.float64), y), None)  # another program (float64)
        _cache.run_kept(g, (x, y), None)  # another program
        _cache.run_kept(f, (x, y), options)  # other compile options
        _cache.run_kept(f, (x, y), None)  # read back
    assert len(runs) == 5 and len(_kept_outputs(cache)) == 5
    with check_cache_in(None):  # --no-cache / JEXT_NO_CACHE: runs, keeps nothing
        _cache.run_kept(f, (x, y), None)
    assert len(_kept_outputs(cache)) == 5


def test_a_rule_changed_between_runs_is_checked_afresh_and_a_wrong_one_fails_warm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The outputs of a rule's program are keyed by the program: a JVP rule edited between
    two runs in one cache folder runs afresh and fails; put back, it reads back the first
    run's outputs and passes again."""
    runs, cache = _counted_runs(monkeypatch), tmp_path / "cache"
    slope = [2.0]  # the rule's factor: right at 2, as edited between runs at 3
    prim = make("outputs_kept", lambda x, /: jnp.sin(x) * 2)
    prim.def_jvp(lambda p, t: (prim(p[0]), slope[0] * jnp.cos(p[0]) * t[0]))

    def jvp_status() -> str:
        with check_cache_in(cache):
            (result,) = check_report(prim, checks=["jvp"]).results
        return result.status

    assert jvp_status() == "pass"
    cold = len(runs)
    assert cold > 0 and _kept_outputs(cache)
    assert jvp_status() == "pass" and len(runs) == cold  # warm: every output read back
    slope[0] = 3.0
    assert jvp_status() == "fail" and len(runs) > cold
    after_wrong = len(runs)
    slope[0] = 2.0
    assert jvp_status() == "pass" and len(runs) == after_wrong


def test_a_program_calling_code_its_text_does_not_show_is_never_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An FFI handler or a host callback can change without the program's text changing,
    and an effect must happen on every run: such programs run every time."""
    runs, cache = _counted_runs(monkeypatch), tmp_path / "cache"
    x = np.arange(4.0, dtype=np.float32)
    spec = jax.ShapeDtypeStruct(x.shape, x.dtype)
    printed: list[Any] = []
    programs = {
        "pure_callback": lambda v: jax.pure_callback(np.sin, spec, v),
        "io_callback": lambda v: jax.experimental.io_callback(np.sin, spec, v),
        "debug.callback": lambda v: jax.debug.callback(printed.append, v) or v * 2,
    }
    for _ in range(2):
        with check_cache_in(cache):
            for fn in programs.values():
                np.asarray(_cache.run_kept(fn, (x,), None))
    assert len(runs) == 2 * len(programs) and len(printed) == 2
    assert not _kept_outputs(cache)
    ffi = jax.jit(jax.ffi.ffi_call("a_handler", spec)).lower(x).as_text()
    assert _cache.unkept_program_reason(ffi) == "it calls 'a_handler', code its text does not show"
    assert _cache.unkept_program_reason(jax.jit(jnp.sin).lower(x).as_text()) is None


def test_changed_or_cut_outputs_are_ignored_and_the_program_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kept outputs carry the digest of their key and bytes, as oracle values do: a file
    changed on disk, cut short or holding another program's outputs is never read back."""
    runs, cache = _counted_runs(monkeypatch), tmp_path / "cache"
    x = np.linspace(0.0, 1.0, 8, dtype=np.float32)

    def f(v: Any) -> Any:
        return jnp.exp(v)

    with check_cache_in(cache):
        want = np.asarray(_cache.run_kept(f, (x,), None))
        _cache.run_kept(f, (x + 1,), None)
    file, other = sorted(_kept_outputs(cache), key=lambda p: p.stat().st_mtime_ns)
    whole = file.read_bytes()
    for damaged in (
        whole[:-4] + np.float32(1e30).tobytes(),  # changed bytes
        whole[:60],  # cut short, as by a run that was killed
        other.read_bytes(),  # another key's outputs
    ):
        file.write_bytes(damaged)
        with check_cache_in(cache):
            np.testing.assert_array_equal(np.asarray(_cache.run_kept(f, (x,), None)), want)
    assert len(runs) == 2 + 3


def test_a_program_with_operands_besides_its_inputs_keeps_no_outputs() -> None:
    """A JAX that passes a program's large constants as arguments would leave them out of
    the program's text and of its inputs: more operands than inputs keep nothing."""
    x = np.arange(3.0, dtype=np.float32)
    lowered = jax.jit(lambda v: v * 2).lower(x)
    assert _cache._program_key(lowered, None, (x,)) is not None

    class WithConstant:
        in_tree = lowered.in_tree

        @staticmethod
        def as_text() -> str:
            one = "%arg0: tensor<3xf32>"
            return lowered.as_text().replace(one, f"{one}, %arg1: tensor<3xf32>", 1)

    assert "%arg1" in WithConstant.as_text()
    assert _cache._program_key(WithConstant(), None, (x,)) is None


def test_a_changed_large_constant_is_another_program(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rule closing over a large array writes it into the program's text in full: an
    array changed in one element between two runs runs afresh."""
    runs, cache = _counted_runs(monkeypatch), tmp_path / "cache"
    table = np.linspace(0.0, 1.0, 4096, dtype=np.float32)
    x = np.arange(4096, dtype=np.float32)
    for _ in range(2):
        with check_cache_in(cache):
            np.asarray(_cache.run_kept(lambda v: v * table, (x,), None))
    assert len(runs) == 1
    table[2000] += 1.0
    with check_cache_in(cache):
        got = np.asarray(_cache.run_kept(lambda v: v * table, (x,), None))
    assert len(runs) == 2
    np.testing.assert_array_equal(got, x * table)


def test_outputs_beyond_the_budget_go_least_recently_used_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When a run ends, the kept outputs beyond the budget are deleted, the least recently
    kept or read back first; the others are still read back."""
    runs, cache = _counted_runs(monkeypatch), tmp_path / "cache"
    x = np.linspace(0.0, 1.0, 256, dtype=np.float32)
    programs = [lambda v, k=k: jnp.sin(v) + k for k in range(3)]
    with check_cache_in(cache):
        for fn in programs:
            _cache.run_kept(fn, (x,), None)
    files = _kept_outputs(cache)
    assert len(files) == 3
    size = files[0].stat().st_size
    for age, file in enumerate(sorted(files, key=lambda p: p.stat().st_mtime_ns)):
        os.utime(file, (1_000_000 + age, 1_000_000 + age))  # kept in order, long ago
    monkeypatch.setattr(_cache, "_OUTPUTS_BUDGET", 2 * size)
    with check_cache_in(cache):
        _cache.run_kept(programs[0], (x,), None)  # read back: now the most recent
    assert len(runs) == 3 and len(_kept_outputs(cache)) == 2
    with check_cache_in(cache):
        _cache.run_kept(programs[0], (x,), None)
        _cache.run_kept(programs[2], (x,), None)
    assert len(runs) == 3  # both still kept
    with check_cache_in(cache):
        _cache.run_kept(programs[1], (x,), None)  # deleted: runs again
    assert len(runs) == 4 and len(_kept_outputs(cache)) == 2

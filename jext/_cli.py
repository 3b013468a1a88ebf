"""The ``jext`` command line: ``jext list`` shows what the installed plugins provide.

Exit codes (the parser's help prints them): 0 success; 1 the answer is no (a check
failed, the stubs are out of date, a plugin is broken under ``JEXT_STRICT=1``); 2 bad
usage or input (argparse's code: an unknown option, name or plugin, an empty list, an
unreadable input file); 3 the environment (an output that cannot be written, a full
disk); 141 standard output closed early (``jext list | head``), quietly, as a command
killed by SIGPIPE reports in the shell.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final, TextIO

from jext._errors import JextError, PluginError
from jext._progress import CheckProgress, is_terminal
from jext._registry import ENV_STRICT, Registry, env_flag, registry
from jext._scaffold import scaffold
from jext.scipy._scopes import ScopeEntry, coverage
from jext.scipy._scopes import entries as scipy_entries

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_ENVIRONMENT",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "listing",
    "main",
]

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
"""A check failed, the stubs are out of date, or a plugin is broken under JEXT_STRICT=1."""
EXIT_USAGE: Final = 2
"""Bad usage or input, argparse's code: an unknown name, plugin or option, an empty list."""
EXIT_ENVIRONMENT: Final = 3
"""The environment: an output that cannot be written, a full disk."""
EXIT_BROKEN_PIPE: Final = 141
"""Standard output was closed early: 128 + SIGPIPE, as the shell reports such a command."""

_EXIT_CODES = (
    "exit codes: 0 success; 1 a check failed (stubgen --check: the stubs are out of date; "
    "list: a broken plugin under JEXT_STRICT=1); 2 bad usage or input; 3 an environment "
    "error (an output that cannot be written, a full disk); 141 standard output closed early"
)


def listing(reg: Registry) -> dict[str, list[dict[str, Any]]]:
    """What ``jext list --json`` prints: plugins (their namespaces, whether core), primitives,
    FFI targets, RNG impls, SciPy wrappers and SciPy coverage per scope."""
    owners = reg.primitive_owners()
    scipy = scipy_entries(reg=reg)
    return {
        "plugins": [
            {
                "name": p.name,
                "distribution": p.distribution,
                "version": p.version,
                "status": p.status,
                "error": p.error,
                "notes": list(p.notes),
                "namespaces": list(p.namespaces),
                "core": p.core,
            }
            for p in reg.plugins()
        ],
        "ffi_targets": [
            {
                "name": name,
                "platform": platform,
                "plugin": owned.plugin,
                "batch_partitionable": owned.item.batch_partitionable,
            }
            for (name, platform), owned in reg.ffi_targets().items()
        ],
        "primitives": [
            {
                "name": name,
                "plugin": owners[name],
                "rules": prim.rule_sources(),
                "custom_rules": list(prim.rules.custom_kinds()),
                "platforms": prim.lowering_platforms(),
            }
            for name, prim in reg.primitives().items()
        ],
        "rng_impls": [
            {
                "name": name,
                "plugin": owned.plugin,
                "tag": owned.item.tag,
                "description": owned.item.description,
                "bit_exact_with": owned.item.bit_exact_with,
                "byte_stream": owned.item.byte_stream,
                "key_shape": list(owned.item.key_shape),
            }
            for name, owned in reg.rng_impls().items()
        ],
        "scipy": [_scipy_entry(e, reg) for e in scipy],
        "scipy_coverage": [
            {
                "scope": c.scope,
                "scipy_version": c.scipy_version,
                "callables": c.callables,
                "covered": c.covered,
                "from_jax": c.from_jax,
                "from_plugins": c.from_plugins,
                "missing": list(c.missing),
            }
            for c in coverage(scipy)
        ],
    }


def _scipy_entry(entry: ScopeEntry, reg: Registry) -> dict[str, Any]:
    """One scope entry; a plugin's wrapper adds its metadata (the winner's, or each one's)."""
    out: dict[str, Any] = {
        "scope": entry.scope,
        "name": entry.name,
        "status": entry.status,
        "providers": list(entry.providers),
        "mirrors": entry.mirrors,
        "note": entry.note,
    }
    owners = reg.scipy_wrappers().get((entry.scope, entry.name), ())
    if owners:
        out["wrappers"] = {o.plugin: o.item.metadata() for o in owners}
    return out


def _table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]], out: TextIO) -> None:
    print(f"{title} ({len(rows)})", file=out)
    if not rows:
        print("  (none)\n", file=out)
        return
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    for row in (header, ["-" * w for w in widths], *rows):
        print(
            "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip(),
            file=out,
        )
    print(file=out)


def _print_listing(data: dict[str, list[dict[str, Any]]], out: TextIO) -> None:
    _table(
        "Plugins",
        ["name", "distribution", "version", "status", "namespaces", "error / notes"],
        [
            [
                p["name"],
                p["distribution"] or "(in code)",
                p["version"] or "",
                p["status"] + (" (core)" if p["core"] else ""),
                ", ".join(p["namespaces"]) or "-",
                "; ".join(filter(None, [p["error"], *p["notes"]])),
            ]
            for p in data["plugins"]
        ],
        out,
    )
    _table(
        "Primitives",
        ["name", "plugin", "custom rules", "lowerings"],
        [
            [
                p["name"],
                p["plugin"],
                ", ".join(p["custom_rules"]) or "-",
                ", ".join(
                    plat if rule == "reference" else f"{plat}:{rule}"
                    for plat, rule in p["platforms"].items()
                )
                or "none",
            ]
            for p in data["primitives"]
        ],
        out,
    )
    _table(
        "FFI targets",
        ["name", "platform", "plugin", "batch-partitionable"],
        [
            [f["name"], f["platform"], f["plugin"], "yes" if f["batch_partitionable"] else "no"]
            for f in data["ffi_targets"]
        ],
        out,
    )
    _table(
        "RNG implementations",
        ["name", "plugin", "tag", "bit-exact with", "description"],
        [
            [r["name"], r["plugin"], r["tag"], r["bit_exact_with"] or "-", r["description"]]
            for r in data["rng_impls"]
        ],
        out,
    )
    from_plugins = [s for s in data["scipy"] if s["status"] != "jax"]
    _table(
        "SciPy wrappers",
        ["name", "status", "provided by", "mirrors", "note"],
        [
            [
                f"jext.scipy.{s['scope']}.{s['name']}",
                s["status"],
                ", ".join(s["providers"]),
                s["mirrors"] or "",
                s["note"],
            ]
            for s in from_plugins
        ],
        out,
    )
    jax_counts: dict[str, int] = {}
    for s in data["scipy"]:
        if s["status"] == "jax":
            jax_counts[s["scope"]] = jax_counts.get(s["scope"], 0) + 1
    if jax_counts:
        own = ", ".join(f"{n} in {scope}" for scope, n in sorted(jax_counts.items()))
        print(f"  and jax.scipy's own functions, status jax: {own} (see --json)\n", file=out)
    _print_coverage(data["scipy_coverage"], out)


def _print_coverage(scopes: Sequence[dict[str, Any]], out: TextIO) -> None:
    versions = {c["scipy_version"] for c in scopes if c["scipy_version"]}
    print(f"SciPy coverage (SciPy {', '.join(sorted(versions)) or 'not installed'})", file=out)
    for c in scopes:
        if c["scipy_version"] is None:
            print(f"  {c['scope']}: scipy.{c['scope']} is not installed", file=out)
            continue
        print(
            f"  {c['scope']}: {c['covered']} of {c['callables']} "
            f"({c['from_jax']} from jax.scipy, {c['from_plugins']} from plugins)",
            file=out,
        )
    print(file=out)


def _cmd_list(args: argparse.Namespace, out: TextIO) -> int:
    reg = registry()
    # Broken plugins are shown in the listing itself, under JEXT_STRICT=1 too.
    with reg.unreported():
        data = listing(reg)
    if args.json:
        json.dump(data, out, indent=2)
        print(file=out)
    else:
        _print_listing(data, out)
    failed = [p["name"] for p in data["plugins"] if p["status"] == "error"]
    if failed and env_flag(os.environ.get(ENV_STRICT)):
        print(f"jext list: {ENV_STRICT}=1 and plugin(s) failed to load: {failed}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _csv(value: str) -> list[str]:
    names = [v.strip() for v in value.split(",") if v.strip()]
    if not names:
        # An empty selection would run nothing and pass: an error, not "all".
        raise argparse.ArgumentTypeError("an empty list selects nothing; omit the option for all")
    return names


def _cmd_check(args: argparse.Namespace, out: TextIO) -> int:
    # The checks load only for `jext check`.
    from jext.testing._api import KIND_CHECKS, run_checks  # noqa: PLC0415
    from jext.testing._cache import (  # noqa: PLC0415
        ENV_NO_CACHE,
        CacheWarning,
        check_cache_in,
        default_cache_dir,
    )
    from jext.testing._report import format_table, summary_line  # noqa: PLC0415

    err = sys.stderr
    # Progress goes to stderr so that --json output stays one clean object.
    progress = CheckProgress(err, live=is_terminal(err), verbosity=args.verbose - args.quiet)

    # Compiling is most of a check's time: programs compiled by an earlier run are read back.
    cache: Path | None = Path(args.cache_dir) if args.cache_dir else default_cache_dir()
    if args.no_cache or (not args.cache_dir and env_flag(os.environ.get(ENV_NO_CACHE))):
        cache = None
    with contextlib.ExitStack() as stack:
        stack.enter_context(warnings.catch_warnings())
        # A cache folder that is not safe or not usable: one line, and the checks run.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CacheWarning)
            stack.enter_context(check_cache_in(cache))
        for warning in caught:
            print(f"jext check: warning: {warning.message}", file=err)
        warnings.simplefilter("ignore")  # broken plugins are reported as failures below
        try:
            with progress:
                reports = run_checks(
                    args.names or None,
                    checks=args.checks,
                    platforms=args.platforms,
                    plugins=args.plugin,
                    progress=progress,
                    plan=progress.plan,
                    scipy_audit=args.scipy_audit,
                )
        except JextError as exc:
            print(f"jext check: {exc}", file=err)
            return EXIT_USAGE
    unchecked = [r.name for r in reports if r.status == "unchecked"]
    if unchecked:  # not a failure: the exit code stays 0, the user is told
        print(
            f"jext check: warning: {len(unchecked)} item(s) not checked (no examples): "
            f"{', '.join(unchecked)}",
            file=err,
        )
    if args.json:
        json.dump(
            {
                "ok": all(r.ok for r in reports),
                "unchecked": unchecked,
                "reports": [r.to_json() for r in reports],
            },
            out,
            indent=2,
            allow_nan=False,  # strict JSON: reports hold null (and a flag) for inf and nan
        )
        print(file=out)
    else:
        print(format_table(reports, KIND_CHECKS), file=out)
        print(f"\n{summary_line(reports)}", file=out)
    return EXIT_OK if all(r.ok for r in reports) else EXIT_FAILED


def _cmd_stubgen(args: argparse.Namespace, out: TextIO) -> int:
    from jext._stubgen import check, write  # noqa: PLC0415 - the stub writer loads only for `jext stubgen`

    folder = Path(args.out)
    # pip takes a bare name for a registry project: a local folder needs a path ("./stubs").
    shown = str(folder) if folder.is_absolute() or args.out.startswith(".") else f"./{folder}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a broken plugin simply provides nothing to stub
        if args.check:
            try:
                problems = check(folder)
            except ValueError as exc:  # a pyproject.toml cut short or not jext stubgen's
                print(f"jext stubgen: {exc}", file=sys.stderr)
                return EXIT_USAGE
            for line in problems:
                print(f"  {line}", file=out)
            verdict = "out of date: run `jext stubgen" if problems else "current"
            extra = f" --out {shown}`" if problems else ""
            print(f"the stubs in {shown} are {verdict}{extra}", file=out)
            return EXIT_FAILED if problems else EXIT_OK
        try:
            written = write(folder, plugins=args.plugin)
        except OSError as exc:
            where = exc.filename or folder
            print(f"jext stubgen: cannot write the stubs: {exc.strerror}: {where}", file=sys.stderr)
            return EXIT_ENVIRONMENT
    print(f"wrote {len(written)} files of the jext-stubs package to {shown}", file=out)
    print(f"install them with: pip install {shown}", file=out)
    return EXIT_OK


def _cmd_init(args: argparse.Namespace, out: TextIO) -> int:
    folder = Path(args.dir) if args.dir else None
    try:
        written = scaffold(args.name, folder)
    except (ValueError, FileExistsError) as exc:
        print(f"jext init: {exc}", file=sys.stderr)
        return 2
    root = written[0].parent
    print(f"wrote the plugin distribution jext-{args.name} to {root}:", file=out)
    for path in written:
        print(f"  {path.relative_to(root)}", file=out)
    print(
        f"next: cd {root} && pip install -e '.[test]' && pytest && jext check --plugin {args.name}",
        file=out,
    )
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jext",
        description="Inspect and check the jext plugins installed here.",
        epilog=_EXIT_CODES,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_list = sub.add_parser(
        "list", help="list plugins, primitives, RNG impls and SciPy wrappers", epilog=_EXIT_CODES
    )
    p_list.add_argument("--json", action="store_true", help="print one JSON object")
    p_list.set_defaults(run=_cmd_list)
    p_check = sub.add_parser(
        "check",
        help="check every registered rule: JVPs, transposes, batching, lowerings...",
        epilog=_EXIT_CODES,
    )
    p_check.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="names or globs ('mylib.*') of primitives, RNG impls, SciPy wrappers (default: all)",
    )
    p_check.add_argument(
        "--plugin",
        action="append",
        metavar="PLUGIN",
        help="check only what this plugin registers (repeatable)",
    )
    p_check.add_argument("--json", action="store_true", help="print a machine-readable report")
    p_check.add_argument(
        "--checks", type=_csv, help="comma-separated checks to run (default: all but sharding)"
    )
    p_check.add_argument(
        "--platforms", type=_csv, help="comma-separated platforms to lower for (default: all)"
    )
    p_check.add_argument(
        "--scipy-audit",
        action="store_true",
        help="hold jax.scipy's own functions to SciPy instead, and report where they disagree",
    )
    p_check.add_argument(
        "-q",
        "--quiet",
        action="count",
        default=0,
        help="print only failures (in full) and the summary",
    )
    p_check.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="print every check as it finishes, with its largest error and message",
    )
    p_check.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="keep compiled programs and slow oracles' answers in DIR for later runs "
        "(default: $JEXT_CACHE_DIR, else $XDG_CACHE_HOME/jext or ~/.cache/jext)",
    )
    p_check.add_argument(
        "--no-cache",
        action="store_true",
        help="compile everything afresh and keep nothing (also: JEXT_NO_CACHE=1)",
    )
    p_check.set_defaults(run=_cmd_check)
    p_stub = sub.add_parser(
        "stubgen",
        help="write a partial stub package typing the installed plugins' names",
        epilog=_EXIT_CODES,
    )
    p_stub.add_argument("--out", default="stubs", help="folder to write into (default: stubs)")
    p_stub.add_argument(
        "--plugin",
        action="append",
        metavar="NAME",
        help="type only what plugin NAME provides, and jext's core (repeatable; default: all)",
    )
    p_stub.add_argument(
        "--check",
        action="store_true",
        help="say whether the stubs in --out are current (exit 1 if not); writes nothing",
    )
    p_stub.set_defaults(run=_cmd_stubgen)
    p_init = sub.add_parser(
        "init", help="write a new plugin distribution: a primitive, its tests, CI"
    )
    p_init.add_argument(
        "name", metavar="NAME", help="the plugin's name and namespace (an identifier: mylib)"
    )
    p_init.add_argument(
        "--dir", metavar="DIR", help="the folder to create (default: ./jext-NAME); must not exist"
    )
    p_init.set_defaults(run=_cmd_init)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the ``jext`` command with ``argv`` (default: ``sys.argv[1:]``); returns the exit code.

    A failure the user can cause ends in one line on stderr naming the cause, with the
    exit codes of the module docstring; a closed standard output ends quietly.
    """
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help, or bad usage (argparse printed why)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    stream = out or sys.stdout
    name = f"jext {args.command}"
    try:
        with _fewer_collections():
            code: int = args.run(args, stream)
        stream.flush()  # a closed pipe shows here, not at interpreter exit
    except BrokenPipeError:
        if stream is sys.stdout:
            _silence_stdout()
        return EXIT_BROKEN_PIPE
    except PluginError as exc:  # a broken plugin under JEXT_STRICT=1 is a failure
        print(f"{name}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except JextError as exc:  # an unknown name or plugin, say
        print(f"{name}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:  # an output that cannot be written, a full disk
        where = f": {exc.filename}" if exc.filename else " (writing standard output)"
        print(f"{name}: {exc.strerror or exc}{where}", file=sys.stderr)
        if stream is sys.stdout:
            try:
                stream.flush()
            except OSError:
                _silence_stdout()
        return EXIT_ENVIRONMENT
    return code


def _silence_stdout() -> None:
    """Point standard output at the null device: Python flushes it at exit, and writing
    to the closed pipe again would print a second error (as pytest and pip do)."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """Collect garbage less often while a command runs, as mypy's command does.

    Importing and tracing JAX creates objects by the hundred thousand; at Python's default
    threshold (700) the collector ran about 300 times in one ``jext check NAME``, some 0.2 s
    of its 3 s CPU.  The old thresholds come back afterwards (``main`` runs in tests too).
    """
    old = gc.get_threshold()
    gc.set_threshold(100_000, 50, 100)
    try:
        yield
    finally:
        gc.set_threshold(*old)

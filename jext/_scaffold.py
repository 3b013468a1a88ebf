"""``jext init NAME``: a new plugin distribution that installs, checks and tests green."""

from __future__ import annotations

import keyword
import re
from pathlib import Path
from typing import Final

from jext._registry import CORE_NAMESPACE

__all__ = ["check_name", "scaffold", "templates"]

# The placeholders in the templates: none occurs in TOML, YAML or Python by accident, and
# none clashes with GitHub Actions' `${{ }}`.  Replaced in one pass, so a name cannot
# make another placeholder.
_PLACEHOLDER: Final = re.compile("__(NAME|MODULE|DIST)__")

_PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "__DIST__"
version = "0.1.0"
description = "A jext plugin: the __NAME__.* primitives."
readme = "README.md"
requires-python = ">=3.11"
# What the plugin imports at run time; jext brings a JAX it supports.  Add SciPy here if
# the plugin registers SciPy wrappers (SciPy is the oracle of their checks).
dependencies = ["jext", "numpy"]

# The plugin is named "__NAME__", so it owns the namespace "__NAME__": every name it
# defines is "__NAME__.<op>".
[project.entry-points.jext]
__NAME__ = "__MODULE__"

[project.optional-dependencies]
test = ["pytest>=8"]

[tool.setuptools.package-data]
__MODULE__ = ["py.typed"]

[tool.pytest.ini_options]
testpaths = ["tests"]
filterwarnings = ["error"]
"""

_MODULE_SOURCE = '''\
"""The __NAME__ jext plugin: ``__NAME__.logcosh``, with a custom JVP and its examples."""

from __future__ import annotations

import math
from collections.abc import Iterator

import jax
import jax.numpy as jnp
import jext
import numpy as np

__all__ = ["logcosh"]


@jext.primitive("__NAME__.logcosh")
def logcosh(x: jax.Array, /) -> jax.Array:
    """``log(cosh(x))``, finite for every finite ``x``.

    This reference is the primitive's definition: jext derives every rule not written
    below from it, and ``jext check`` holds the written ones to it.
    """
    # A Python float keeps x's dtype (JAX's weak types); np.log(2.0) would promote.
    return jnp.logaddexp(x, -x) - math.log(2.0)


@logcosh.def_jvp
def _logcosh_jvp(
    primals: tuple[jax.Array], tangents: tuple[jax.Array]
) -> tuple[jax.Array, jax.Array]:
    (x,), (t,) = primals, tangents
    return logcosh(x), t * jnp.tanh(x)


logcosh.def_batching_elementwise()


@logcosh.def_examples
def _examples() -> Iterator[jext.Example]:
    # The inputs every check runs on: include the regions your rules treat differently.
    yield jext.Example(np.linspace(-4.0, 4.0, 9, dtype=np.float32))


@jext.hooks.register_primitives
def _register(registry: jext.PrimitiveRegistrar) -> None:
    registry.add(logcosh)
'''

_CONFORMANCE_TEST = '''\
"""jext's checks (JVPs, batching, lowerings...) on each item this project registers."""

from jext.testing import test_jext_conformance  # noqa: F401
'''

_UNIT_TEST = '''\
"""``__NAME__.logcosh`` against NumPy, and its gradient."""

import jax
import jax.numpy as jnp
import numpy as np

from __MODULE__ import logcosh


def test_values_and_gradient() -> None:
    x = jnp.linspace(-30.0, 30.0, 7)
    expected = np.log(np.cosh(np.asarray(x, dtype=np.float64)))
    np.testing.assert_allclose(logcosh(x), expected, rtol=1e-6)
    grad = jax.grad(lambda v: logcosh(v).sum())(x)
    np.testing.assert_allclose(grad, np.tanh(np.asarray(x)), rtol=1e-6)


def test_one_equation_in_the_jaxpr() -> None:
    jaxpr = jax.make_jaxpr(logcosh)(jnp.ones(3))
    assert [str(e.primitive) for e in jaxpr.jaxpr.eqns] == ["__NAME__.logcosh"]
'''

_README = """\
# __DIST__

A jext plugin. Installing it registers the primitive
`__NAME__.logcosh` (through the `jext` entry point `__NAME__`, which owns the namespace
`__NAME__`): a real JAX primitive, with a custom JVP, under `jit`, `grad` and `vmap`.

```python
import jax.numpy as jnp
from __MODULE__ import logcosh

logcosh(jnp.linspace(-3.0, 3.0, 5))
```

## Develop

```sh
pip install -e ".[test]"
pytest                         # your tests, and jext's checks on each item you register
jext check --plugin __NAME__   # the same checks from the command line
jext list                      # what the installed plugins provide
```

`tests/test_conformance.py` is one line: jext's pytest plugin adds a test per primitive,
RNG implementation and SciPy wrapper this project registers, and runs every check on it.
`tests/test_logcosh.py` holds the primitive's own tests.

## Adding a primitive

Define it in `src/__MODULE__/` with `@jext.primitive("__NAME__.<op>")`, give it examples
(`def_examples`), and add it in the `register_primitives` hook. Names outside the
`__NAME__` namespace are refused. Rules, checks and the other hooks: jext's
`docs/plugins.md`.

## CI

`.github/workflows/ci.yml` installs the project, runs `pytest` and `jext check`, and keeps
jext's cache of compiled programs (`~/.cache/jext`) between runs, keyed by the JAX version.
"""

_CI = """\
name: CI

on:
  push:
  pull_request:

jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - run: pip install -e ".[test]"
      - id: versions
        run: |
          versions='from importlib.metadata import version as v
          print(v("jax"), v("jaxlib"), sep="-")'
          echo "jax=$(python -c "$versions")" >> "$GITHUB_OUTPUT"
      # jext check keeps what it compiles in ~/.cache/jext: with the folder restored,
      # only what changed compiles afresh.
      - uses: actions/cache@v4
        with:
          path: ~/.cache/jext
          key: jext-${{ runner.os }}-${{ steps.versions.outputs.jax }}-${{ github.sha }}
          restore-keys: jext-${{ runner.os }}-${{ steps.versions.outputs.jax }}-
      - run: pytest
      - run: jext check --plugin __NAME__
"""

_GITIGNORE = """\
__pycache__/
*.egg-info/
build/
dist/
.venv/
"""


def check_name(name: str) -> None:
    """Raise ``ValueError`` unless ``name`` can be a plugin's name and namespace.

    It becomes the entry-point name, the namespace of every name the plugin defines, and
    part of the module name ``jext_<name>``: an ASCII Python identifier, not a keyword,
    not jext's own namespace.
    """
    if not (name.isascii() and name.isidentifier()) or keyword.iskeyword(name):
        raise ValueError(
            f"{name!r} is not a plugin name: use an ASCII Python identifier "
            "(letters, digits and _, not starting with a digit), e.g. 'mylib'"
        )
    if name == CORE_NAMESPACE:
        raise ValueError(f"{name!r} is jext's own namespace: choose another name")


def templates(name: str) -> list[tuple[str, str]]:
    """``(path, text)`` of every file ``jext init name`` writes, placeholders filled in.

    The paths are fixed but for the package folder (``src/jext_<name>/``), so no name can
    make two templates one file (a unit test named after the plugin would be
    ``tests/test_conformance.py`` for the plugin ``conformance``).
    """
    check_name(name)
    dist, module = f"jext-{name}", f"jext_{name}"
    files = [
        ("pyproject.toml", _PYPROJECT),
        ("README.md", _README),
        (".gitignore", _GITIGNORE),
        (".github/workflows/ci.yml", _CI),
        (f"src/{module}/__init__.py", _MODULE_SOURCE),
        (f"src/{module}/py.typed", ""),
        ("tests/test_conformance.py", _CONFORMANCE_TEST),
        ("tests/test_logcosh.py", _UNIT_TEST),
    ]
    values = {"NAME": name, "MODULE": module, "DIST": dist}
    return [(path, _PLACEHOLDER.sub(lambda m: values[m.group(1)], text)) for path, text in files]


def scaffold(name: str, folder: Path | None = None) -> list[Path]:
    """Write a plugin distribution named ``jext-<name>`` into ``folder``; the files written.

    ``folder`` (default ``./jext-<name>``) must not exist.  Raises ``ValueError`` for a
    bad ``name`` (see :func:`check_name`) and ``FileExistsError`` for an existing folder.
    Every file is created new: none ever replaces another.
    """
    files = templates(name)
    root = Path(folder) if folder is not None else Path(f"jext-{name}")
    if root.exists():
        raise FileExistsError(f"{root} exists: jext init writes only into a new folder")
    root.mkdir(parents=True)
    written = []
    for relative, text in files:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("x", encoding="utf-8") as out:  # "x": a second template never replaces one
            out.write(text)
        written.append(path)
    return written

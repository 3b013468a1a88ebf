"""Sphinx configuration of jext's API reference: ``python -m sphinx -W docs/api OUT``.

``.. jext-public:: MODULE`` documents the names in ``MODULE.__all__``.  An object that an
earlier module already documents (``jext.primitives.Primitive`` is ``jext.Primitive``) is
listed as an alias of it, so each object is described once and every public name still
has an entry in the index.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

project = "jext"
author = "the jext authors"
extensions = ["sphinx.ext.autodoc"]
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
exclude_patterns = ["_build"]
html_theme = "alabaster"

#: id of each class or function documented so far -> the name it is documented under.
_DOCUMENTED: dict[int, str] = {}


def _directive(obj: Any) -> tuple[str, str]:
    """(autodoc directive, plain py directive) for ``obj``."""
    if inspect.isclass(obj):
        kind = "exception" if issubclass(obj, BaseException) else "class"
        return f"auto{kind}", kind
    if inspect.isfunction(obj):
        return "autofunction", "function"
    return "autodata", "data"


class PublicNames(SphinxDirective):
    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        module = importlib.import_module(name)
        lines = [f".. automodule:: {name}", "   :no-index:", "", f".. currentmodule:: {name}", ""]
        for attr in module.__all__:
            obj = getattr(module, attr)
            auto, plain = _directive(obj)
            first = _DOCUMENTED.get(id(obj)) if plain != "data" else None
            if first is not None:
                lines += [f".. py:{plain}:: {attr}", f"   :module: {name}", ""]
                lines += [f"   Alias of :py:obj:`{first}`.", ""]
                continue
            lines += [f".. {auto}:: {name}.{attr}"]
            if plain in ("class", "exception"):
                lines += ["   :members:"]
            lines += [""]
            if plain != "data":
                _DOCUMENTED[id(obj)] = f"{name}.{attr}"
        node = nodes.section()
        nested_parse_with_titles(self.state, StringList(lines, source=name), node)
        return node.children


def setup(app: Sphinx) -> None:
    app.add_directive("jext-public", PublicNames)

"""Griffe extension for the docs site: render the docstrings' reST inline markup as Markdown.

The sources use Sphinx roles (``:class:`~tracking_core.Dispatcher```) and ``Example::`` literal
blocks, which read well in ``help()``; mkdocstrings renders docstrings as Markdown, where they
would show up verbatim. Roles become code spans with the short name (what ``~`` asks for), and a
trailing ``::`` a single colon (the indented block after it is a code block in Markdown too).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:class|meth|func|mod|data|attr|exc|obj):`(~?)([^`]+)`")


def _role_to_code(match: re.Match[str]) -> str:
    short, target = match.group(1), match.group(2)
    return f"`{target.rsplit('.', 1)[-1] if short else target}`"


def markdown_docstring(text: str) -> str:
    """The docstring with Sphinx roles as code spans and ``::`` block openers as plain colons."""
    text = _ROLE.sub(_role_to_code, text)
    return re.sub(r"(\S)::[ \t]*$", r"\1:", text, flags=re.MULTILINE)


class ReSTInlineMarkup(griffe.Extension):
    """Rewrites every loaded object's docstring once, as it is loaded."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown_docstring(obj.docstring.value)

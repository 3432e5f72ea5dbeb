"""A griffe extension for the API reference: the docstrings' reStructuredText bits as
Markdown.

The package's docstrings use Sphinx roles (``:class:`~aioinformer.Snapshot` ``) and
``Example::`` literal blocks, which ``help()`` shows as they are. The reference renders
them as Markdown: a role becomes inline code of its target (the last component after
``~``, the text before ``<target>`` when given), a trailing ``::`` a colon before the
indented code block.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|attr|data|mod|exc|obj|const):`(~?)([^`]+)`")
_LITERAL = re.compile(r"::\n(\s*\n)")


def _role(match: re.Match[str]) -> str:
    short, target = match[1], match[2].strip()
    if "<" in target:  # "text <target>"
        return f"`{target.split('<', 1)[0].strip()}`"
    if short:
        target = target.rsplit(".", 1)[-1]
    return f"`{target.lstrip('.')}`"


def markdown(text: str) -> str:
    """``text`` with its roles and literal-block markers in Markdown."""
    return _LITERAL.sub(r":\n\1", _ROLE.sub(_role, text))


class RestructuredTextRoles(griffe.Extension):
    """Rewrites every docstring griffe loads (see the module docstring)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)

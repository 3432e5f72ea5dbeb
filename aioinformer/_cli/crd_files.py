"""CustomResourceDefinitions read from files, for ``python -m aioinformer sim --crd PATH``.

A PATH is a YAML or JSON file holding one or more documents (``---`` between YAML
documents; empty documents are skipped), or a directory, whose ``*.yaml``, ``*.yml`` and
``*.json`` files are read in name order (not its subdirectories). Every document must be
an ``apiextensions.k8s.io/v1`` CustomResourceDefinition. What is wrong with a PATH is a
:class:`CrdFileError` whose message is one line naming the file (and the document, where
the file holds several).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["CRD_SUFFIXES", "CrdDocument", "CrdFileError", "read_crd_files"]

CRD_SUFFIXES = (".yaml", ".yml", ".json")
"""The files of a directory that are read."""


class CrdFileError(ValueError):
    """A PATH that is not CustomResourceDefinitions: one line, naming the file."""


class CrdDocument(NamedTuple):
    """One CRD read from a file."""

    source: str
    """Where it was read: the file, and the document's number where the file holds several."""
    body: dict[str, Any]
    """The CustomResourceDefinition."""


def read_crd_files(paths: Iterable[str | Path]) -> list[CrdDocument]:
    """The CRDs of every PATH, in order (a directory's files in name order)."""
    crds: list[CrdDocument] = []
    for path in map(Path, paths):
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix in CRD_SUFFIXES and p.is_file())
            if not files:
                raise CrdFileError(f"{path}: no {', '.join(CRD_SUFFIXES)} file in this directory")
            for file in files:
                crds.extend(_read_file(file))
        else:
            crds.extend(_read_file(path))
    return crds


def _read_file(path: Path) -> list[CrdDocument]:
    import yaml

    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise CrdFileError(f"{path}: cannot read it: {reason}") from None
    try:
        docs = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise CrdFileError(f"{path}: not YAML or JSON{where}: {problem}") from None
    if not docs:
        raise CrdFileError(f"{path}: holds no document")
    found = []
    for number, doc in enumerate(docs, 1):
        which = f"{path}, document {number}" if len(docs) > 1 else str(path)
        _check(which, doc)
        found.append(CrdDocument(which, doc))
    return found


def _check(which: str, doc: Any) -> None:
    if not isinstance(doc, dict):
        raise CrdFileError(f"{which}: not a CustomResourceDefinition (a {type(doc).__name__})")
    kind, api_version = doc.get("kind"), doc.get("apiVersion")
    if kind != "CustomResourceDefinition" or api_version != "apiextensions.k8s.io/v1":
        raise CrdFileError(
            f"{which}: not a CustomResourceDefinition (apiextensions.k8s.io/v1) but "
            f"{api_version or '(no apiVersion)'} {kind or '(no kind)'}"
        )

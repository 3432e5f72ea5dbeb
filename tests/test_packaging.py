"""The distribution's metadata, read back from the installed package (what a wheel of this
tree carries): license, readme, project URLs, classifiers and keywords as pyproject.toml
declares them; LICENSE is the Apache License 2.0 verbatim; CHANGELOG.md follows Keep a
Changelog and has the current version; the package is typed. KubeSim is a distribution of
its own (``kubesim/``): installed, ``import kubesim`` works alone and loads no aioinformer."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

import aioinformer
from tests.support import REPO

PYPROJECT: dict[str, Any] = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]

APACHE_2_0_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"
"""sha256 of the Apache License 2.0 text as apache.org publishes it (LICENSE-2.0.txt, the
same bytes as Debian's /usr/share/common-licenses/Apache-2.0 and yarl's wheel LICENSE)."""

REPOSITORY = "https://github.com/aioinformer/aioinformer"


@pytest.fixture
def metadata() -> Any:
    md = importlib.metadata.metadata("aioinformer")
    installed = sorted(md.get_all("Classifier") or [])
    if installed != sorted(PYPROJECT["classifiers"]):
        pytest.fail("the installed metadata is not pyproject.toml's: pip install -e . again")
    return md


def test_pyproject_declares_what_an_index_shows() -> None:
    assert PYPROJECT["readme"] == "README.md"
    assert PYPROJECT["license"] == {"text": "Apache-2.0"}
    assert PYPROJECT["urls"] == {
        "Homepage": REPOSITORY,
        "Documentation": "https://aioinformer.readthedocs.io",
        "Source": REPOSITORY,
        "Issues": f"{REPOSITORY}/issues",
        "Changelog": f"{REPOSITORY}/blob/main/CHANGELOG.md",
    }
    classifiers = set(PYPROJECT["classifiers"])
    assert {
        "Framework :: AsyncIO",
        "Typing :: Typed",
        "License :: OSI Approved :: Apache Software License",
        "Topic :: System :: Distributed Computing",
        "Topic :: System :: Clustering",
        "Programming Language :: Python :: 3 :: Only",
    } <= classifiers
    assert any(c.startswith("Development Status :: ") for c in classifiers)
    lowest = PYPROJECT["requires-python"].removeprefix(">=")
    assert f"Programming Language :: Python :: {lowest}" in classifiers
    assert {"kubernetes", "asyncio", "informer", "controller"} <= set(PYPROJECT["keywords"])


def test_the_installed_metadata_carries_them(metadata: Any) -> None:
    assert metadata["Name"] == "aioinformer"
    assert metadata["Version"] == aioinformer.__version__ == PYPROJECT["version"]
    assert metadata["License"] == "Apache-2.0"
    assert "LICENSE" in (metadata.get_all("License-File") or [])
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert metadata["Requires-Python"] == PYPROJECT["requires-python"]
    urls = dict(u.split(", ", 1) for u in metadata.get_all("Project-URL") or [])
    assert urls == PYPROJECT["urls"]
    assert sorted(metadata["Keywords"].split(",")) == sorted(PYPROJECT["keywords"])
    assert "## Try it" in metadata.get_payload()  # the README is the long description


def test_license_is_the_apache_2_0_text_verbatim() -> None:
    text = (REPO / "LICENSE").read_bytes()
    assert hashlib.sha256(text).hexdigest() == APACHE_2_0_SHA256
    assert text.lstrip().startswith(b"Apache License\n                           Version 2.0")


def test_the_changelog_keeps_a_changelog() -> None:
    text = (REPO / "CHANGELOG.md").read_text()
    assert text.startswith("# Changelog\n")
    assert "https://keepachangelog.com/" in text
    headings = re.findall(r"^## \[([^\]]+)\](.*)$", text, re.MULTILINE)
    assert headings[0] == ("Unreleased", "")
    releases = headings[1:]
    assert releases and all(re.fullmatch(r" - \d{4}-\d{2}-\d{2}", rest) for _, rest in releases)
    versions = [v for v, _ in releases]
    assert versions[0] == PYPROJECT["version"]
    assert versions == sorted(versions, key=lambda v: tuple(map(int, v.split("."))), reverse=True)
    assert versions[-1] == "0.1.0"
    kinds = set(re.findall(r"^### (.+)$", text, re.MULTILINE))
    assert kinds <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
    links = dict(re.findall(r"^\[([^\]]+)\]: (\S+)$", text, re.MULTILINE))
    assert links["Unreleased"] == f"{REPOSITORY}/compare/v{versions[0]}...HEAD"
    assert links["0.1.0"] == f"{REPOSITORY}/releases/tag/v0.1.0"
    assert set(links) == {"Unreleased", *versions}


def test_the_package_is_typed() -> None:
    package = Path(aioinformer.__file__).parent
    assert (package / "py.typed").is_file()
    assert tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["hatch"]["build"][
        "targets"
    ]["wheel"]["packages"] == ["aioinformer"]  # the wheel ships the folder, py.typed with it


def test_kubesim_is_a_distribution_importable_on_its_own(tmp_path: Path) -> None:
    """``python -c "import kubesim"`` in a fresh interpreter, away from the checkout: the
    installed distribution's package, of this tree's version, with nothing of aioinformer
    loaded."""
    declared = tomllib.loads((REPO / "kubesim" / "pyproject.toml").read_text())["project"]
    assert importlib.metadata.version("kubesim") == declared["version"]
    code = (
        "import json, sys, kubesim; "
        "print(json.dumps([kubesim.__file__, kubesim.KubeSim.__name__, sorted(sys.modules)]))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60
    )
    assert run.returncode == 0, run.stderr
    where, server, loaded = json.loads(run.stdout)
    assert Path(where).name == "__init__.py" and server == "KubeSim"
    assert [m for m in loaded if m.partition(".")[0] == "aioinformer"] == []

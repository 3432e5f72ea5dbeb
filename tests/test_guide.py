"""docs/writing-an-operator.md stays in sync with the code it teaches: every Python block
is a verbatim excerpt of examples/website.py or examples/test_website.py, the YAML blocks
parse (the CRD's is an excerpt of it), and its rbac command is the one rbac.yaml was
generated with."""

from __future__ import annotations

import re

import yaml

from tests.support import REPO

GUIDE = REPO / "docs" / "writing-an-operator.md"
SOURCES = [REPO / "examples" / "website.py", REPO / "examples" / "test_website.py"]


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", GUIDE.read_text(), re.M | re.S)


def test_every_python_block_is_quoted_from_the_example_or_its_test() -> None:
    sources = [path.read_text() for path in SOURCES]
    quoted = blocks("python")
    assert len(quoted) >= 6
    for block in quoted:
        assert any(block in source for source in sources), f"not in the examples:\n{block}"
    whole_test = SOURCES[1].read_text()
    assert whole_test in quoted  # the test is quoted in full


def test_the_yaml_blocks_parse_and_the_crd_is_quoted() -> None:
    crd = (REPO / "examples" / "crds" / "website.yaml").read_text()
    found = blocks("yaml")
    for block in found:
        assert yaml.safe_load(block) is not None
    assert any(block in crd and "openAPIV3Schema" in block for block in found)


def test_the_rbac_command_is_the_one_that_generated_the_manifest() -> None:
    text = GUIDE.read_text().replace("\\\n    ", "")
    command = next(ln for ln in text.splitlines() if ln.startswith("python -m aioinformer rbac"))
    rbac = (REPO / "examples" / "deploy" / "website" / "rbac.yaml").read_text()
    generated_by = next(ln for ln in rbac.splitlines() if ln.startswith("#   python"))
    assert generated_by.removesuffix(" > examples/deploy/website/rbac.yaml") == f"#   {command}"

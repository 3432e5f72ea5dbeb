"""The front door is typed: ``mypy --strict`` over the other files of this folder reports
exactly the errors they expect (``# expect [code]: message`` above the line, continued on
``#   `` lines) and nothing else. informer_options.py: a misspelled option and a str for an
index function are refused, through the factory and the manager; accepted.py: the right
calls pass, and the classes conform to the Protocols their consumers declare."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO

HERE = Path(__file__).resolve().parent
CHECKED = sorted(p for p in HERE.glob("*.py") if p.name not in {"__init__.py", Path(__file__).name})
EXPECT = re.compile(r"# expect \[(?P<code>[a-z-]+)\]: (?P<message>.+)")
REPORTED = re.compile(
    r"(?P<path>[^:]+):(?P<line>\d+): error: (?P<message>.+)  \[(?P<code>[a-z-]+)\]"
)

Error = tuple[str, int, str, str]
"""(file name, line, error code, message)."""


def expected(path: Path) -> set[Error]:
    """The errors ``path`` says mypy reports on it."""
    found: set[Error] = set()
    pending: list[str] | None = None
    for number, text in enumerate(path.read_text().splitlines(), 1):
        line = text.strip()
        if match := EXPECT.fullmatch(line):
            pending = [match["code"], match["message"]]
        elif pending is not None and line.startswith("#   "):
            pending[1] += " " + line.removeprefix("#").strip()
        elif pending is not None and line and not line.startswith("#"):
            found.add((path.name, number, pending[0], pending[1]))
            pending = None
    assert pending is None, f"{path.name}: an expectation above no line"
    return found


def test_the_expectations_are_read() -> None:
    options = expected(HERE / "informer_options.py")
    assert {(code, line) for _, line, code, _ in options} >= {("call-arg", 19), ("dict-item", 22)}
    assert len(options) == 6 and expected(HERE / "accepted.py") == set()


@pytest.mark.timeout(300)  # (a first run checks the library and its dependencies)
def test_mypy_strict_reports_exactly_the_expected_errors(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    # pytest's cache dir keeps mypy's warm between runs (a fresh one when -p no:cacheprovider)
    cache = getattr(request.config, "cache", None)
    cache_dir = cache.mkdir("mypy") if cache is not None else tmp_path / "mypy"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(cache_dir),
            *map(str, CHECKED),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=280,
    )
    reported: set[Error] = set()
    for line in result.stdout.splitlines():
        if ": note: " in line:
            continue
        match = REPORTED.fullmatch(line)
        assert match, f"not an error line mypy was expected to write: {line!r}\n{result.stderr}"
        path = Path(match["path"])
        assert path.resolve().parent == HERE, line
        reported.add((path.name, int(match["line"]), match["code"], match["message"]))
    wanted = set().union(*map(expected, CHECKED))
    assert sorted(reported) == sorted(wanted)
    assert result.returncode == (1 if wanted else 0), result.stderr

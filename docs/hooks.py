"""MkDocs hooks for the aioinformer site.

The performance page includes ``bench/RESULTS.md`` as it is (so its figures cannot diverge
from the file the benchmark scripts render); the plots it shows by relative path
(``results/NAME.png``) are published here from ``bench/results/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]


def on_files(files: Files, config: Any) -> Files:
    """Add every ``bench/results/*.png`` to the site as ``results/NAME.png``."""
    for png in sorted((ROOT / "bench" / "results").glob("*.png")):
        files.append(File.generated(config, f"results/{png.name}", abs_src_path=str(png)))
    return files

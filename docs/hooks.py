"""mkdocs hook: the repository files the docs link to (the committed charts and their repro scripts, the examples,
the built-in cases, the CI recipes, the bench results) become part of the site at their repository paths, so a
page links to ``reports/matrix.md`` itself instead of copying its numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files, InclusionLevel

ROOT = Path(__file__).resolve().parent.parent
LINKED = (
    "reports/*.md",
    "reports/**/pictures/*.png",
    "reports/repros/*.py",
    "reports/liger/*.md",
    "reports/liger/repros/*.py",
    "reports/cpu/*.md",
    "reports/cpu/*/*.md",
    "reports/cpu/repro/*.py",
    "examples/*.py",
    "examples/ci/*.yml",
    "cases/*.py",
    "bench/results/**/*.md",
    "bench/results/**/*.png",
    "tests/README.md",
    ".github/workflows/*.yml",
    "known_failures.toml",
    "matrix.toml",
    "matrix-liger.toml",
)


def on_files(files: Files, config: Any) -> Files:
    """Add every file of ``LINKED`` at its repository path."""
    for pattern in LINKED:
        for path in sorted(ROOT.glob(pattern)):
            uri = path.relative_to(ROOT).as_posix()
            site, directory_urls = config["site_dir"], config["use_directory_urls"]
            files.append(File(uri, str(ROOT), site, directory_urls, inclusion=InclusionLevel.NOT_IN_NAV))
    return files

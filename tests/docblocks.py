"""The fenced code blocks of the docs' pages, for the tests that run them (tests/process/test_tutorials.py) or check
them against the code (tests/fast/test_site.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs"
TUTORIALS = ("tutorial/kernel.md", "tutorial/shipped.md")  # every block runs, as shown
GENERATED = "reference"  # docs/gen.py writes these pages: tests/fast/test_site.py compares them with it
FENCE = re.compile(
    r'^(?P<indent> *)```(?P<lang>[\w-]*)(?: title="(?P<title>[^"]+)")?\n(?P<body>.*?)^(?P=indent)```$', re.M | re.S
)
SNIPPET = re.compile(r'^--8<-- "(?P<file>[^"]+)"$')  # a block that is a repository file, included at build time


@dataclass(frozen=True)
class Block:
    page: str
    lang: str
    title: str | None
    text: str

    @property
    def where(self) -> str:
        first = self.text.splitlines()[0][:60] if self.text else ""
        return f"docs/{self.page}: ```{self.lang} {self.title or ''}: {first}"

    def commands(self) -> list[str]:
        """A bash block's commands: one a line, comments and blank lines left out."""
        lines = (line.strip() for line in self.text.splitlines())
        return [line for line in lines if line and not line.startswith("#")]


def blocks(page: str) -> list[Block]:
    """Every fenced block of ``docs/PAGE``, in order (indented ones, inside an admonition, too)."""
    text = (DOCS / page).read_text()
    found = []
    for match in FENCE.finditer(text):
        indent = len(match["indent"])
        body = "\n".join(line[indent:] for line in match["body"].splitlines())
        found.append(Block(page, match["lang"], match["title"], body))
    return found


def pages(generated: bool = False) -> list[str]:
    """The docs' pages, relative to docs/: the written ones (or only the generated ones)."""
    every = sorted(path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md"))
    return [page for page in every if page.startswith(GENERATED + "/") == generated]

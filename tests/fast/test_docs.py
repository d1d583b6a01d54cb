"""[docs]: claims per source, per wrapper or style id, resolved per style and path; the chart reads them."""

from pathlib import Path

from harness.matrix.config import load_matrix
from harness.report.chart import contradictions
from tests.conftest import TOLERANCES, make_record, typed

HEAD = """cases = ["add"]
decorators = ["jit", "autotune_heuristics"]
wrappers = ["launcher", "triton_op"]
control = true
[paths]
eager = { device = "cuda", timeout = 10 }
compile = { device = "cuda", timeout = 10 }
export_nonstrict = { device = "cuda", timeout = 10 }
"""
DOCS = """
[docs.recipe]
source = "the recipe"
[docs.recipe.expect]
launcher = { eager = true, compile = true }
triton_op = { eager = true, compile = true }
autotune_heuristics = { compile = false }
[docs.blog]
source = "the blog"
[docs.blog.expect]
launcher = { eager = true, export_nonstrict = false }
triton_op = { export_nonstrict = true }
"""


def test_claims_come_per_wrapper_overridden_per_style_and_name_their_sources(tmp_path: Path):
    file = tmp_path / "m.toml"
    file.write_text(HEAD + TOLERANCES + DOCS)
    docs = load_matrix(file).docs
    assert docs["sources"] == {"recipe": "the recipe", "blog": "the blog"}

    def claims(style: str) -> dict[str, tuple[bool, str]]:
        return {path: (c["supported"], c["source"]) for path, c in docs["claims"][style].items()}

    assert list(docs["claims"]) == ["raw_jit", "autotune_heuristics", "triton_op", "triton_op_autotune_heuristics"]
    assert claims("raw_jit") == {
        "eager": (True, "recipe, blog"),  # both claim it, alike
        "compile": (True, "recipe"),
        "export_nonstrict": (False, "blog"),
    }
    assert claims("autotune_heuristics") == {
        "eager": (True, "recipe, blog"),
        "compile": (False, "recipe"),  # the style's own claim over its wrapper's
        "export_nonstrict": (False, "blog"),
    }
    assert claims("triton_op_autotune_heuristics") == {
        "eager": (True, "recipe"),
        "compile": (True, "recipe"),  # a style id names one style: not triton_op's autotune_heuristics
        "export_nonstrict": (True, "blog"),
    }


def test_contradictions_read_the_resolved_claims():
    docs = {
        "sources": {"recipe": "r"},
        "claims": {"raw_jit": {"eager": {"supported": True, "source": "recipe"}}},
    }
    cells = [
        typed(make_record("add", "raw_jit", "eager", status="error", error_type="E", error="e")),
        typed(make_record("add", "triton_op", "eager", status="error", error_type="E", error="e")),
    ]
    assert contradictions(cells, docs) == {"add-raw_jit-eager": (True, "recipe")}
    old = {"source": "r", "expect": {"raw_jit": {"eager": True}}}  # results.json written before, upgraded when read
    upgraded = typed({"environment": {"docs": old}, "cells": []}).environment["docs"]
    assert contradictions(cells, upgraded) == {"add-raw_jit-eager": (True, "docs")}
    assert contradictions(cells, None) == {}

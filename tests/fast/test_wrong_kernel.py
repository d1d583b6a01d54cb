"""A kernel wrong in itself (an off-by-one mask planted in examples/scale_clamp.py) is named as the kernel's bug,
"fix the kernel first", even where a style errors on a wrapping limit before any comparison (triton_op over
heuristics: ``wrap_triton`` refuses the ``Heuristics`` object); the chart and ``which`` leave its cells out of the
styles' near misses. Cells run in this process under Triton's interpreter."""

import dataclasses
import importlib.util
import json
import sys
from pathlib import Path

import pytest
from triton.runtime.autotuner import Autotuner

from harness.__main__ import main
from harness.plugin.summary import summary_lines
from harness.records.record import Record
from harness.repro.script import script_source
from harness.spec import CellSpec, Outcome, PathSpec, Status
from tests.conftest import REPO, make_record, typed
from tests.fast.test_cells import MATRIX, run
from tests.fast.test_records_report import render, results, section

STYLES = ("raw_jit", "autotune", "triton_op", "triton_op_heuristics_autotune", "custom_op", "control")
WRAPPERS = {"raw_jit": "launcher", "autotune": "launcher", "control": "control", "custom_op": "custom_op"}
ENV = {
    "goals": {"run eagerly": ["eager"]},
    "styles": {style: {"wrapper": WRAPPERS.get(style, "triton_op")} for style in STYLES},
}
PLANTED = "the kernel scale_clamp disagrees with its reference in the 4 of 5 styles that ran to a comparison"
NOTE = (
    "Left out of the goals, their cells measure nothing of the styles: scale_clamp: its kernel disagrees with its "
    "reference on eager in the 4 of 5 styles that ran to a comparison, while its control passes: fix the kernel "
    "first. The goals are answered over the other cases (scale_ok)."
)


def case_module(folder: Path, source: str, name: str):
    """A module of ``source``, imported from a file of its own (triton reads a kernel's source through it)."""
    file = folder / f"{name}.py"
    file.write_text(source)
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> list[Record]:
    """scale_clamp with its mask off by one (the last element never written) and the right kernel as scale_ok, on
    eager in every style of ``STYLES``."""
    folder = tmp_path_factory.mktemp("cases")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRITON_INTERPRET", "1")
        source = (REPO / "examples" / "scale_clamp.py").read_text()
        planted = source.replace("mask = offsets < n_elements", "mask = offsets < n_elements - 1")
        assert planted != source
        cases = [
            case_module(folder, planted, "planted_scale_clamp").CASE,
            dataclasses.replace(case_module(folder, source, "right_scale_clamp").CASE, id="scale_ok"),
        ]
        found = []
        for case in cases:
            for style in STYLES:
                outcome = run(case, style, "eager", folder, device="cpu")
                spec = CellSpec(case.id, "m", style, PathSpec("eager", "cuda", 60), MATRIX.tolerances["float32"])
                found.append(Record.of(spec, Outcome(**outcome)))
    return found


def test_the_planted_off_by_one_is_wrong_in_every_style_that_compared(records: list[Record]):
    statuses = {(r.case, r.style): str(r.status) for r in records}
    assert statuses[("scale_clamp", "triton_op_heuristics_autotune")] == "error"  # a wrapping limit
    assert [statuses[("scale_clamp", s)] for s in STYLES if s != "triton_op_heuristics_autotune"] == [
        *["wrong"] * 4,
        "pass",
    ]
    assert {statuses[("scale_ok", s)] for s in STYLES if s != "triton_op_heuristics_autotune"} == {"pass"}


def test_the_run_says_fix_the_kernel_first(records: list[Record]):
    last = summary_lines(records, Path("/r/matrix.md"))[-1]
    assert last.startswith(f"[harness] {PLANTED} (max abs diff ")
    assert last.endswith("), while its control passes: fix the kernel first")


def test_the_chart_names_the_kernel_not_the_styles_near_misses(records: list[Record]):
    chart = render(results(*(r.to_dict() for r in records), **ENV))
    detail = section(chart, "Which style for which goal, in detail")
    answer = " ".join(section(chart, "The answer").split())  # a paragraph, as markdown reads it
    assert NOTE in detail and NOTE in answer
    assert "near miss:" not in detail
    assert "- **run eagerly** (`eager`): use **raw_jit**, **autotune** · **triton_op** · **custom_op**" in detail
    assert f"`scale_clamp`: {PLANTED} (max abs diff " in section(chart, "Findings")


def test_which_names_the_kernel_and_answers_over_the_other_cases(records, tmp_path: Path, capsys):
    file = tmp_path / "results.json"
    file.write_text(json.dumps(results(*(r.to_dict() for r in records), **ENV)))
    assert main(["which", "--results", str(file), "--goals", "run eagerly"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:3] == [
        "cases: scale_ok",
        NOTE,
    ]
    assert lines[3].startswith("use: raw_jit, autotune, triton_op, custom_op (passed")
    assert not any("scale_clamp" in line for line in lines[3:])  # no near miss of its cells


def test_a_style_that_errored_does_not_hide_a_style_that_passes():
    """Only styles that ran to a comparison count; one that passes there still makes it a style's problem."""
    cells = [
        Record("k", "raw_jit", "eager", Status.WRONG, error_type="Mismatch", error="output: mismatch"),
        Record("k", "triton_op", "eager", Status.ERROR, error_type="RuntimeError", error="wrap_triton only works"),
        Record("k", "custom_op", "eager", Status.PASS),
        Record("k", "control", "eager", Status.PASS),
    ]
    assert not any("fix the kernel" in line for line in summary_lines(cells, Path("/r/matrix.md")))
    alone = [c for c in cells if c.style != "custom_op"]
    assert summary_lines(alone, Path("/r/matrix.md"))[-1] == (
        "[harness] the kernel k disagrees with its reference in the 1 of 2 styles that ran to a comparison, while "
        "its control passes: fix the kernel first"
    )


def test_opcheck_compares_the_op_with_its_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """opcheck checks the op against itself (schema, fake, autograd, dispatch), which a wrong kernel passes: the
    path then compares one call with the reference, and the planted off-by-one is wrong there too."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    source = (REPO / "examples" / "scale_clamp.py").read_text()
    planted = source.replace("mask = offsets < n_elements", "mask = offsets < n_elements - 1")
    case = case_module(tmp_path, planted, "opcheck_scale_clamp").CASE
    outcome = run(case, "custom_op", "opcheck", tmp_path, device="cpu")
    assert (outcome["status"], outcome["stage"]) == (Status.WRONG, "compare"), outcome
    right = dataclasses.replace(case_module(tmp_path, source, "opcheck_scale_ok").CASE, id="opcheck_ok")  # its op
    assert run(right, "custom_op", "opcheck", tmp_path, device="cpu")["status"] == Status.PASS


UNRESET_ADD = """
import torch
import triton
import triton.language as tl

from harness.case import Case


@triton.jit
def atomic_add_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.atomic_add(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


def launch(kernel, x, **meta):
    out = torch.zeros_like(x)
    kernel[lambda m: (triton.cdiv(x.numel(), m["BLOCK_SIZE"]),)](x, out, x.numel(), **meta)
    return out


def make_inputs(size, device, seed):
    return (torch.randn(size, generator=torch.Generator().manual_seed(seed)).to(device),)


CASE = Case(
    id="unreset_add",
    kernel=atomic_add_kernel,
    launch=launch,
    reference=torch.clone,
    make_inputs=make_inputs,
    arg_names=("x",),
    sizes=(300,),
    meta={"BLOCK_SIZE": 128},
    configs=[triton.Config({"BLOCK_SIZE": 128}), triton.Config({"BLOCK_SIZE": 256})],
    key=["n_elements"],
)
"""


def test_opcheck_compares_the_ops_first_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """An autotuned kernel adding into its output with no ``reset_to_zero`` is wrong on the call that benchmarks
    its configs, a fresh process's first: opcheck's own calls had made it, so the compared call, after them, found
    the config picked and passed. The path and its script compare the first call, before opcheck."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(Autotuner, "do_bench", Autotuner.__dict__["do_bench"])  # the script replaces it
    case = case_module(tmp_path, UNRESET_ADD, "unreset_add_case").CASE
    outcome = run(case, "custom_op_autotune", "opcheck", tmp_path, device="cpu")
    assert (outcome["status"], outcome["stage"]) == (Status.WRONG, "compare"), outcome
    record = make_record("unreset_add", "custom_op_autotune", "opcheck", module="unreset_add_case", status="wrong")
    env = {"device": "cpu", "torch": "t", "triton": "x", "triton_interpret": True}
    source = script_source(typed(record), env, MATRIX.tolerances)
    with pytest.raises(AssertionError, match="wrong numbers: output"):
        exec(compile(source, "script", "exec"), {"__name__": "__main__"})

"""A cell of a path its script runs (harness/cell/scripted.py) where running the program again in the cell's
process would fail where a user's process does not: the harness's own path runs it instead. (What such a cell runs
when it does run its program: tests/fast/test_one_program.py.)"""

import dataclasses
import functools
import sys
import types
import zipfile
from pathlib import Path

import pytest

from harness.case import load_case
from harness.cell import context, scripted
from harness.cell.paths.export import _names
from harness.cell.runner import run_cell
from harness.cell.scripted import defines_library, readable
from harness.script.writer import Program, write_program
from harness.spec import Capture, Outcome, Status, Tolerance
from tests.conftest import cell_spec


@pytest.mark.parametrize("path", ["eager", "cpu_fallback", "eager"])
def test_a_case_defining_its_own_library_namespace_passes_on_every_call_of_the_process(path: str, tmp_path: Path):
    spec = cell_spec("own_library", "as_shipped", path, module="tests.fixtures.own_library")
    outcome = run_cell(load_case(spec.module, spec.case), spec, tmp_path, {}, "cpu")
    assert outcome.status == "pass", outcome.error


def test_the_program_would_define_the_namespace_again(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """The reason for the fallback: the case's module already defined it, so its program's second definition fails."""
    monkeypatch.setattr(scripted, "defines_library", lambda code: False)
    spec = cell_spec("own_library", "as_shipped", "eager", module="tests.fixtures.own_library")
    outcome = run_cell(load_case(spec.module, spec.case), spec, tmp_path, {}, "cpu")
    assert outcome.status == "error" and "Only a single TORCH_LIBRARY" in outcome.error


def test_what_defines_a_namespace():
    assert defines_library('LIB = torch.library.Library("ns", "DEF")')
    assert defines_library('torch.library.define("ns::f", "(Tensor x) -> Tensor")')
    assert not defines_library('@torch.library.custom_op("ns::f", mutates_args=())\ndef f(x: torch.Tensor): ...')


def test_a_program_whose_names_the_case_took_runs_at_every_drawn_size(monkeypatch: pytest.MonkeyPatch, tmp_path):
    """The case defines ``SIZE``, ``check``, ``main``: the program's own are renamed, and the cell sets the renamed
    size on each drawn example (the case's own ``SIZE`` untouched), as the harness's own path runs those sizes."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # the program's kernels, defined as it loads, run on the CPU
    spec = cell_spec("name_clash", "custom_op_autotune", "eager", module="tests.fixtures.name_clash")
    spec = dataclasses.replace(spec, path=dataclasses.replace(spec.path, examples=3))
    seen: dict[bool, list[int]] = {True: [], False: []}
    for scripts in (True, False):
        record = functools.partial(lambda on, case, inputs: seen[on].append(inputs[0].numel()), scripts)
        monkeypatch.setattr(scripted, "check_inputs", record)
        monkeypatch.setattr(context, "check_inputs", record)
        monkeypatch.setattr(scripted, "RUN_BY_SCRIPT", frozenset({"eager"} if scripts else ()))
        outcome = run_cell(load_case(spec.module, spec.case), spec, tmp_path, {}, "cpu")
        assert outcome.status == "pass", outcome.error
    assert len(set(seen[True])) == 3 and seen[True] == seen[False], seen
    loaded = [m for n, m in sys.modules.items() if n.startswith("cell_program_")]
    program = max(loaded, key=lambda m: int(m.__name__.rpartition("_")[2]))  # the last loaded
    assert getattr(program, "SIZE", 7) == 7 and program.SIZE_ == seen[True][-1]  # the case's own, where it kept it


def test_a_record_names_the_op_and_the_program_as_its_script_does(tmp_path: Path):
    file = tmp_path / "add-custom_op-compile.py"
    cell = types.SimpleNamespace(program=Program("", namespace="mylib_0123abcd_1"), program_file=file)
    outcome = Outcome(status=Status.ERROR, error=f'no kernel for mylib_0123abcd_1::add\n  File "{file}", line 4',
                      traceback="torch.ops.mylib_0123abcd_1.add", capture=Capture(captured=("mylib_0123abcd_1.add",),
                      graph_break_reasons=(f"{file}: skipped",)))  # fmt: skip
    said = readable(outcome, cell)
    assert said.error == 'no kernel for mylib::add\n  File "add-custom_op-compile.py", line 4'
    assert said.traceback == "torch.ops.mylib.add"
    assert said.capture.captured == ("mylib.add",)
    assert said.capture.graph_break_reasons == ("add-custom_op-compile.py: skipped",)


def test_a_namespace_is_named_for_its_ops_text_and_new_in_this_process(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(scripted, "REGISTERED", {})
    assert scripted.namespace("0123abcd") == "mylib_0123abcd"  # as in any other process that loads this text
    assert scripted.namespace("0123abcd") == "mylib_0123abcd_1"  # a second program of it here: a name of its own
    assert scripted.namespace("89abcdef") == "mylib_89abcdef"
    assert not scripted.registered("mylib_0123abcd", "89abcdef")  # taken here from another text
    assert not scripted.registered("mylib_0123abcd", "0123abcd")  # taken, but torch has no op in it
    assert not scripted.registered("mylib_fedcba98", "fedcba98")  # never taken here


def test_a_program_in_another_namespace_keeps_the_cases_code_and_its_digest():
    case = load_case("cases.add", "add")
    program = write_program("cases.add", case, "custom_op", "aoti_strict", "cuda", Tolerance(1e-5, 1e-5))
    moved = program.in_namespace("mylib_0123abcd")
    assert '"mylib_0123abcd::' in moved.text and '"mylib::' not in moved.text
    assert program.case_code in moved.text and moved.namespace == "mylib_0123abcd"
    assert moved.digest() == program.digest() and moved.op_key == program.op_key
    other = write_program("cases.add", case, "triton_op", "aoti_strict", "cuda", Tolerance(1e-5, 1e-5))
    assert other.op_key != program.op_key  # another style's text: another namespace


def test_a_package_names_a_namespace_only_where_that_very_name_occurs(tmp_path: Path):
    package = tmp_path / "model.pt2"
    with zipfile.ZipFile(package, "w") as archive:
        archive.writestr("data/wrapper.cpp", b"aoti_torch_proxy_executor_call_function(mylib_0123abcd_1::add)")
    assert _names(str(package), "mylib_0123abcd_1")
    assert not _names(str(package), "mylib_0123abcd")  # a longer name that begins with it

"""What moved inside Triton and PyTorch between the releases the harness runs on is reached by a feature check
(harness/kernel/compat.py): each older layout, made here by taking the newer one away, still works."""

import types

import pytest
import torch
import triton
import triton.compiler.compiler
import triton.runtime.cache
from triton.runtime import interpreter

from harness.execution import script_server
from harness.kernel import compat
from harness.kernel.launches import observed_launches


def test_triton_key_is_found_where_this_triton_keeps_it(monkeypatch: pytest.MonkeyPatch):
    assert compat.triton_key() is triton.runtime.cache.triton_key  # this Triton's (3.5 on)

    def older() -> str:
        return "3.4"

    monkeypatch.delattr(triton.runtime.cache, "triton_key")
    monkeypatch.setattr(triton.compiler.compiler, "triton_key", older, raising=False)
    assert compat.triton_key() is older  # triton 3.4 keeps it in triton.compiler.compiler
    monkeypatch.delattr(triton.compiler.compiler, "triton_key")
    assert compat.triton_key() is None  # none: the fork server hashes nothing ahead


def test_the_launch_hook_and_the_autotuning_store_without_knobs(monkeypatch: pytest.MonkeyPatch):
    """A Triton without ``triton.knobs`` (3.2) keeps its launch hook on ``CompiledKernel`` and stores no autotuning
    results: observing launches and turning the store off still work."""
    monkeypatch.delattr(triton, "knobs")
    monkeypatch.setattr(triton.compiler.compiler.CompiledKernel, "launch_enter_hook", None, raising=False)
    assert compat.launch_hooks() == (triton.compiler.compiler.CompiledKernel, "launch_enter_hook")
    compat.store_autotuning(False)  # nothing to turn off
    with observed_launches() as launched:
        hook = triton.compiler.compiler.CompiledKernel.launch_enter_hook
        hook(types.SimpleNamespace(data={"name": "my_kernel"}))
    assert launched == {"my_kernel"} and triton.compiler.compiler.CompiledKernel.launch_enter_hook is None


def test_interpreter_launches_are_observed_without_interpreted_function_run(monkeypatch: pytest.MonkeyPatch):
    """Before triton 3.6 the interpreter had no ``InterpretedFunction.run``: every launch ends in
    ``GridExecutor.__call__``, which names the kernel it runs."""
    assert compat.interpreter_launches()[:2] == (interpreter.InterpretedFunction, "run")
    monkeypatch.delattr(interpreter.InterpretedFunction, "run")
    monkeypatch.setattr(interpreter.GridExecutor, "__call__", lambda self, *args, **kwargs: "ran")
    assert compat.interpreter_launches()[:2] == (interpreter.GridExecutor, "__call__")

    def my_kernel(x):
        pass

    executor = interpreter.GridExecutor.__new__(interpreter.GridExecutor)
    executor.fn = my_kernel
    with observed_launches() as launched:
        assert executor() == "ran"
    assert launched == {"my_kernel"}


@pytest.mark.parametrize(("gpu", "refused"), [(False, False), (True, True)])
def test_a_cuda_build_without_a_gpu_forks_safely(monkeypatch: pytest.MonkeyPatch, gpu: bool, refused: bool):
    """torch 2.6 and 2.8's CUDA builds mark CUDA started on a machine without a GPU (Inductor's CPU-ISA probe):
    the fork servers (the cells' zygote, the scripts') refuse to fork only where there is a GPU a child could not
    use."""
    monkeypatch.setattr(torch._C, "_cuda_isInBadFork", lambda: True, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu)
    assert script_server.fork_is_safe() is not refused
    monkeypatch.setattr(torch._C, "_cuda_isInBadFork", lambda: False, raising=False)
    assert script_server.fork_is_safe()


def test_a_style_this_torch_has_not_is_a_skip_naming_the_api(monkeypatch: pytest.MonkeyPatch, tmp_path):
    """A torch without ``torch.library.triton_op`` has not the triton_op styles: their cells are skips that say
    which API this torch lacks, not errors of the style."""
    from tests.fast.test_cells import run

    monkeypatch.delattr(torch.library, "triton_op")
    record = run("tests.fixtures.good", "triton_op_autotune", "cpu_fallback", tmp_path, device="cpu")
    assert (record["status"], record["reason"]) == ("skip", f"torch {torch.__version__} has no torch.library.triton_op")
    assert run("tests.fixtures.good", "custom_op", "cpu_fallback", tmp_path, device="cpu")["status"] == "pass"


def test_the_oldest_torch_declared_is_the_one_ci_runs_the_matrix_on():
    """pyproject.toml's floor (torch>=, triton>=), noxfile.py's OLDEST (CI's smoke run of the matrix, which .ci/run
    runs) and the README's install table name the same release: the declared range is the tested range."""
    import ast
    import re
    import tomllib

    from tests.conftest import REPO

    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    floors = dict(re.fullmatch(r"(torch|triton)>=([\d.]+)", dep).groups() for dep in dependencies
                  if re.fullmatch(r"(torch|triton)>=[\d.]+", dep))
    constants = {target.id: ast.literal_eval(node.value) for node in ast.parse((REPO / "noxfile.py").read_text()).body
                 if isinstance(node, ast.Assign) for target in node.targets if isinstance(target, ast.Name)
                 and target.id in ("OLDEST", "TORCH_TRITON")}
    oldest = constants["OLDEST"]
    assert oldest.startswith(floors["torch"] + ".") and constants["TORCH_TRITON"][oldest].startswith(floors["triton"])
    assert oldest == min(constants["TORCH_TRITON"], key=lambda version: tuple(map(int, version.split("."))))
    assert "python3 noxw.py -s oldest" in (REPO / ".ci" / "run").read_text().splitlines()
    row = next(line for line in (REPO / "README.md").read_text().splitlines() if line.startswith("| the oldest"))
    assert f"| {oldest} " in row and f"| {constants['TORCH_TRITON'][oldest]} |" in row

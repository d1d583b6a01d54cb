"""The Case API for kernels as users ship them (examples/dropout.py, row_normalize.py, shipped.py) and the Liger suite:
ops as shipped, non-float outputs, inputs with no gradient, optional backward and flops, several kernels per op,
in-place ops with a backward, the opcheck path and the interpreter's self-check. In-process cells on CPU."""

from pathlib import Path


def test_examples_run_under_the_interpreter(write_matrix, tmp_path: Path):
    """Under --interpret: both kernels of row_normalize launch (and are recorded), the launcher trains the in-place
    scale_inplace through its backward kernel, the ops as shipped (autograd.Function, function, module) run their
    Triton kernel on CPU tensors (the shipped triton_op its own CPU kernel), and the bool mask of dropout_mask is
    compared exactly."""
    from harness.records.files import read_results
    from tests.conftest import run_harness

    matrix = write_matrix(
        ["examples.row_normalize", "examples.shipped", "examples.dropout"],
        ["raw_jit", "as_shipped", "control"],
        {"eager": ("cuda", 120), "train_eager": ("cuda", 120)},
    )
    done = run_harness("run", "--interpret", "--matrix", str(matrix), "--report-dir", str(tmp_path), "-n", "2", "-q")
    assert done.returncode == 0, done.stdout[-2000:]
    cells = {c["id"]: c for c in read_results(tmp_path / "results.json").to_data()["cells"]}
    status = {cell_id: cell["status"] for cell_id, cell in cells.items()}
    for case in ("row_normalize", "scale_inplace", "dropout_mask"):
        assert status[f"{case}-raw_jit-eager"] == status[f"{case}-raw_jit-train_eager"] == "pass", cells
    for case in ("mul_add_autograd", "mul_add_function", "mul_add_library_op", "mul_add_module"):
        assert status[f"{case}-as_shipped-eager"] == status[f"{case}-as_shipped-train_eager"] == "pass", case
        launched = cells[f"{case}-as_shipped-eager"]["capture"].get("kernels_launched")
        # the library's triton_op has a CPU kernel of its own: on CPU tensors that runs, no Triton kernel
        assert launched == (None if case == "mul_add_library_op" else ["mul_add_kernel"]), case
    launched = cells["row_normalize-raw_jit-eager"]["capture"]["kernels_launched"]
    assert launched == ["row_sum_kernel", "scale_rows_kernel"]
    assert cells["mul_add_module-as_shipped-eager"]["measurements"]["wrapped_as"] == "nn.Module MulAdd"

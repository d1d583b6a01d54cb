# @triton.autotune decorating a kernel on a machine without a GPU (the kernel is never launched): as users write it,
# with no benchmark of its own, and given one (do_bench=)
import torch
import triton
import triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)

def wall_clock_bench(kernel_call, quantiles):  # a benchmark that needs no device
    kernel_call()
    return [1.0, 1.0, 1.0] if quantiles else 1.0

print(f"torch {torch.__version__}, triton {triton.__version__}")
for given in ({}, {"do_bench": wall_clock_bench}):
    try:
        triton.autotune([triton.Config({"BLOCK": 1024})], key=["n"], **given)(add_kernel)
        print(f"  {'with' if given else 'without'} do_bench: decorated")
    except RuntimeError as error:
        print(f"  {'with' if given else 'without'} do_bench: decorating raises RuntimeError: {error}")

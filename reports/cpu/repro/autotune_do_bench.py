# @triton.autotune given its own do_bench, decorated on a machine without a GPU (the kernel is never launched)
import torch
import triton
import triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)

def wall_clock_bench(kernel_call, quantiles):  # benchmarks without a device
    kernel_call()
    return [1.0, 1.0, 1.0] if quantiles else 1.0

print(f"torch {torch.__version__}, triton {triton.__version__}")
try:
    tuned = triton.autotune([triton.Config({"BLOCK": 1024})], key=["n"], do_bench=wall_clock_bench)(add_kernel)
    print(f"decorated: benchmarks with {tuned.do_bench.__name__}")
except RuntimeError as error:
    print(f"decorating raises RuntimeError: {error}")

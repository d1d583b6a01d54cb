# torch.library.triton_op with a CPU kernel (register_kernel("cpu")) under torch.compile, on CPU tensors, no GPU
import torch
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)

@triton_op("repro::add", mutates_args=())
def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    wrap_triton(add_kernel)[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out

add.register_kernel("cpu")(lambda x, y: x + y)
x, y = torch.randn(3001), torch.randn(3001)
print(f"torch {torch.__version__}, triton {triton.__version__}; eager right: {torch.equal(add(x, y), x + y)}")
try:
    got = torch.compile(lambda a, b: add(a, b))(x, y)
    print(f"compiled: right: {torch.allclose(got, x + y)}, max abs diff {(got - (x + y)).abs().max().item():.4g}")
except Exception as error:
    print(f"compiled: raises {type(error).__name__}: {str(error).strip().splitlines()[0][:160]}")

# a plain @triton.jit kernel launched by a Python function inside a Module, torch.compile'd (Inductor), on CPU
import torch
import triton
import triton.language as tl
from torch._inductor.compile_fx import compile_fx

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)

def add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out

class Model(torch.nn.Module):
    def forward(self, x, y):
        return add(x, y)

events = []  # what Inductor compiled, and whether its code ran, before the error

def inductor(gm, example_inputs):
    calls = [getattr(node.target, "__name__", str(node.target)) for node in gm.graph.nodes if node.op == "call_function"]
    events.append(f"compiled {calls}")
    compiled = compile_fx(gm, example_inputs)
    return lambda *args: (events.append("ran"), compiled(*args))[1]

try:
    torch.compile(Model(), backend=inductor)(torch.randn(3001), torch.randn(3001))
except Exception as error:
    print(f"torch {torch.__version__}, triton {triton.__version__}: raises {type(error).__name__}: {error}; {events}")

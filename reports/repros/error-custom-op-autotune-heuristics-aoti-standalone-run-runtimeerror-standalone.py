"""sin-custom_op_autotune_heuristics-aoti_standalone: a reproducer written by triton-torch-matrix.
The harness recorded: error at run: standalone process exited 1: RuntimeError: Could not find schema for mylib::sin.
The same failure in 8 more cell(s) of this style and path: add-custom_op_autotune_heuristics-aoti_standalone, silu-custom_op_autotune_heuristics-aoti_standalone, softmax-custom_op_autotune_heuristics-aoti_standalone, matmul-custom_op_autotune_heuristics-aoti_standalone, add_inplace-custom_op_autotune_heuristics-aoti_standalone, rmsnorm-custom_op_autotune_heuristics-aoti_standalone, layernorm-custom_op_autotune_heuristics-aoti_standalone, sin_triton_backward-custom_op_autotune_heuristics-aoti_standalone.
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


from torch._inductor import aoti_compile_and_package
import os
import subprocess
import sys
import tempfile


# ---- the case's own code (cases.sin) ----

import torch
import triton
import triton.language as tl

MAX_BLOCK = 1024


@triton.jit
def sin_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    if EVEN:
        tl.store(out_ptr + offsets, tl.sin(tl.load(x_ptr + offsets)))
    else:
        mask = offsets < n_elements
        tl.store(out_ptr + offsets, tl.sin(tl.load(x_ptr + offsets, mask=mask)), mask=mask)


def launch(kernel, x, **meta):
    out = torch.empty_like(x)
    n_elements = out.numel()
    kernel[lambda m: (triton.cdiv(n_elements, m["BLOCK_SIZE"]),)](x, out, n_elements, **meta)
    return out


def make_inputs(size, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(size, generator=gen).to(device),)


CONFIGS = [triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 512}, num_warps=4)]
KEY = ["n_elements"]
HEURISTICS = {"EVEN": lambda args: args["n_elements"] % MAX_BLOCK == 0}
CONFIG_HEURISTICS = {"EVEN": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0}


# ---- the style: custom_op_autotune_heuristics ----
kernel = triton.autotune(configs=CONFIGS, key=KEY)(triton.heuristics({**HEURISTICS, **CONFIG_HEURISTICS})(sin_kernel))


@torch.library.custom_op("mylib::sin", mutates_args=())
def sin(x: torch.Tensor) -> torch.Tensor:
    return launch(kernel, x)


@sin.register_fake
def _(x):
    return torch.sin(x)


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.ops.mylib.sin(x)


class Reference(torch.nn.Module):
    def forward(self, x):
        return torch.sin(x)


# ---- the path: aoti_standalone ----
DEVICE, SIZE, SEED = 'cuda', 3001, 0  # the inputs the cell ran
ATOL, RTOL = 1e-05, 1e-05  # the tolerance for float32


export = torch.export.export


def copied(inputs):  # fresh copies of the tensors for every call, their strides kept
    return tuple((v.detach().clone() if v.is_contiguous() or 0 in v.stride() else torch.empty_strided(
        v.shape, v.stride(), dtype=v.dtype, device=v.device).copy_(v)) if isinstance(v, torch.Tensor) else v
        for v in inputs)


def check(what, out, expected):  # every output against the reference's, on the CPU
    cpu = lambda v: tuple(map(cpu, v)) if isinstance(v, tuple | list) else v.detach().cpu() if torch.is_tensor(v) else v
    try:
        torch.testing.assert_close(cpu(out), cpu(expected), atol=ATOL, rtol=RTOL)
    except AssertionError as error:
        raise AssertionError(f"wrong numbers: {what}: {' '.join(str(error).split())}") from None


def in_fresh_process(package, inputs):  # a process that imports torch only loads and runs it
    folder = tempfile.mkdtemp()
    torch.save(list(inputs), f"{folder}/in.pt")
    loader = ("import sys, torch, torch._inductor.package; runner = torch._inductor.aoti_load_package(sys.argv[1]); "
              "torch.save(runner(*torch.load(sys.argv[2])), sys.argv[3])")
    done = subprocess.run([sys.executable, "-c", loader, package, f"{folder}/in.pt", f"{folder}/out.pt"],
                          capture_output=True, text=True)
    if done.returncode < 0:
        os.kill(os.getpid(), -done.returncode)  # it died of a signal: so do we
    if done.returncode:
        said = (done.stderr.strip().splitlines() or ["(nothing on stderr)"])[-1]
        raise RuntimeError(f"standalone process exited {done.returncode}: {said}")
    return torch.load(f"{folder}/out.pt")


def main():
    torch.manual_seed(0)
    model = Model().to(DEVICE)
    reference_model = Reference().to(DEVICE)
    inputs = make_inputs(SIZE, DEVICE, SEED)
    with torch.no_grad():
        expected = reference_model(*copied(inputs))
    model.eval()
    program = export(model, copied(inputs), strict=True)
    package = aoti_compile_and_package(program, package_path=os.path.join(tempfile.mkdtemp(), "model.pt2"))
    check("output", in_fresh_process(package, inputs), expected)


if __name__ == "__main__":
    main()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces
    print("no failure: sin-custom_op_autotune_heuristics-aoti_standalone passes here")

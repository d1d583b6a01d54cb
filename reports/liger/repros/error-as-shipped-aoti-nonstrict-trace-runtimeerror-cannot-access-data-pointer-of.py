"""liger_rms_norm-as_shipped-aoti_nonstrict: a reproducer written by triton-torch-matrix.
The harness recorded: error at trace: Cannot access data pointer of Tensor (e.g. FakeTensor, FunctionalTensor). If
you're using torch.compile/export/fx, it is likely that we are erroneously tracing into a custom kernel. To fix
this, …
The same failure in 6 more cell(s) of this style and path: liger_rms_norm_gemma-as_shipped-aoti_nonstrict, liger_swiglu-as_shipped-aoti_nonstrict, liger_geglu-as_shipped-aoti_nonstrict, liger_layer_norm-as_shipped-aoti_nonstrict, liger_rope-as_shipped-aoti_nonstrict, liger_kl_div-as_shipped-aoti_nonstrict.
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


from torch._inductor import aoti_compile_and_package, aoti_load_package
import os
import tempfile


# ---- the case's own code (cases.liger_rms_norm) ----

import torch

from liger_kernel.ops import LigerRMSNormFunction

HIDDEN = 256  # the normalized and activated width
EPS = 1e-6


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def llama_rms_norm(x, weight):
    """transformers' LlamaRMSNorm.forward."""
    dtype = x.dtype
    hidden = x.to(torch.float32)
    hidden = hidden * torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + EPS)
    return weight * hidden.to(dtype)


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    x = randn(batch, 17, HIDDEN, generator=gen, device=device, dtype=torch.bfloat16)
    weight = 1 + randn(HIDDEN, generator=gen, device=device, dtype=torch.bfloat16, scale=0.1)
    return x, weight


SHIPPED_ARGS = (EPS, 0.0, "llama", True)


# ---- the style: as_shipped ----


class Model(torch.nn.Module):
    def forward(self, x, weight):
        return LigerRMSNormFunction.apply(x, weight, *SHIPPED_ARGS)


class Reference(torch.nn.Module):
    def forward(self, x, weight):
        return llama_rms_norm(x, weight)


# ---- the path: aoti_nonstrict ----
DEVICE, SIZE, SEED = 'cuda', 3, 0  # the inputs the cell ran
ATOL, RTOL = 0.01, 0.016  # the tolerance for bfloat16


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


def main():
    torch.manual_seed(0)
    model = Model().to(DEVICE)
    reference_model = Reference().to(DEVICE)
    inputs = make_inputs(SIZE, DEVICE, SEED)
    with torch.no_grad():
        expected = reference_model(*copied(inputs))
    model.eval()
    program = export(model, copied(inputs), strict=False)
    package = aoti_compile_and_package(program, package_path=os.path.join(tempfile.mkdtemp(), "model.pt2"))
    runner = aoti_load_package(package)
    for call in range(1, 3):
        with torch.no_grad():
            out = runner(*copied(inputs))
        check("output" if call == 1 else f"output, call {call}", out, expected)
    return runner


if __name__ == "__main__":
    main()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces
    print("no failure: liger_rms_norm-as_shipped-aoti_nonstrict passes here")

"""liger_rms_norm_gemma-as_shipped-subclass_eager: a reproducer written by triton-torch-matrix.
The harness recorded: error at run: CUDA error: an illegal memory access was encountered
The same failure in 7 more cell(s) of this style and path: liger_rms_norm-as_shipped-subclass_eager, liger_swiglu-as_shipped-subclass_eager, liger_geglu-as_shipped-subclass_eager, liger_layer_norm-as_shipped-subclass_eager, liger_rope-as_shipped-subclass_eager, liger_cross_entropy-as_shipped-subclass_eager, liger_kl_div-as_shipped-subclass_eager.
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


from torch.testing._internal.two_tensor import TwoTensor


# ---- the case's own code (cases.liger_rms_norm_gemma) ----

import torch

from liger_kernel.ops import LigerRMSNormFunction

HIDDEN = 256  # the normalized and activated width
EPS = 1e-6


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def gemma_rms_norm(x, weight):
    """transformers' GemmaRMSNorm.forward."""
    hidden = x.float()
    output = hidden * torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + EPS)
    return (output * (1.0 + weight.float())).type_as(x)


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    x = randn(batch, 17, HIDDEN, generator=gen, device=device, dtype=torch.bfloat16)
    weight = randn(HIDDEN, generator=gen, device=device, dtype=torch.bfloat16, scale=0.1)
    return x, weight


SHIPPED_ARGS = (EPS, 1.0, "gemma", False)


# ---- the style: as_shipped ----


class Model(torch.nn.Module):
    def forward(self, x, weight):
        return LigerRMSNormFunction.apply(x, weight, *SHIPPED_ARGS)


class Reference(torch.nn.Module):
    def forward(self, x, weight):
        return gemma_rms_norm(x, weight)


# ---- the path: subclass_eager ----
DEVICE, SIZE, SEED = 'cuda', 3, 0  # the inputs the cell ran
ATOL, RTOL = 0.01, 0.016  # the tolerance for bfloat16


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
    second = tuple(b if isinstance(b, torch.Tensor) else a for a, b in zip(inputs, make_inputs(SIZE, DEVICE, SEED + 1)))
    with torch.no_grad():
        expected_b = reference_model(*copied(second))
    both = tuple(TwoTensor(*copied((a, b))) if isinstance(a, torch.Tensor) else a for a, b in zip(inputs, second))
    with torch.no_grad():
        out = model(*both)
    torch.cuda.synchronize() if DEVICE == "cuda" else None  # a fault of the kernel surfaces here
    outs = out if isinstance(out, tuple | list) else (out,)
    several = isinstance(out, tuple | list)
    for i, one in enumerate(outs):
        if not isinstance(one, TwoTensor):
            what = f"output {i}" if several else "output"
            raise AssertionError(f"wrong numbers: {what}: expected a TwoTensor, got {type(one).__name__}")
    check("output .a", tuple(o.a for o in outs) if several else out.a, expected)
    check("output .b", tuple(o.b for o in outs) if several else out.b, expected_b)


if __name__ == "__main__":
    main()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces
    print("no failure: liger_rms_norm_gemma-as_shipped-subclass_eager passes here")

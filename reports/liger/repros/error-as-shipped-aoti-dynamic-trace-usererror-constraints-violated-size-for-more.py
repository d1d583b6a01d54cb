"""liger_rope-as_shipped-aoti_dynamic: a reproducer written by triton-torch-matrix.
The harness recorded: error at trace: Constraints violated (size)! For more information, run with
TORCH_LOGS="+dynamic".
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


from torch._inductor import aoti_compile_and_package, aoti_load_package
import os
import tempfile


# ---- the case's own code (cases.liger_rope) ----

import torch

from liger_kernel.ops import LigerRopeFunction

Q_HEADS, KV_HEADS, SEQ, HEAD_DIM = 4, 2, 16, 64


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    """transformers' apply_rotary_pos_emb with unsqueeze_dim=1."""
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    q = randn(batch, Q_HEADS, SEQ, HEAD_DIM, generator=gen, device=device)
    k = randn(batch, KV_HEADS, SEQ, HEAD_DIM, generator=gen, device=device)
    inv_freq = 1.0 / (10000 ** (torch.arange(0, HEAD_DIM, 2, dtype=torch.float32) / HEAD_DIM))
    freqs = torch.outer(torch.arange(SEQ, dtype=torch.float32), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)[None]  # (1, seq, head_dim), as LlamaRotaryEmbedding gives it
    return q, k, emb.cos().to(device), emb.sin().to(device)


# ---- the style: as_shipped ----


class Model(torch.nn.Module):
    def forward(self, q, k, cos, sin):
        return LigerRopeFunction.apply(q, k, cos, sin)


class Reference(torch.nn.Module):
    def forward(self, q, k, cos, sin):
        return apply_rotary_pos_emb(q, k, cos, sin)


# ---- the path: aoti_dynamic ----
DEVICE, SIZE, SEED = 'cuda', 2, 0  # the inputs the cell ran
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


def main():
    torch.manual_seed(0)
    model = Model().to(DEVICE)
    reference_model = Reference().to(DEVICE)
    inputs = make_inputs(SIZE, DEVICE, SEED)
    model.eval()
    size = torch.export.Dim("size", min=1, max=10)
    program = export(model, copied(inputs), dynamic_shapes={"q": {0: size}, "k": {0: size}, "cos": None, "sin": None}, strict=True)
    package = aoti_compile_and_package(program, package_path=os.path.join(tempfile.mkdtemp(), "model.pt2"))
    runner = aoti_load_package(package)
    for size in [2, 1, 5]:
        at = inputs if size == SIZE else make_inputs(size, DEVICE, SEED)
        with torch.no_grad():
            expected = reference_model(*copied(at))
        for call in range(1, 3):
            with torch.no_grad():
                out = runner(*copied(at))
            check(f"output at size {size}" if call == 1 else f"output at size {size}, call {call}", out, expected)
    return runner


if __name__ == "__main__":
    main()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces
    print("no failure: liger_rope-as_shipped-aoti_dynamic passes here")

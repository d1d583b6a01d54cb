"""liger_rope-as_shipped-vmap: a reproducer written by triton-torch-matrix.
The harness recorded: error at run: In order to use an autograd.Function with functorch transforms (vmap, grad, jvp,
jacrev, ...), it must override the setup_context staticmethod. For more details, please see …
The same failure in 7 more cell(s) of this style and path: liger_rms_norm-as_shipped-vmap, liger_rms_norm_gemma-as_shipped-vmap, liger_swiglu-as_shipped-vmap, liger_geglu-as_shipped-vmap, liger_layer_norm-as_shipped-vmap, liger_cross_entropy-as_shipped-vmap, liger_kl_div-as_shipped-vmap.
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


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


# ---- the path: vmap ----
DEVICE, SIZE, SEED = 'cuda', 2, 0  # the inputs the cell ran
ATOL, RTOL = 1e-05, 1e-05  # the tolerance for float32


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
    items = [inputs] + [tuple(b if isinstance(b, torch.Tensor) else a for a, b in zip(inputs, make_inputs(SIZE, DEVICE, SEED + k))) for k in range(1, 3)]
    batched = tuple(torch.stack(v) if isinstance(v[0], torch.Tensor) else v[0] for v in zip(*items))
    in_dims = tuple(0 if isinstance(v, torch.Tensor) else None for v in batched)
    with torch.no_grad():
        out = torch.vmap(model, in_dims=in_dims)(*batched)
    torch.cuda.synchronize() if DEVICE == "cuda" else None  # a fault of the kernel surfaces here
    for one in out if isinstance(out, tuple | list) else (out,):
        if not isinstance(one, torch.Tensor) or one.shape[:1] != (3,):
            raise AssertionError(f"wrong numbers: output: expected 3 items along dim 0, got {getattr(one, 'shape', one)}")
    for k, item in enumerate(items):
        with torch.no_grad():
            expected = reference_model(*copied(item))
        check(f"output of item {k}", tuple(o[k] for o in out) if isinstance(out, tuple | list) else out[k], expected)


if __name__ == "__main__":
    main()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces
    print("no failure: liger_rope-as_shipped-vmap passes here")

"""flash-linear-attention's chunked Simple GLA, ``fla.ops.simple_gla.chunk_simple_gla(q, k, v, g,
output_final_state=True)`` (``ChunkSimpleGLAFunction`` behind ``@torch.compiler.disable``; the output and the final
state), against fla's own naive chunked form (``fla.ops.simple_gla.naive.naive_chunk_simple_gla``, float32), in
bfloat16; 100 steps: one full chunk of 64 and a partial one."""

import torch
from fla.ops.simple_gla import chunk_simple_gla
from fla.ops.simple_gla.naive import naive_chunk_simple_gla

from harness.case import Case

STEPS = 100  # not a multiple of the chunk (64)
HEADS = 2
HEAD_DIM = 64  # the key and the value width


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def simple_gla(q, k, v, g):
    """The output (in the inputs' dtype) and the final state (float32, as fla keeps it)."""
    o, state = naive_chunk_simple_gla(q, k, v, g.float(), output_final_state=True)
    return o.to(q.dtype), state


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (randn(batch, STEPS, HEADS, HEAD_DIM, generator=gen, device=device, dtype=torch.bfloat16) for _ in "qkv")
    gate = torch.nn.functional.logsigmoid(randn(batch, STEPS, HEADS, generator=gen, device=device) + 2)
    return q, k, v, gate.to(torch.bfloat16)


CASE = Case(
    id="fla_simple_gla",
    shipped=chunk_simple_gla,
    shipped_args=(None, None, None, True),  # g_gamma, scale (1/sqrt(K)), initial_state, output_final_state
    reference=simple_gla,
    make_inputs=make_inputs,
    arg_names=("q", "k", "v", "g"),
    outputs=2,
    sizes=(2, 1, 3),
    dtype=torch.bfloat16,
)

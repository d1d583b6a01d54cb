"""On a GPU: do two compiled programs whose Triton kernels differ only in the autotuner's ``restore_value`` share one
FX-graph-cache artifact when they compile under one cache key tag, and does cell order then decide their numbers?

Two programs call one in-place kernel (``x += y``) through ``torch.compile(fullgraph=True)``: ``restore`` autotunes
it with ``restore_value=["x_ptr"]`` (autotuning puts x back after each benchmark run: right numbers), ``plain``
without it (each benchmark run adds y again: wrong numbers, the in-place autotune bug the chart marks). The FX graph
cache keys the kernel by its source, constant arguments and configs, not by ``restore_value``, which Inductor writes
into the generated code. Each program compiles in turn, in both orders, once under one tag for both (what the
harness did when its run's cells shared a tag) and once under a tag per program (``cache_tag`` in
harness/cell/runner.py), each order in an empty cache folder, autotune results never stored (as the harness sets).

Expected: under one tag the second program is an FX cache hit and gets the first's numbers (so one order makes
``plain`` right or ``restore`` wrong); under a tag per program no hit, ``restore`` right and ``plain`` wrong in both
orders. Prints one line per (tags, order, program); no harness import.

Usage: python bench/gpu/shared_tag.py
"""

import os
import tempfile

import torch
import torch._inductor.config as inductor_config
import torch._inductor.utils
import torch.compiler.config
import triton
import triton.language as tl
from torch._dynamo.utils import counters

N = 1 << 20
CONFIGS = [triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 1024}, num_warps=8)]


@triton.jit
def add_inplace_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


KERNELS = {
    "restore": triton.autotune(configs=CONFIGS, key=["n_elements"], restore_value=["x_ptr"])(add_inplace_kernel),
    "plain": triton.autotune(configs=CONFIGS, key=["n_elements"])(add_inplace_kernel),
}


def program(kernel):
    def add_(x, y):
        n_elements = x.numel()
        kernel[lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)](x, y, n_elements)
        return x

    return add_


def run(name: str, tag: str) -> tuple[int, bool]:
    """Compile and call program ``name`` under ``tag``: (FX graph cache hits, whether x came out as x + y)."""
    torch._dynamo.reset()
    torch._inductor.utils.clear_inductor_caches()
    counters.clear()
    torch.compiler.config.cache_key_tag = tag
    generator = torch.Generator().manual_seed(0)
    x, y = (torch.randn(N, generator=generator).cuda() for _ in range(2))
    want = x + y
    out = torch.compile(program(KERNELS[name]), fullgraph=True)(x, y)
    torch.cuda.synchronize()
    return counters["inductor"]["fxgraph_cache_hit"], bool(torch.allclose(out, want))


def main() -> None:
    inductor_config.autotune_local_cache = False
    inductor_config.autotune_remote_cache = False
    inductor_config.bundled_autotune_remote_cache = False
    triton.knobs.autotuning.cache = False
    print(f"torch {torch.__version__}, triton {triton.__version__}, {torch.cuda.get_device_name(0)}")
    for tags in ("one tag", "a tag per program"):
        for order in (("restore", "plain"), ("plain", "restore")):
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="shared-tag-")
            for name in order:
                tag = "harness-fresh-autotune" if tags == "one tag" else f"harness-fresh-autotune:{name}"
                hits, right = run(name, tag)
                print(f"{tags:18} order {'-'.join(order):15} {name:8} fx cache hits {hits}  "
                      f"{'right' if right else 'WRONG'} numbers")


if __name__ == "__main__":
    main()

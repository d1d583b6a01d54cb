"""On a GPU: do compiled programs whose Triton kernels differ only in the autotuner's ``restore_value`` or
``reset_to_zero`` share one FX-graph-cache artifact when they compile under one cache key tag, and does cell order
then decide their numbers?

Three programs call one in-place kernel (``x += y``) through ``torch.compile(fullgraph=True)``, autotuned over two
configs: ``plain`` (no hook), ``restore`` (``restore_value=["x_ptr"]``) and ``reset`` (``reset_to_zero=["x_ptr"]``,
which zeroes x before the configs run: a user's own mistake here, and a visible one). The FX graph cache keys the
kernel by its source, constant arguments and configs, not by those hooks, which Inductor writes into the code it
generates. Each pair (plain with restore, plain with reset) compiles in both orders, each order in an empty cache
folder, autotune results never stored (as the harness sets), once under one tag for both (what the harness did when
its run's cells shared a tag) and once under a tag per program (``cache_tag`` in harness/cell/runner.py).

Prints, per (tags, order, program), the FX cache hits and whether x came out as x + y, then per tag scheme whether
some program's numbers depended on the order. Expected: under one tag the second program of each order is a hit
(it runs the first's generated code); under a tag per program no hit, and no program's numbers depend on the order.
No harness import.

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
    "plain": triton.autotune(configs=CONFIGS, key=["n_elements"])(add_inplace_kernel),
    "restore": triton.autotune(configs=CONFIGS, key=["n_elements"], restore_value=["x_ptr"])(add_inplace_kernel),
    "reset": triton.autotune(configs=CONFIGS, key=["n_elements"], reset_to_zero=["x_ptr"])(add_inplace_kernel),
}
ORDERS = (("restore", "plain"), ("plain", "restore"), ("reset", "plain"), ("plain", "reset"))


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
        numbers: dict[str, set[bool]] = {name: set() for name in KERNELS}
        for order in ORDERS:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="shared-tag-")
            for name in order:
                tag = "harness-fresh-autotune" if tags == "one tag" else f"harness-fresh-autotune:{name}"
                hits, right = run(name, tag)
                numbers[name].add(right)
                print(f"{tags:18} order {'-'.join(order):14} {name:8} fx cache hits {hits}  "
                      f"{'right' if right else 'WRONG'} numbers")
        decided = [name for name, seen in numbers.items() if len(seen) > 1]
        print(f"{tags}: the order decided the numbers of {', '.join(decided) if decided else 'no program'}")


if __name__ == "__main__":
    main()

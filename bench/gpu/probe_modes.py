"""A standalone check, with no harness code, of the bandwidth-bound modes the harness measured from one cold run to
the next (docs/findings.md, "Speed"): `sin` compiled with dynamic shapes read 45 or 84 µs at 16M floats, and a
row-wise kernel autotuned on its column count read 54.7 or 66.0 µs at 32768 rows. Each process is cold (its own
Inductor and Triton cache folders), calls the op first at the case's small size (3001 floats; 13 rows), as the
harness's cell does, then times it at the large size with triton.testing.do_bench (L2 flushed, median).

    python bench/gpu/probe_modes.py RUNS [--together]   # RUNS fresh processes, one after another or all at once
    python bench/gpu/probe_modes.py --one               # one process: prints its two medians (µs)
"""

import os
import subprocess
import sys
import tempfile

COLUMNS = 1000


def one() -> None:
    import torch
    import triton
    import triton.language as tl

    @triton.autotune([triton.Config({}, num_warps=w) for w in (1, 2, 4, 8, 16)], key=["n_cols"])
    @triton.jit
    def row_scale(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
        tl.store(out_ptr + row * n_cols + cols, x / (tl.sum(x * x, axis=0) + 1.0), mask=cols < n_cols)

    def scaled(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        row_scale[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return out

    sin = torch.compile(torch.sin, dynamic=True)
    sin(torch.randn(3001, device="cuda"))
    big = torch.randn(1 << 24, device="cuda")
    sin(big)
    scaled(torch.randn(13, COLUMNS, device="cuda"))  # autotuned here, at 13 rows: the key is the column count
    rows = torch.randn(32768, COLUMNS, device="cuda")
    medians = [triton.testing.do_bench(lambda: sin(big)), triton.testing.do_bench(lambda: scaled(rows))]
    print(" ".join(f"{1000 * m:.1f}" for m in medians), row_scale.best_config)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--one"]:
        one()
        return
    runs, together = int(argv[0]), "--together" in argv
    procs = []
    for _ in range(runs):
        cache = tempfile.mkdtemp(prefix="probe-modes-")
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": f"{cache}/inductor", "TRITON_CACHE_DIR": f"{cache}/triton"}
        command = [sys.executable, __file__, "--one"]
        procs.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True))
        if not together:
            procs[-1].wait()
    for proc in procs:
        out, _ = proc.communicate()
        print(out.strip())


if __name__ == "__main__":
    main(sys.argv[1:])

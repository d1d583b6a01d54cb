"""A standalone check, with no harness code, of what the four-GPU run of 40dee59 showed (bench/results/issue60): the
cells that mostly wait on the GPU (eager, training, CUDA graphs) spent 2-30 times their one-GPU seconds on four GPUs,
14 processes on each GPU both times, while their CPU-seconds stayed the same. Is it the host (the driver, shared by
every process) or the harness? Each process here sees one GPU, as a cell process does, and repeats a cell's GPU
work: a fresh tensor, a few small kernels, a copy to the host, a CUDA graph captured and replayed.

    python bench/gpu/probe_contention.py PER_GPU GPUS   # e.g. 14 1, then 14 4: the seconds per step, each side
"""

import os
import subprocess
import sys
import time

STEPS = 40


def one() -> None:
    import torch

    x = torch.randn(3001, device="cuda")
    torch.cuda.synchronize()
    began, cpu = time.perf_counter(), time.process_time()
    for _ in range(STEPS):
        y = torch.randn(3001, device="cuda")  # a cell's fresh inputs
        z = (x * y).sin() + y
        z.cpu()  # its comparison, on the CPU
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):  # synchronizes, collects and empties the cache, as a cudagraphs cell does
            w = z * 2
        graph.replay()
        torch.cuda.synchronize()
        del graph, w
    print(f"{(time.perf_counter() - began) / STEPS:.4f} {(time.process_time() - cpu) / STEPS:.4f}", flush=True)


def main(per_gpu: int, gpus: int) -> None:
    children = [
        subprocess.Popen([sys.executable, __file__, "--one"], env={**os.environ, "CUDA_VISIBLE_DEVICES": str(gpu)},
                         stdout=subprocess.PIPE, text=True)
        for gpu in range(gpus) for _ in range(per_gpu)
    ]
    walls, cpus = zip(*(map(float, child.communicate()[0].split()) for child in children), strict=True)
    walls, cpus = sorted(walls), sorted(cpus)
    print(f"{per_gpu} per GPU x {gpus} GPU(s): seconds per step median {walls[len(walls) // 2]:.4f} (max "
          f"{walls[-1]:.4f}), CPU-seconds median {cpus[len(cpus) // 2]:.4f}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--one"]:
        one()
    else:
        main(int(sys.argv[1]), int(sys.argv[2]))

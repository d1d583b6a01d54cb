"""A standalone check, with no harness code, of what the four-GPU run of 40dee59 showed (bench/results/issue60): the
cells that mostly wait on the GPU (eager, training, CUDA graphs, aoti_standalone's fresh loader) spent 2-30 times
their one-GPU seconds on four GPUs, 14 processes on each GPU both times, while their CPU-seconds stayed the same. Is
it the host (the driver, shared by every process) or the harness? Each process here sees one GPU, as a cell process
does, starts CUDA (a context: what every cell process, aoti_standalone loader and repro script does first; a loader
took 13 s a cell on four GPUs against 0.9 s on one), then repeats a cell's GPU work: a fresh tensor, a few small
kernels, a copy to the host, a CUDA graph captured and replayed.

    python bench/gpu/probe_contention.py PER_GPU GPUS   # 14 1, 14 4, 56 1: per GPU against host-wide
"""

import os
import subprocess
import sys
import time

STEPS = 40


def one() -> None:
    import torch

    began = time.perf_counter()
    x = torch.randn(3001, device="cuda")  # CUDA started: the context
    torch.cuda.synchronize()
    context = time.perf_counter() - began
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
    print(f"{(time.perf_counter() - began) / STEPS:.4f} {(time.process_time() - cpu) / STEPS:.4f} {context:.3f}")


def main(per_gpu: int, gpus: int) -> None:
    children = [
        subprocess.Popen([sys.executable, __file__, "--one"], env={**os.environ, "CUDA_VISIBLE_DEVICES": str(gpu)},
                         stdout=subprocess.PIPE, text=True)
        for gpu in range(gpus) for _ in range(per_gpu)
    ]
    walls, cpus, contexts = (sorted(column) for column in zip(
        *(map(float, child.communicate()[0].split()) for child in children), strict=True))
    middle = len(walls) // 2
    print(f"{per_gpu} per GPU x {gpus} GPU(s): CUDA started in {contexts[middle]:.3f} s (median, longest "
          f"{contexts[-1]:.3f}); a step {walls[middle]:.4f} s (longest {walls[-1]:.4f}), its CPU {cpus[middle]:.4f} s")


if __name__ == "__main__":
    if sys.argv[1:] == ["--one"]:
        one()
    else:
        main(int(sys.argv[1]), int(sys.argv[2]))

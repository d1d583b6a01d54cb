"""The cell process's side: a loop, in a fork of the run's zygote, that receives ``CellSpec``s, runs each and
sends back its ``Outcome``. Its stdout and stderr go to the worker's log (a crash leaves its stack there)."""

from __future__ import annotations

import faulthandler
import gc
import itertools
import os
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import torch

from harness.case import Case, load_case
from harness.cell.runner import device_name, run_cell, warm_compiler
from harness.cell.timing import COLD, host_kept, prime_profiler, time_kept, warm_kept
from harness.kernel.styles import Wrapped
from harness.spec import NOT_STARTED, CellSpec, Outcome, RunLocations, Stage, Status


def serve(conn: Connection, workdir: str, log_file: str, locations: RunLocations) -> None:
    """Send this process's device name, then answer each spec with its outcome until the connection closes, and
    the timing phase's requests (``answer_timing``); ``locations``: what the run's cells share (the zygote's
    standalone server and package folder)."""
    log = os.open(log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.dup2(log, 1)
    os.dup2(log, 2)
    faulthandler.enable()
    cases: dict[tuple[str, str], Case] = {}
    built: dict[tuple[str, str], Wrapped] = {}
    warm_compiler()
    settle_heap()
    conn.send(device_name())
    for nth in itertools.count(1):
        try:
            spec: CellSpec | tuple[str, ...] = conn.recv()
        except EOFError:
            return
        if isinstance(spec, tuple):
            conn.send(answer_timing(spec))
            continue
        key = (spec.module, spec.case)
        if key not in cases:
            try:
                cases[key] = load_case(*key)
            except Exception as error:  # the run imported it: this process's environment fails, not the cell
                said = " ".join(f"{type(error).__name__}: {error}".split())[:400]
                failed = f"the cell process cannot import the case module {spec.module}, which the run imported: {said}"
                conn.send(Outcome(status=Status.ERROR, error_type=NOT_STARTED, error=failed, stage=Stage.BUILD))
                continue
        print(f"--- cell {spec.id}", flush=True)
        outcome = run_cell(cases[key], spec, Path(workdir), built, locations=locations)
        # which process ran it, as its how-many-th cell, and what it holds after it: a worker's memory series
        measured = outcome.measurements
        measured.gpu_held_mb = release_cached_memory()
        measured.pid, measured.nth, measured.gpu = os.getpid(), nth, os.environ.get("CUDA_VISIBLE_DEVICES")
        conn.send(outcome)


def release_cached_memory() -> float | None:
    """The caching allocator's free blocks given back to the driver after each cell, for the cells and repro scripts
    beside this process (an 80 GB H100 at 3277a00, 14 workers: cell processes held 3.4-5.4 GiB each where their
    cells allocated at most 258 MiB, and 4 cells and 110 scripts ran out of GPU memory); what the kept artifacts
    hold stays, and each cell allocates as in a process of its own. Returns what stays reserved (MiB; None where
    this process has not used CUDA): the allocator's share of what the process holds, without its CUDA context."""
    if not torch.cuda.is_initialized():
        return None
    torch.cuda.empty_cache()
    return round(torch.cuda.memory_reserved() / 2**20, 1)


def settle_heap() -> None:
    """Collect, then move every object this process holds now (torch, the harness, the warm-up's compile) out of
    the collector's reach: the full collection before each CUDA cell's GPU peak mark (harness/cell/runner.py) then
    walks only what later cells made (0.1 s in a process holding torch alone, before), and freezes what survives it.
    What is frozen was reachable here; a cell's garbage is still collected."""
    gc.collect()
    gc.freeze()


def answer_timing(request: tuple[Any, ...]) -> Any:
    """``("warm",)``: each kept artifact called once, and this process's peak of GPU memory meanwhile (MiB, where
    it uses a GPU: what it keeps, the inputs at the bandwidth size the warm-up makes and its calls there, beside the
    other workers' last cells) and how many warm-ups ran out of it, to be done again alone; ``("host", ids)``:
    their host samples; ``("prime",)``: the profiler started; ``("time", ids)``: their timings and the GPU's copy
    bandwidth (harness/cell/timing.py)."""
    if request[0] == "warm":
        cuda = torch.cuda.is_initialized()
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        warm_kept()
        return {"gpu_peak_mb": round(torch.cuda.max_memory_allocated() / 2**20, 1), "cold": len(COLD)} if cuda else {}
    if request[0] == "host":
        host_kept(list(request[1]), "cuda")
        return "host"
    if request[0] == "prime":
        prime_profiler("cuda")
        return "primed"
    return time_kept(list(request[1]), "cuda")

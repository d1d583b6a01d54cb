"""What a path works with while a cell runs: the case, the built style, the device, and what it has seen."""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from harness.case import Case, Inputs, copy_inputs
from harness.cell.timing import bytes_moved, inference_call
from harness.kernel.casecheck import CaseProblem, check_inputs
from harness.kernel.compare import assert_match
from harness.kernel.launches import kernel_name
from harness.kernel.model import build_model
from harness.kernel.styles import AS_SHIPPED, Wrapped, library_op_name
from harness.script.writer import Program
from harness.spec import CASE_BUG_CAUSE, CUDA_FAULT_MARKERS, Capture, Measurements, RunLocations, Tolerance


class CellSkip(Exception):
    """The cell cannot run on this machine (status ``skip``); the message is the reason."""


class CellCrash(Exception):
    """A process the cell started died by a signal (status ``crash``)."""


class CaseBug(Exception):
    """The case's own code (``make_inputs``, or the reference) failed at inputs the cell drew, which the case's load
    check did not run: a bug of the case, not of the style (its error type is ``CASE_BUG``)."""


@dataclass
class Cell:
    """What a path works with: the case, the built style, where to run, and what it has seen so far."""

    case: Case
    style: str
    device: str
    tolerance: Tolerance
    workdir: Path
    wrapped: Wrapped | None = None
    stage: str = "build"
    capture: Capture = field(default_factory=Capture)  # what the path saw of the kernel: the verdict's facts
    measurements: Measurements = field(default_factory=Measurements)
    example: tuple[int, int] | None = None  # (size, seed) of the inputs now run; None: the case's first size
    share: bool = False  # may use what another cell of the run built from the same inputs (paths/export.py)
    locations: RunLocations = field(default_factory=RunLocations)  # the run's standalone server and packages
    # the artifact its check called, as one call (and the bytes the case says that call moves): what a pass on a
    # timed path keeps for the run's timing phase (harness/cell/timing.py)
    timed_call: Callable[[], object] | None = None
    bytes_moved: int | None = None
    # the artifact itself (called on other inputs at the case's bandwidth size), and whether the call is a training
    # step (harness/cell/bandwidth.py)
    timed_model: Callable[..., Any] | None = None
    timed_train: bool = False
    program: Program | None = None  # the script's program the cell runs (harness/cell/scripted.py), if it runs one
    program_file: Path | None = None  # the file it was loaded from
    autotuners: list[Any] = field(default_factory=list)  # that program's Triton autotuners
    clock: dict[str, float] = field(default_factory=dict)  # seconds spent in each stage so far
    since: float = field(default_factory=time.perf_counter)  # when the current stage began

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "stage" and "since" in vars(self):  # the stage so far is charged its seconds
            self.lap()
        object.__setattr__(self, name, value)

    def lap(self, stage: str | None = None) -> None:
        """Charge the seconds since the last lap to ``stage`` (the current stage by default)."""
        now = time.perf_counter()
        key = stage or self.stage
        self.clock[key] = self.clock.get(key, 0.0) + now - self.since
        object.__setattr__(self, "since", now)

    @property
    def case_style(self) -> str:
        """``case-style``: the cell id without its path (what cells of one case and style share)."""
        return f"{self.case.id}-{self.style}"

    @property
    def op_prefixes(self) -> tuple[str, ...]:
        """How a graph names the style's op: a harness op (or the program's, in its namespace), or the
        ``torch.library`` op the case ships."""
        shipped = library_op_name(self.case.shipped) if self.style == AS_SHIPPED else None
        own = f"{self.program.namespace}." if self.program is not None else "harness."
        return (own, *((shipped.replace("::", ".") + ".",) if shipped else ()))

    def saw(self, **facts: Any) -> None:
        """Add ``facts`` (``Capture`` fields) to what the path saw."""
        self.capture = dataclasses.replace(self.capture, **facts)

    def at(self, size: int | None, seed: int | None) -> tuple[int, int]:
        """``size`` and ``seed``, by default the example's (outside a drawn example: the case's first size, seed 0)."""
        example_size, example_seed = self.example or (self.case.sizes[0], 0)
        return example_size if size is None else size, example_seed if seed is None else seed

    def inputs(self, size: int | None = None, seed: int | None = None, requires_grad: bool = False) -> Inputs:
        size, seed = self.at(size, seed)
        with self.own("make_inputs", size, seed):
            inputs = self.case.make_inputs(size, self.device, seed)
            check_inputs(self.case, inputs)
        if requires_grad:
            return tuple(
                value.detach().requires_grad_(self.case.takes_grad(index, value))
                if isinstance(value, torch.Tensor)
                else value
                for index, value in enumerate(inputs)
            )
        return inputs

    def model(self, train: bool = False) -> torch.nn.Module:
        assert self.wrapped is not None
        op = self.wrapped.trainable() if train else self.wrapped.op
        return build_model(self.case, op, self.wrapped.args).to(self.device)

    def reference_model(self) -> torch.nn.Module:
        return build_model(self.case, self.case.reference).to(self.device)

    def expected(self, inputs: Inputs) -> Any:
        """The reference's output (a tensor, or a tuple of several) on a copy of ``inputs``."""
        with torch.no_grad(), self.own("reference"):
            return self.reference_model()(*copy_inputs(inputs))

    @contextmanager
    def own(self, field: str, size: int | None = None, seed: int | None = None) -> Iterator[None]:
        """The case's own ``field`` runs in the block (at ``size`` and ``seed``, by default the example's): an
        exception it raises is a ``CaseBug`` naming it and the inputs; a GPU fault or out of memory stays as it is
        (an earlier kernel's, or the machine's)."""
        try:
            yield
        except Exception as error:
            message = str(error).strip() or repr(error)
            if isinstance(error, torch.cuda.OutOfMemoryError) or any(m in message for m in CUDA_FAULT_MARKERS):
                raise
            size, seed = self.at(size, seed)
            problem = (
                message.partition(": ")[2] if isinstance(error, CaseProblem) else f"{type(error).__name__}: {message}"
            )
            raise CaseBug(
                f"the case's {field} failed at size {size}, seed {seed} on {self.device}{CASE_BUG_CAUSE}{problem}"
            ) from error

    def keep_call(self, model: Callable[..., Any], inputs: Inputs) -> None:
        """The first artifact the path checks, on the inputs it checked it with, is the one timed."""
        if self.timed_call is None:
            self.timed_call = inference_call(model, inputs)
            self.bytes_moved = bytes_moved(self.case, inputs)
            self.timed_model = model

    def synchronize(self) -> None:
        """Wait for the GPU, so that a fault of this cell's kernels surfaces here, at its stage."""
        if self.device == "cuda":
            torch.cuda.synchronize()

    def compare(self, what: str, actual: object, expected: object) -> None:
        self.stage = "compare"
        assert_match(what, actual, expected, self.tolerance)

    @contextmanager
    def timed(self, key: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            spent = (getattr(self.measurements, key) or 0.0) + time.perf_counter() - start
            setattr(self.measurements, key, round(spent, 3))

    def backend(self, **config_patches: Any) -> Callable[..., Any]:
        """Inductor, as ``torch.compile`` calls it, recording what the captured graph holds and when
        tracing ends, compiling starts and compiled code runs (so errors get the right stage)."""
        from torch._inductor.compile_fx import compile_fx, compile_fx_inner

        def inner(gm: torch.fx.GraphModule, example_inputs: Any, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("is_backward"):  # AOTAutograd's backward graph: does it hold the backward kernel?
                self.saw(backward_graphs=self.capture.backward_graphs + 1)
                self.record_graph(gm, backward=True)
            return compile_fx_inner(gm, example_inputs, *args, **kwargs)

        def inductor(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
            self.stage = "compile"
            self.saw(graphs=self.capture.graphs + 1)
            self.record_graph(gm)
            # AOTAutograd's cache would hand back a compiled backward without compiling it, so unseen: the graphs
            # are compiled (Inductor's FX cache still serves their code), and the backward graph is seen
            with torch._functorch.config.patch(enable_autograd_cache=False):
                compiled = compile_fx(gm, example_inputs, inner_compile=inner, config_patches=config_patches or None)

            @functools.wraps(compiled)
            def run(*args: Any, **kwargs: Any) -> Any:
                self.stage = "run"
                return compiled(*args, **kwargs)

            self.stage = "trace"
            return run

        return inductor

    def record_graph(self, gm: torch.fx.GraphModule, backward: bool = False) -> None:
        """Keep the graph's user-kernel wrappers and harness ops (``captured``, or ``captured_backward`` for a
        ``backward`` graph; nothing: the kernel was not captured), and the names of the Triton kernels the graph
        holds (``kernels_captured``)."""
        from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

        key = "captured_backward" if backward else "captured"
        captured = set(getattr(self.capture, key))
        kernels = set(self.capture.kernels_captured)
        # the graph's own nodes and those of the subgraphs its higher-order ops hold (an autograd.Function traced
        # whole is one ``autograd_function_apply`` node whose forward and backward bodies hold the kernels)
        graphs = [module.graph for module in gm.modules() if isinstance(module, torch.fx.GraphModule)]
        nodes = [node for graph in graphs for node in graph.nodes]
        prefixes = self.op_prefixes
        for node in nodes:
            if node.op != "call_function":
                continue
            name = getattr(node.target, "__name__", str(node.target))
            qualified = str(node.target)
            own = f"{qualified}.".startswith(prefixes)  # an op, or its overload (``ns.name.default``)
            if "triton_kernel_wrapper" in name or own or "auto_functionalized" in name:
                captured.add(qualified if own else name)
            if "triton_kernel_wrapper" in name and "kernel_idx" in node.kwargs:
                kernels.add(kernel_name(kernel_side_table.get_kernel(node.kwargs["kernel_idx"])))
        self.saw(**{key: tuple(sorted(captured)), "kernels_captured": tuple(sorted(kernels))})

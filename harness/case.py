"""The case API: one Triton kernel, how to launch it, and the PyTorch truth it is measured against."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

Tensor = torch.Tensor
Inputs = tuple[Tensor, ...]


@dataclass(frozen=True)
class Case:
    """A kernel and everything the harness needs to wrap it in every style and check it on every path.

    - ``kernel``: the ``@triton.jit`` function, declared once: every decorator stack (``harness.decorators``)
      is built over it. Constexprs that autotune picks come from ``configs``, the ones ``heuristics``
      computes from those; a stack without them passes them explicitly, from ``meta``.
    - ``launch(kernel, *inputs, **meta)``: allocates the output, launches ``kernel[grid](...)`` and
      returns it (or ``None`` for a kernel that writes into the inputs named in ``mutates``).
    - ``reference``: the same op written with PyTorch ops (same signature and semantics as ``launch``).
    - ``make_inputs(size, device, seed)``: the op's input tensors; sizes are not block multiples.
    - ``backward(inputs, output, grad)``: gradients of the op's inputs, in PyTorch ops; an input named
      in ``mutates`` arrives as ``None`` (it was overwritten).
    - ``flops(*shapes)``: the op's flop count from its inputs' shapes, as ``FlopCounterMode`` should report.
    - ``heuristics``: constexpr name -> ``fn(args)``, computed from the call's arguments only: it also runs
      where ``@triton.heuristics`` is outermost, over ``@triton.autotune``, and sees no config value.
    - ``config_heuristics``: the heuristics that read a value of the autotune config (e.g. ``BLOCK_SIZE``);
      they replace ``heuristics`` of the same name where ``@triton.heuristics`` sits under
      ``@triton.autotune`` and sees the config the autotuner picked (the reason that order exists).
    - ``cpu_kernel``: the CPU implementation registered for the library styles (default: ``reference``).
    - ``autotune_options``: extra ``triton.autotune`` arguments the kernel needs (e.g. ``restore_value``).
    - ``module(op)``: the ``nn.Module`` the paths run, built around ``op``; the default calls ``op``.
    - ``size_bounds``: (low, high) of the sizes hypothesis may draw for paths with ``examples`` > 1
      (default: 1 to twice the largest of ``sizes``).
    - ``dynamic_dims``: per input of ``make_inputs``, the dims whose length is the ``size`` it is given (the
      batch-like dims), ``()`` for an input whose shape does not depend on it. The dynamic export paths mark
      these dims dynamic with one ``torch.export.Dim`` bounded by ``size_bounds`` (default: dim 0 of every input).
    """

    id: str
    kernel: Any
    launch: Callable[..., Tensor | None]
    reference: Callable[..., Tensor | None]
    make_inputs: Callable[[int, str, int], Inputs]
    backward: Callable[[Inputs, Tensor | None, Tensor], tuple[Tensor | None, ...]]
    flops: Callable[..., int]
    arg_names: tuple[str, ...]
    sizes: tuple[int, ...]
    meta: Mapping[str, Any]
    configs: Sequence[Any]
    key: Sequence[str]
    heuristics: Mapping[str, Callable[[dict[str, Any]], Any]]
    dtype: torch.dtype = torch.float32
    mutates: tuple[str, ...] = ()
    autotune_options: Mapping[str, Any] = field(default_factory=dict)
    cpu_kernel: Callable[..., Tensor | None] | None = None
    module: Callable[[Callable[..., Any]], torch.nn.Module] | None = None
    size_bounds: tuple[int, int] | None = None
    dynamic_dims: tuple[tuple[int, ...], ...] | None = None
    config_heuristics: Mapping[str, Callable[[dict[str, Any]], Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        extra = set(self.config_heuristics) - set(self.heuristics)
        if extra:
            raise ValueError(f"case {self.id!r}: config_heuristics {sorted(extra)} have no heuristics of that name")

    def build_module(self, op: Callable[..., Any]) -> torch.nn.Module:
        """The module the paths run, around ``op``; parameters are seeded so every style gets the same."""
        torch.manual_seed(0)
        if self.module is not None:
            return self.module(op)
        return OpModule(op, self.mutates_index)

    @property
    def mutates_index(self) -> tuple[int, ...]:
        return tuple(self.arg_names.index(name) for name in self.mutates)


class OpModule(torch.nn.Module):
    """Calls the op; an in-place op runs on a copy of its mutated input, which it returns."""

    def __init__(self, op: Callable[..., Any], mutated: tuple[int, ...] = ()) -> None:
        super().__init__()
        self.op = op
        self.mutated = mutated

    def forward(self, *inputs: Tensor) -> Tensor:
        if not self.mutated:
            return self.op(*inputs)
        args = list(inputs)
        for index in self.mutated:
            args[index] = args[index].clone()
        self.op(*args)
        return args[self.mutated[0]]


def load_cases(module_name: str) -> list[Case]:
    """Import a case module and return its cases: ``CASES`` (a list) or ``CASE``."""
    module = importlib.import_module(module_name)
    cases = getattr(module, "CASES", None)
    if cases is None and hasattr(module, "CASE"):
        cases = [module.CASE]
    if not cases or not all(isinstance(case, Case) for case in cases):
        raise TypeError(f"{module_name} defines neither CASE nor CASES (a list) of harness.case.Case")
    return list(cases)


def load_case(module_name: str, case_id: str) -> Case:
    """The case ``case_id`` of a case module."""
    return next(case for case in load_cases(module_name) if case.id == case_id)

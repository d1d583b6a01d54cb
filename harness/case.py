"""The case API: one Triton kernel (or an op as a library ships it), how to launch it, and the PyTorch truth it is
measured against."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

Tensor = torch.Tensor
Inputs = tuple[Any, ...]  # what make_inputs gives: tensors, and scalars or None where arg_types says so
OPTIONAL_TENSOR = Tensor | None
ARG_TYPES = (float, int, bool, OPTIONAL_TENSOR)  # the types arg_types may give an argument (default: Tensor)
CALLABLE_FIELDS = ("reference", "make_inputs", "launch", "backward", "flops", "bytes_moved", "cpu_kernel", "fake",
                   "module", "launch_backward", "shipped", "shipped_module")  # fmt: skip


SEQUENCE_FIELDS = ("arg_names", "configs", "key", "mutates", "no_grad", "shipped_args")  # a tuple or a list each
MAPPING_FIELDS = ("meta", "heuristics", "config_heuristics", "autotune_options", "arg_types", "kernels")


@dataclass(frozen=True, kw_only=True)
class Case:
    """A kernel and everything the harness needs to wrap it in every style and check it on every path.

    - ``id``: the case's id, the first part of its cell ids (``id-style-path``): letters, digits and ``_``.
    - ``arg_names``: the op's arguments, one name per value ``make_inputs`` gives (the library ops' schemas use them).
    - ``sizes``: the sizes ``make_inputs`` is called with: every cell runs the first, ``dynamic`` all of them.
    - ``meta``: the constexprs a plain ``@triton.jit`` launch passes in ``**meta``; an autotuned stack drops the
      ones its ``configs`` set (a launch then computes its grid from the ``meta`` the autotuner gives it).
    - ``configs`` and ``key``: the ``triton.Config`` list and the key (argument names) of ``@triton.autotune``.
    - ``dtype``: the dtype of the op's floating inputs, which picks its tolerance (matrix.toml ``[tolerances]``).
    - ``mutates``: the arguments the op writes into (an in-place op, whose ``launch`` returns ``None``).
    - ``kernel``: the ``@triton.jit`` function, declared once: every decorator stack (``harness.kernel.decorators``)
      is built over it. Constexprs that autotune picks come from ``configs``, the ones ``heuristics``
      computes from those; a stack without them passes them explicitly, from ``meta``.
    - ``launch(kernel, *inputs, **meta)``: allocates the output(s), launches ``kernel[grid](...)`` and
      returns them (or ``None`` for a kernel that writes into the inputs named in ``mutates``).
    - ``reference``: the same op written with PyTorch ops (same signature and semantics as ``launch``).
    - ``make_inputs(size, device, seed)``: the op's arguments, one per ``arg_names``: tensors, and where
      ``arg_types`` says so a float, int or bool, or ``None`` for an optional tensor; sizes are not block
      multiples. A tensor may be a strided view (the harness copies inputs keeping their strides). The same size
      and seed give the same values (draw from ``torch.Generator().manual_seed(seed)``): a cell calls it for the op
      and again for the reference.
    - ``arg_types``: the type of each argument that is not a tensor, by name: ``float``, ``int``, ``bool``, or
      ``Tensor | None`` (an optional tensor). The library wrappers' schemas are inferred from these types.
    - ``outputs``: how many tensors the op returns: 1 (a tensor), or more (a tuple, every one compared).
    - ``kernels``: other ``@triton.jit`` kernels the launch calls (a second kernel, e.g. an ``element_mul``), by
      name: ``launch`` (and ``launch_backward``) then get ``kernels=`` a dict of them, each wrapped as the style
      wraps its kernel (``wrap_triton`` in ``triton_op``); the decorator stacks apply to ``kernel`` only.
    - ``shipped``: the op as a library ships it (an ``autograd.Function``'s ``apply``, a function, a
      ``torch.library`` op), or ``shipped_module``: a factory of the ``nn.Module`` it ships (called with no
      arguments, its ``forward`` taking the op's arguments). Either runs as the ``as_shipped`` style, unchanged;
      a case with no ``kernel`` runs only there (and in the control). ``shipped_args``: the library's own
      argument choices (casting mode, in-place), passed after the inputs. ``shipped_as`` names how it is wrapped
      in the records (default: inferred). A ``shipped_module`` with parameters: ``reference`` takes them after the
      op's arguments (in ``parameters()`` order, the module built seeded); their gradients are compared too.
      Such a module is a case of its own, with no ``kernel`` (refused at load: the kernel's op gets no parameters).
    - ``no_grad``: the float tensor arguments that take no gradient (RoPE's cos/sin caches): never given
      ``requires_grad``, their gradient never asked of ``backward``.
    - ``backward(inputs, output, grad)`` (optional: by default autograd of ``reference``): gradients of the op's
      arguments (``None`` for a scalar, a ``None`` optional tensor or an integer tensor), in PyTorch ops. With
      several ``outputs``, ``output`` and ``grad`` are tuples (a grad of zeros for an output that got none). For
      an op that writes into its inputs (``mutates``): ``output`` is the first input it writes, as the call left
      it, and ``grad`` that input's gradient; an input named in ``mutates`` arrives as ``None`` (it was
      overwritten), or with ``save_mutated`` as it was before the call.
    - ``save_mutated``: the backward of an op that writes into its inputs gets them as they were before the call
      (what an ``autograd.Function`` author saves for a non-linear in-place op, ``x <- clamp(x * scale, lo,
      hi)``): the training wrapper copies them before each launch. Only the launcher styles train such an op.
    - ``backward_kernel`` and ``launch_backward(kernel, inputs, output, grad)``: optionally, the backward as a
      ``@triton.jit`` kernel and its launch (same contract as ``backward``), which the styles then run in
      their backward: the launcher's ``autograd.Function`` calls it, ``triton_op`` wraps it in a second
      ``triton_op`` and ``custom_op`` in a second ``custom_op`` (``<op>_backward``), whose CPU kernel is
      ``backward``. The decorator stacks apply to ``kernel`` only: the backward kernel stays plain. (Not for an
      op with an optional tensor argument, whose gradient may be ``None``; for one that writes into its inputs,
      only the launcher trains: ``torch.library`` registers no autograd for a mutating op, a build error.)
    - ``flops(*args)`` (optional): the op's flop count, given each tensor argument's shape (other arguments as they
      are), as ``FlopCounterMode`` should report; without it the ``flop_counter`` cells are skips.
    - ``bytes_moved(*inputs)`` (optional): the bytes one forward call reads and writes, given its inputs; the
      speed section then shows the achieved GB/s and its share of the GPU's copy bandwidth.
    - ``bandwidth_size`` (optional): a size ``make_inputs`` is given at which one call is bound by memory
      bandwidth, not by its launch (``sizes[0]`` is small: a call there is launch-bound), e.g. ``1 << 24``
      elements for an elementwise op, or 16384 rows for a row-wise one. A passing timed cell whose artifact takes
      another size (eager, the ``torch.compile`` paths, training; not an export or AOTInductor artifact compiled
      for one shape) is checked against ``reference`` at it and then timed at it too: the speed section, ``which
      --fastest`` and ``gate --speed`` report that bandwidth-bound regime apart from the launch-bound one.
    - Outputs that are not floating point (a dropout's keep mask, argmax indices) are compared exactly and
      never differentiated.
    - ``heuristics``: constexpr name -> ``fn(args)``, computed from the call's arguments only: it also runs
      where ``@triton.heuristics`` is outermost, over ``@triton.autotune``, and sees no config value.
    - ``config_heuristics``: the heuristics that read a value of the autotune config (e.g. ``BLOCK_SIZE``);
      they replace ``heuristics`` of the same name where ``@triton.heuristics`` sits under
      ``@triton.autotune`` and sees the config the autotuner picked (the reason that order exists).
    - ``cpu_kernel``: the CPU implementation registered for the library styles (default: ``reference``).
    - ``fake``: the fake (meta) implementation the ``custom_op`` styles register, called on fake tensors: outputs of
      the kernel's shapes, dtypes and strides (default: ``reference``, whose outputs may keep an input's strides
      where the launcher allocates a contiguous output: Inductor and opcheck then reject the op, "incorrect fake").
    - ``autotune_options``: extra ``triton.autotune`` arguments the kernel needs (e.g. ``restore_value``).
    - ``module(op)``: the ``nn.Module`` the paths run, built around ``op`` (a plain function calling the style's op
      the way user code does: ``harness.kernel.model``); by default a module whose ``forward`` calls the op.
    - ``size_bounds``: (low, high) of the sizes hypothesis may draw for paths with ``examples`` > 1
      (default: 1 to twice the largest of ``sizes``).
    - ``dynamic_dims``: per input of ``make_inputs``, the dims whose length is the ``size`` it is given (the
      batch-like dims), ``()`` for an input whose shape does not depend on it (and for a scalar or ``None``).
      The dynamic export paths mark these dims dynamic with one ``torch.export.Dim`` bounded by
      ``size_bounds`` (default: the dims whose length ``make_inputs`` changes with the size, found by calling it
      at two of ``sizes``: a batch dim, not a weight's).
    """

    id: str
    reference: Callable[..., Any]
    make_inputs: Callable[[int, str, int], Inputs]
    arg_names: tuple[str, ...]
    sizes: tuple[int, ...]
    kernel: Any = None
    launch: Callable[..., Any] | None = None
    backward: Callable[[Inputs, Any, Any], tuple[Tensor | None, ...]] | None = None
    flops: Callable[..., int] | None = None
    bytes_moved: Callable[..., int] | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    configs: Sequence[Any] = ()
    key: Sequence[str] = ()
    heuristics: Mapping[str, Callable[[dict[str, Any]], Any]] = field(default_factory=dict)
    dtype: torch.dtype = torch.float32
    mutates: tuple[str, ...] = ()
    autotune_options: Mapping[str, Any] = field(default_factory=dict)
    cpu_kernel: Callable[..., Any] | None = None
    fake: Callable[..., Any] | None = None
    module: Callable[[Callable[..., Any]], torch.nn.Module] | None = None
    size_bounds: tuple[int, int] | None = None
    dynamic_dims: tuple[tuple[int, ...], ...] | None = None
    config_heuristics: Mapping[str, Callable[[dict[str, Any]], Any]] = field(default_factory=dict)
    arg_types: Mapping[str, Any] = field(default_factory=dict)
    outputs: int = 1
    backward_kernel: Any = None
    launch_backward: Callable[..., tuple[Tensor | None, ...]] | None = None
    kernels: Mapping[str, Any] = field(default_factory=dict)
    no_grad: tuple[str, ...] = ()
    shipped: Callable[..., Any] | None = None
    shipped_module: Callable[[], torch.nn.Module] | None = None
    shipped_args: tuple[Any, ...] = ()
    shipped_as: str | None = None
    bandwidth_size: int | None = None
    save_mutated: bool = False

    def __post_init__(self) -> None:
        self._check_types()
        if self.kernel is not None and self.launch is None:
            raise ValueError(f"case {self.id!r}: a kernel needs its launch")
        if self.launch is None and self.shipped is None and self.shipped_module is None:
            raise ValueError(f"case {self.id!r}: give a kernel and its launch, or the op as shipped (shipped)")
        if self.shipped is not None and self.shipped_module is not None:
            raise ValueError(f"case {self.id!r}: give shipped or shipped_module, not both")
        if self.mutates and self.backward is None:
            raise ValueError(
                f"case {self.id!r}: an op that writes into its inputs needs a backward (autograd of "
                "the in-place reference cannot give the gradient of what it overwrote)"
            )
        if self.save_mutated and not self.mutates:
            raise ValueError(f"case {self.id!r}: save_mutated keeps the inputs an op writes into: name them in mutates")
        unknown = set(self.no_grad) - set(self.arg_names)
        if unknown:
            raise ValueError(f"case {self.id!r}: no_grad {sorted(unknown)} are not in arg_names")
        extra = set(self.config_heuristics) - set(self.heuristics)
        if extra:
            raise ValueError(f"case {self.id!r}: config_heuristics {sorted(extra)} have no heuristics of that name")
        unknown = set(self.arg_types) - set(self.arg_names)
        if unknown:
            raise ValueError(f"case {self.id!r}: arg_types {sorted(unknown)} are not in arg_names")
        for name, kind in self.arg_types.items():
            if kind not in ARG_TYPES:
                raise ValueError(
                    f"case {self.id!r}: arg_types[{name!r}] is {kind!r}: use float, int, bool or Tensor | None"
                )
        size = self.bandwidth_size
        if size is not None and (type(size) is not int or size < 1):  # a bool, 1.5, NaN, "16M" are no size
            raise ValueError(f"case {self.id!r}: bandwidth_size must be a whole number of 1 or more, got {size!r}")
        for name in CALLABLE_FIELDS:
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise ValueError(f"case {self.id!r}: {name} must be a function (or None), got {value!r:.80}")
        if self.outputs < 1:
            raise ValueError(f"case {self.id!r}: outputs must be 1 or more, got {self.outputs}")
        if (self.backward_kernel is None) != (self.launch_backward is None):
            raise ValueError(f"case {self.id!r}: give both backward_kernel and launch_backward, or neither")
        if self.backward_kernel is not None and OPTIONAL_TENSOR in self.arg_types.values():
            raise ValueError(f"case {self.id!r}: a backward_kernel needs every tensor argument given")

    def _check_types(self) -> None:
        """The fields whose types the harness relies on: a wrong one is one line naming it, not a TypeError raised
        deep in the harness."""
        where = f"case {self.id!r}:"
        sizes = self.sizes
        if not isinstance(sizes, tuple | list) or not sizes or any(type(size) is not int or size < 1 for size in sizes):
            raise ValueError(f"{where} sizes must be a non-empty tuple of whole numbers >= 1, got {sizes!r:.80}")
        for name in SEQUENCE_FIELDS:
            if not isinstance(getattr(self, name), tuple | list):
                raise ValueError(f"{where} {name} must be a tuple (or a list), got {getattr(self, name)!r:.80}")
        for name in MAPPING_FIELDS:
            if not isinstance(getattr(self, name), Mapping):
                raise ValueError(f"{where} {name} must be a dict, got {getattr(self, name)!r:.80}")
        if type(self.outputs) is not int:
            raise ValueError(f"{where} outputs must be a whole number, got {self.outputs!r:.80}")
        if not isinstance(self.dtype, torch.dtype):
            raise ValueError(f"{where} dtype must be a torch.dtype (torch.float32, say), got {self.dtype!r:.80}")
        bounds = self.size_bounds
        if bounds is not None and not (
            isinstance(bounds, tuple | list) and len(bounds) == 2 and all(type(b) is int for b in bounds)
            and 1 <= bounds[0] <= bounds[1]
        ):  # fmt: skip
            raise ValueError(f"{where} size_bounds must be (low, high) with 1 <= low <= high, got {bounds!r:.80}")
        unknown = set(self.mutates) - set(self.arg_names)
        if unknown:
            raise ValueError(f"{where} mutates {sorted(unknown)} are not in arg_names")

    @property
    def bounds(self) -> tuple[int, int]:
        """``size_bounds``, or its default: 1 to twice the largest of ``sizes``."""
        return self.size_bounds or (1, 2 * max(self.sizes))

    def sizes_around(self, traced: int) -> list[int]:
        """At least two sizes other than ``traced`` to run a dynamic-shape artifact at: the case's other sizes, topped
        up with sizes next to the traced one, all within ``size_bounds``."""
        low, high = self.bounds
        others = [size for size in dict.fromkeys(self.sizes) if size != traced and low <= size <= high]
        for size in (traced + 1, traced - 1, high, low):
            if len(others) < 2 and size != traced and size not in others and low <= size <= high:
                others.append(size)
        return others

    def size_dims(self) -> tuple[tuple[int, ...], ...]:
        """``dynamic_dims``, or where the case declares none, the dims of each tensor input whose length moves with
        the size (``make_inputs`` on the CPU at two of the case's sizes): a weight's dims stay static, as a scalar."""
        if self.dynamic_dims is not None:
            return self.dynamic_dims
        first, others = self.sizes[0], self.sizes_around(self.sizes[0])
        with torch.random.fork_rng(devices=[]):  # a make_inputs that seeds torch's own generator leaves it as it was
            made = self.make_inputs(first, "cpu", 0)
            if not others:
                return tuple((0,) if isinstance(value, Tensor) else () for value in made)
            return tuple(_moved(*pair) for pair in zip(made, self.make_inputs(others[0], "cpu", 0), strict=True))

    def shipped_parameters(self) -> tuple[Tensor, ...]:
        """The parameters of ``shipped_module`` built seeded, as the paths build it (none without one): what
        ``reference`` takes after the op's arguments."""
        if self.shipped_module is None:
            return ()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            return tuple(parameter.detach() for parameter in self.shipped_module().parameters())

    @property
    def mutates_index(self) -> tuple[int, ...]:
        return tuple(self.arg_names.index(name) for name in self.mutates)

    def arg_type(self, name: str) -> Any:
        """The declared type of argument ``name`` (``Tensor`` unless ``arg_types`` says otherwise)."""
        return self.arg_types.get(name, Tensor)

    def takes_grad(self, index: int, value: Any) -> bool:
        """Whether argument ``index`` (``value``) is differentiated: a float tensor not named in ``no_grad``."""
        floating = isinstance(value, Tensor) and value.is_floating_point()
        return floating and self.arg_names[index] not in self.no_grad

    @property
    def tensor_args(self) -> tuple[int, ...]:
        """The positions of the arguments that are always tensors (the ones a backward kernel has a gradient for)."""
        return tuple(index for index, name in enumerate(self.arg_names) if self.arg_type(name) is Tensor)


def _moved(one: Any, other: Any) -> tuple[int, ...]:
    """The dims whose length differs between two inputs made at two sizes (none for a scalar or ``None``)."""
    if not isinstance(one, Tensor) or not isinstance(other, Tensor) or one.dim() != other.dim():
        return ()
    return tuple(dim for dim in range(one.dim()) if one.shape[dim] != other.shape[dim])


def copy_inputs(inputs: Inputs) -> Inputs:
    """The inputs with every tensor copied (detached, its strides kept: a strided view stays strided), the rest
    (scalars, ``None``) as they are."""
    return tuple(copy_tensor(value) if isinstance(value, Tensor) else value for value in inputs)


def copy_tensor(tensor: Tensor) -> Tensor:
    """A detached copy with the same shape and strides (``clone`` makes a sliced view contiguous)."""
    tensor = tensor.detach()
    if 0 in tensor.stride() or tensor.is_contiguous():  # an expanded tensor cannot be written stride for stride
        return tensor.clone()
    return torch.empty_strided(tensor.shape, tensor.stride(), dtype=tensor.dtype, device=tensor.device).copy_(tensor)


def as_tuple(output: Any) -> tuple[Any, ...]:
    """An op's output as a tuple of outputs: a tuple or list as it is, anything else as the one output."""
    return tuple(output) if isinstance(output, tuple | list) else (output,)


def load_cases(module_name: str) -> list[Case]:
    """Import a case module and return its cases: ``CASES`` (a list) or ``CASE``."""
    module = importlib.import_module(module_name)
    cases = getattr(module, "CASES", None)
    if cases is None and hasattr(module, "CASE"):
        cases = [module.CASE]
    if isinstance(cases, list | tuple) and not cases:
        raise TypeError(f"{module_name}: CASES is empty (it must list at least one harness.case.Case)")
    if not cases or not all(isinstance(case, Case) for case in cases):
        raise TypeError(f"{module_name} defines neither CASE nor CASES (a list) of harness.case.Case")
    return list(cases)


def load_case(module_name: str, case_id: str) -> Case:
    """The case ``case_id`` of a case module; ``LookupError`` when it defines none of that id."""
    for case in load_cases(module_name):
        if case.id == case_id:
            return case
    raise LookupError(f"{module_name} defines no case {case_id!r}")


class CaseExited(BaseException):
    """A case module called ``os._exit`` while the harness imported or checked it (``exits_raise``)."""


@contextmanager
def exits_raise() -> Iterator[None]:
    """While the harness imports and checks case modules in its own process: ``os._exit`` in this process raises
    ``CaseExited`` instead of ending the run with nothing recorded (a process forked meanwhile still exits)."""
    real, pid = os._exit, os.getpid()

    def _exit(code: int) -> None:
        if os.getpid() != pid:
            real(code)
        raise CaseExited(f"the case called os._exit({code!r})")

    os._exit = _exit  # type: ignore[assignment]
    try:
        yield
    finally:
        os._exit = real


def exit_words(error: SystemExit | CaseExited) -> str:
    """What a case that exited did, in words: ``the case called sys.exit(2)``."""
    if isinstance(error, SystemExit):
        return f"the case called sys.exit({error.code!r})"
    return str(error)

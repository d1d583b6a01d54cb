"""A case is checked when it loads, on CPU, before any cell runs: a mistake in a case module (inputs that do not
match its arguments, a reference or an input generator that raises, a heuristic reading a key the kernel's call
does not have, a backward that disagrees with autograd of the reference) is a broken case, reported in one line
naming the field, never charted as a style's failure. Cheap: the case's first size, once per process."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch

from harness.case import OPTIONAL_TENSOR, Case, CaseExited, Inputs, as_tuple, copy_inputs, exit_words
from harness.interrupt import TimeUp, time_limit
from harness.kernel.gradients import case_value
from harness.spec import Tolerance

CHECK_SECONDS = 60.0  # the most one case's check may take (its first size, on CPU: well under a second)
NOTICE_SECONDS = 3.0  # a check still running after this says so on stderr, naming the case and the field it waits on
HEURISTIC_SAMPLE = 1024  # the value of every argument a heuristic is given when checked: only its keys are real


class CaseProblem(Exception):
    """A field of a case that is wrong: ``field: problem``."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")


def check_case(case: Case, tolerance: Tolerance, seconds: float | None = None) -> None:
    """Raise ``CaseProblem`` on the first field of ``case`` found wrong (``tolerance``: its dtype's, for the
    backward, which is compared with autograd of the reference in float64), or on the field still running
    after ``seconds`` (a hang; the limit holds in the main thread, where SIGALRM is delivered)."""
    seconds = CHECK_SECONDS if seconds is None else seconds
    _running[0] = CHECKING

    def notice() -> str:  # what the check waits on
        return (
            f"harness: checking case {case.id!r}: waiting on {_running[0]} for {NOTICE_SECONDS:g} s "
            f"(the check gives up at {seconds:g} s)"
        )

    try:
        with time_limit(seconds, NOTICE_SECONDS, notice):
            _exits_named(case, tolerance)
    except TimeUp:
        raise CaseProblem("(check)", f"still running after {seconds:g} s") from None


CHECKING = "the check itself"
_running = [CHECKING]  # what of the case the check is calling now (its field), for the notice of a slow check


def _exits_named(case: Case, tolerance: Tolerance) -> None:
    """``_check``, a case that exits (``sys.exit``, or ``os._exit`` under ``exits_raise``) a problem of the field
    that called it, never the end of the harness's process."""
    try:
        _check(case, tolerance)
    except (SystemExit, CaseExited) as error:
        raise CaseProblem(_running[0], exit_words(error)) from None
    finally:
        _running[0] = CHECKING


def _check(case: Case, tolerance: Tolerance) -> None:
    inputs = _call("make_inputs", case.make_inputs, case.sizes[0], "cpu", 0)
    check_inputs(case, inputs)
    unrepeatable = _unrepeatable(case, inputs)  # said last: a broken reference is the first thing to mend
    parameters = _call("shipped_module", case.shipped_parameters)
    if parameters and case.kernel is not None:
        raise CaseProblem(
            "shipped_module",
            "a module with parameters and a kernel in one case: the reference takes the module's parameters, "
            "which the kernel's op is never given; give the module a case of its own (no kernel)",
        )
    output = _reference(case, inputs, parameters)
    if not case.mutates:
        _check_outputs(case, output)
    _check_heuristics(case)
    _check_backward(case, inputs, parameters, tolerance)
    if unrepeatable:
        raise CaseProblem("make_inputs", unrepeatable)


def _unrepeatable(case: Case, inputs: Inputs) -> str | None:
    """What differs where a second call at the same size and seed gives other values: a cell calls
    ``make_inputs`` once for the op and once for the reference (a training step's inputs are its own leaves), so
    unseeded inputs would make the op look wrong."""
    again = _call("make_inputs", case.make_inputs, case.sizes[0], "cpu", 0)
    for index, (one, other) in enumerate(zip(inputs, again, strict=False)):
        if isinstance(one, torch.Tensor) or isinstance(other, torch.Tensor):
            same = isinstance(one, torch.Tensor) and isinstance(other, torch.Tensor) and _same_bits(one, other)
        else:
            same = one == other or (one != one and other != other)  # NaN scalars alike
        if not same:
            return (
                f"input {index} ({case.arg_names[index]}) differs between two calls at size {case.sizes[0]}, seed 0: "
                "draw it from a torch.Generator seeded with the seed given (torch.Generator().manual_seed(seed))"
            )
    return None


def _same_bits(one: torch.Tensor, other: torch.Tensor) -> bool:
    """Same dtype, shape and bytes (a NaN drawn alike is alike)."""
    if one.dtype != other.dtype or one.shape != other.shape:
        return False
    as_bytes = [t.detach().contiguous().reshape(-1).view(torch.uint8) for t in (one, other)]
    return torch.equal(*as_bytes)


def _reference(case: Case, inputs: Inputs, parameters: tuple[torch.Tensor, ...]) -> Any:
    """The reference called on a copy of ``inputs`` and a ``shipped_module``'s ``parameters``; a call its signature
    does not take says the convention (a case module written before the reference took the parameters)."""
    try:
        return _call("reference", case.reference, *copy_inputs(inputs), *parameters)
    except CaseProblem as problem:
        if not parameters or _binds(case.reference, len(inputs) + len(parameters)):
            raise
        args = ", ".join([*case.arg_names, *_parameter_names(case)])
        raise CaseProblem(
            "reference",
            f"{str(problem).removeprefix('reference: ')} (the reference of a shipped_module takes the module's "
            f"parameters after the op's arguments, in parameters() order: reference({args}))",
        ) from None


def _binds(fn: Callable[..., Any], count: int) -> bool:
    """Whether ``fn`` takes ``count`` positional arguments (True where its signature cannot be read)."""
    try:
        inspect.signature(fn).bind(*range(count))
    except TypeError:
        return False
    except ValueError:
        return True
    return True


def _parameter_names(case: Case) -> list[str]:
    """The names of the ``shipped_module``'s parameters, in ``parameters()`` order (dots as underscores)."""
    assert case.shipped_module is not None
    with torch.random.fork_rng(devices=[]):
        return [name.replace(".", "_") for name, _ in case.shipped_module().named_parameters()]


def _call(field: str, fn: Callable[..., Any], *args: Any) -> Any:
    _running[0] = field
    try:
        return fn(*args)
    except TimeUp as up:
        raise CaseProblem(
            field, f"still running after {up.args[0]:g} s (the load check's limit): does it hang?"
        ) from None
    except Exception as error:
        raise CaseProblem(field, _one_line(error)) from None
    except (SystemExit, CaseExited) as error:
        raise CaseProblem(field, exit_words(error)) from None
    finally:
        _running[0] = CHECKING


def _one_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {'; '.join(lines)}" if lines else type(error).__name__


def check_inputs(case: Case, inputs: Any) -> None:
    """``CaseProblem`` where ``make_inputs`` gave what ``arg_names`` and ``arg_types`` do not declare."""
    if not isinstance(inputs, tuple):
        raise CaseProblem("make_inputs", f"expected a tuple, got {type(inputs).__name__}")
    if len(inputs) != len(case.arg_names):
        raise CaseProblem("make_inputs", f"gives {len(inputs)} inputs, arg_names names {len(case.arg_names)}")
    for index, (name, value) in enumerate(zip(case.arg_names, inputs, strict=True)):
        kind = case.arg_type(name)
        if not _is(value, kind):
            expected = "Tensor or None" if kind == OPTIONAL_TENSOR else kind.__name__
            got = type(value).__name__
            raise CaseProblem("make_inputs", f"input {index} ({name}): expected {expected}, got {got}")
    if case.dynamic_dims is not None:
        if len(case.dynamic_dims) != len(inputs):
            raise CaseProblem("dynamic_dims", f"names {len(case.dynamic_dims)} inputs, make_inputs gives {len(inputs)}")
        for index, (dims, value) in enumerate(zip(case.dynamic_dims, inputs, strict=True)):
            tensor = isinstance(value, torch.Tensor)
            if any(not 0 <= dim < (value.dim() if tensor else 0) for dim in dims):
                what = f"a tensor of {value.dim()} dims" if tensor else f"a {type(value).__name__}"
                raise CaseProblem(f"dynamic_dims[{index}]", f"dims {dims} of {case.arg_names[index]}, {what}")


def _is(value: Any, kind: Any) -> bool:
    if kind == OPTIONAL_TENSOR:
        return value is None or isinstance(value, torch.Tensor)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _check_outputs(case: Case, output: Any) -> None:
    if case.outputs == 1:
        if not isinstance(output, torch.Tensor):
            raise CaseProblem("reference", f"returns {type(output).__name__}, expected a tensor (outputs = 1)")
        return
    if not isinstance(output, tuple) or len(output) != case.outputs:
        got = f"{len(output)} values" if isinstance(output, tuple) else type(output).__name__
        raise CaseProblem("reference", f"returns {got}, expected a tuple of {case.outputs} tensors (outputs)")
    for index, one in enumerate(output):
        if not isinstance(one, torch.Tensor):
            raise CaseProblem("reference", f"output {index} is {type(one).__name__}, expected a tensor")


def _check_heuristics(case: Case) -> None:
    """Each heuristic called as Triton calls it, on every argument of the kernel's call: ``heuristics`` without the
    autotune configs' keys (they also run outermost, before a config is picked), ``config_heuristics`` with them.
    The values are stand-ins: only a missing key (``KeyError``) is the case's mistake."""
    names = getattr(case.kernel, "arg_names", None)
    if names is None:
        return
    config_keys = {key for config in case.configs for key in config.kwargs}
    call = {name: HEURISTIC_SAMPLE for name in names if name not in config_keys and name not in case.heuristics}
    with_config = {**call, **dict.fromkeys(config_keys, HEURISTIC_SAMPLE)}
    for field, heuristics, args in (
        ("heuristics", case.heuristics, call),
        ("config_heuristics", case.config_heuristics, with_config),
    ):
        for name, heuristic in heuristics.items():
            _running[0] = f"{field}[{name!r}]"
            try:
                heuristic(dict(args))
            except KeyError as error:
                hint = ""
                if field == "heuristics" and error.args and error.args[0] in config_keys:
                    hint = (
                        f" ({error.args[0]!r} is set by the autotune configs: a heuristic reading it goes in "
                        "config_heuristics; heuristics also run outermost, before a config is picked)"
                    )
                raise CaseProblem(f"{field}[{name!r}]", _one_line(error) + hint) from None
            except Exception:  # the stand-in values may not suit it: the kernel's own launch will tell
                continue
    _running[0] = CHECKING


def _check_backward(case: Case, inputs: Inputs, shipped: tuple[torch.Tensor, ...], tolerance: Tolerance) -> None:
    """``backward`` against autograd of the reference (given ``shipped``: the module's parameters), in float64, with
    a random grad per floating output (the arguments named in ``no_grad`` and the outputs that are not floating
    point are not differentiated). An op that writes into its inputs is checked as the styles train it: the
    reference writes into copies, its output is the first it wrote, and ``backward`` gets what they hand it."""
    if case.backward is None:  # the default is autograd of the reference itself
        return
    wide = tuple(
        value.detach().double().requires_grad_() if case.takes_grad(i, value) else value
        for i, value in enumerate(inputs)
    )
    differentiable = [value for i, value in enumerate(wide) if case.takes_grad(i, value)]
    if not differentiable:
        return
    parameters = tuple(parameter.double() for parameter in shipped)
    written = tuple(
        value.clone() if i in case.mutates_index and isinstance(value, torch.Tensor) else value
        for i, value in enumerate(wide)
    )
    returned = _call("reference", case.reference, *written, *parameters)
    outputs = (written[case.mutates_index[0]],) if case.mutates else as_tuple(returned)
    generator = torch.Generator().manual_seed(1)
    grads = tuple(
        torch.randn(out.shape, generator=generator, dtype=out.dtype) if _floating(out) else torch.zeros_like(out)
        for out in outputs
    )
    used = [(out, grad) for out, grad in zip(outputs, grads, strict=True) if out.requires_grad]
    if not used:
        return
    used_outputs, used_grads = zip(*used, strict=True)
    expected = torch.autograd.grad(used_outputs, differentiable, used_grads, allow_unused=True)
    detached = _as_handed(case, wide)
    outputs = tuple(out.detach() for out in outputs)
    try:
        computed = _call("backward", case.backward, detached, case_value(case, outputs), case_value(case, grads))
    except CaseProblem as problem:
        raise CaseProblem(
            "backward", f"{str(problem).removeprefix('backward: ')} ({_hint(case, outputs, wide)})"
        ) from None
    if not isinstance(computed, tuple | list):
        raise CaseProblem("backward", f"returns {type(computed).__name__}, expected a tuple of gradients (or None)")
    if len(computed) != len(case.arg_names):
        raise CaseProblem("backward", f"gives {len(computed)} gradients, arg_names names {len(case.arg_names)}")
    taking = [index for index, value in enumerate(wide) if case.takes_grad(index, value)]
    for index, want in zip(taking, expected, strict=True):
        got, name = computed[index], case.arg_names[index]
        if want is None:
            continue
        if got is None:
            raise CaseProblem("backward", f"no gradient of {name}, autograd of the reference has one")
        if not isinstance(got, torch.Tensor):
            raise CaseProblem("backward", f"gradient of {name} is {type(got).__name__}, expected a tensor or None")
        if got.shape != want.shape:
            raise CaseProblem(
                "backward", f"gradient of {name} has shape {list(got.shape)}, {name} has {list(want.shape)}"
            )
        try:
            torch.testing.assert_close(got.double(), want, atol=tolerance.atol, rtol=tolerance.rtol)
        except AssertionError as error:
            raise CaseProblem(
                "backward",
                f"gradient of {name} differs from autograd of the reference: "
                + _one_line(error).removeprefix("AssertionError: "),
            ) from None


def _as_handed(case: Case, inputs: Inputs) -> Inputs:
    """The inputs as the styles hand them to ``backward``: detached, and an input the op writes into ``None``
    unless ``save_mutated`` keeps it as it was before the call."""
    return tuple(
        None
        if i in case.mutates_index and not case.save_mutated
        else value.detach()
        if isinstance(value, torch.Tensor)
        else value
        for i, value in enumerate(inputs)
    )


def _hint(case: Case, outputs: tuple[Any, ...], inputs: Inputs) -> str:
    """What a backward that raised may have met: an overwritten input given as ``None``, else the reference's
    shape (often the reference is wrong, not the backward)."""
    if case.mutates and not case.save_mutated:
        names = ", ".join(case.mutates)
        return (
            f"it gets {names} as None, overwritten by the op; output is {case.mutates[0]} as the call left it; "
            f"save_mutated=True gives {names} as it was before the call"
        )
    return (
        f"the reference returns shape(s) {_shapes(outputs)} for inputs of shape(s) {_shapes(inputs)}: is that shape "
        "right?"
    )


def _shapes(values: tuple[Any, ...]) -> str:
    return ", ".join(str(list(value.shape)) for value in values if isinstance(value, torch.Tensor))


def _floating(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point()

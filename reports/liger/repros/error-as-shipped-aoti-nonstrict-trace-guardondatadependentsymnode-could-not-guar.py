"""liger_cross_entropy-as_shipped-aoti_nonstrict: a reproducer written by triton-torch-matrix.
The harness recorded: error at trace: Could not guard on data-dependent expression Eq(u1, 1) (unhinted: Eq(u1, 1)).
(Size-like symbols: none)
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


from torch._inductor import aoti_compile_and_package, aoti_load_package
import os
import tempfile


# ---- the case's own code (cases.liger_cross_entropy) ----

import torch

from liger_kernel.ops import LigerCrossEntropyFunction

VOCAB, IGNORE_INDEX, LSE_SQUARE_SCALE = 1000, -100, 1e-4
SHIPPED_ARGS = (None, IGNORE_INDEX, LSE_SQUARE_SCALE, 0.0, "mean", None, True, True, True)


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def cross_entropy(logits, target):
    keep = target != IGNORE_INDEX
    kept = keep.sum()
    lse = logits.float().logsumexp(-1)
    loss = torch.nn.functional.cross_entropy(logits.float(), target, ignore_index=IGNORE_INDEX, reduction="sum")
    z_loss = (LSE_SQUARE_SCALE * lse.square() * keep).sum() / kept
    predicted = logits.argmax(-1)
    accuracy = ((predicted == target) & keep).sum() / kept
    return (
        (loss / kept + z_loss).to(logits.dtype),
        z_loss.detach().to(logits.dtype),
        accuracy.float(),
        torch.where(keep, predicted, -1),
    )


def make_inputs(rows, device, seed):
    gen = torch.Generator().manual_seed(seed)
    logits = randn(rows, VOCAB, generator=gen, device=device, scale=2.0)
    target = torch.randint(0, VOCAB, (rows,), generator=gen)
    target[torch.rand(rows, generator=gen) < 0.2] = IGNORE_INDEX
    target[0] = 0  # one position kept at least
    return logits, target.to(device)


# ---- the style: as_shipped ----


class Model(torch.nn.Module):
    def forward(self, logits, target):
        return LigerCrossEntropyFunction.apply(logits, target, *SHIPPED_ARGS)


class Reference(torch.nn.Module):
    def forward(self, logits, target):
        return cross_entropy(logits, target)


# ---- the path: aoti_nonstrict ----
DEVICE, SIZE, SEED = 'cuda', 37, 0  # the inputs the cell ran
ATOL, RTOL = 1e-05, 1e-05  # the tolerance for float32


export = torch.export.export


def copied(inputs):  # fresh copies of the tensors for every call, their strides kept
    return tuple((v.detach().clone() if v.is_contiguous() or 0 in v.stride() else torch.empty_strided(
        v.shape, v.stride(), dtype=v.dtype, device=v.device).copy_(v)) if isinstance(v, torch.Tensor) else v
        for v in inputs)


def check(what, out, expected):  # every output against the reference's, on the CPU
    cpu = lambda v: tuple(map(cpu, v)) if isinstance(v, tuple | list) else v.detach().cpu() if torch.is_tensor(v) else v
    try:
        torch.testing.assert_close(cpu(out), cpu(expected), atol=ATOL, rtol=RTOL)
    except AssertionError as error:
        raise AssertionError(f"wrong numbers: {what}: {' '.join(str(error).split())}") from None


def main():
    torch.manual_seed(0)
    model = Model().to(DEVICE)
    reference_model = Reference().to(DEVICE)
    inputs = make_inputs(SIZE, DEVICE, SEED)
    with torch.no_grad():
        expected = reference_model(*copied(inputs))
    model.eval()
    program = export(model, copied(inputs), strict=False)
    package = aoti_compile_and_package(program, package_path=os.path.join(tempfile.mkdtemp(), "model.pt2"))
    runner = aoti_load_package(package)
    for call in range(1, 3):
        with torch.no_grad():
            out = runner(*copied(inputs))
        check("output" if call == 1 else f"output, call {call}", out, expected)
    return runner


if __name__ == "__main__":
    main()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces
    print("no failure: liger_cross_entropy-as_shipped-aoti_nonstrict passes here")

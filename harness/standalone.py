"""Run an AOTInductor package in a fresh process that imports torch only: what deployment users get.

Usage: python -m harness.standalone PACKAGE INPUTS OUTPUT DEVICE
"""

import sys

import torch


def main(package: str, inputs_file: str, output_file: str, device: str) -> None:
    inputs = [t.to(device) for t in torch.load(inputs_file)]
    runner = torch._inductor.aoti_load_package(package)
    with torch.no_grad():
        out = runner(*inputs)
    torch.save(out.cpu() if isinstance(out, torch.Tensor) else out, output_file)


if __name__ == "__main__":
    main(*sys.argv[1:5])

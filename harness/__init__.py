"""triton-torch-matrix: which way of wrapping a Triton kernel survives which PyTorch path (README.md).
PYTEST_DONT_REWRITE: the command line imports the harness before pytest loads its plugin."""

"""Reproducing a failure outside the harness: one standalone script per distinct failure, written from the
case's module and the kernel layer's registries of decorators and wrappers, as a user writes the code."""

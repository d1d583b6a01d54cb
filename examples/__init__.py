"""Worked examples of user kernels run through the harness (see README, "Your own kernels")."""

"""How a kernel is wrapped: decorator stacks, wrappers, the styles they make, gradients, and the case check."""

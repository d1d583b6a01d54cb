"""The built-in cases: one module per kernel, each defining ``CASE`` (see ``harness.case.Case``)."""

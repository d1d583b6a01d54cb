"""The harness's pytest plugin, for both the matrix (``pytest matrix.toml``) and the harness's own tests."""

pytest_plugins = ("harness.plugin",)

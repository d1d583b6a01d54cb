"""The records of a run: one per cell, the environment stamp, each cell's key, and the results file."""

"""One cell inside its cell process: the cell's context, its paths, and the comparison with the reference."""

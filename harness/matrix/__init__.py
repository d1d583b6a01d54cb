"""What matrix.toml declares: the cases, styles and paths crossed into cells, validated when it loads."""

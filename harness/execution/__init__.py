"""Where cells run: the run's zygote, the long-lived cell processes forked from it, and their child side."""

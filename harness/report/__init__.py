"""What a run's records are turned into, without torch: the chart, the gate, the history and the repros."""

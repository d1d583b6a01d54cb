"""The host's load, sampled once a second until stopped (SIGTERM or SIGINT): from /proc/stat, the cores busy
(user, nice, system, irq, softirq, steal) and waiting on I/O over each second, and the processes runnable and
blocked at its end. No harness code: it watches whatever runs beside it, so a run's waiting (cell-seconds less
CPU-seconds) shows as a saturated host (busy cores at the core count, runnable far above it) or not.

Usage: python3 bench/gpu/hostload.py OUT.csv &   ...   kill %1
       python -m bench timeline RESULTS.json --host OUT.csv   (the load under the run's lanes)
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

COLUMNS = ("time", "cores", "busy_cores", "iowait_cores", "running", "blocked")


def cpu_jiffies(stat: str) -> tuple[int, int, int]:
    """(all, idle, iowait) jiffies of the ``cpu`` line of /proc/stat."""
    fields = [int(value) for value in stat.splitlines()[0].split()[1:9]]
    return sum(fields), fields[3], fields[4]


def procs(stat: str, name: str) -> int:
    """``procs_running`` or ``procs_blocked`` of /proc/stat."""
    return next(int(line.split()[1]) for line in stat.splitlines() if line.startswith(name + " "))


def sample(before: str, after: str, cores: int) -> tuple[float, float, int, int]:
    """Busy and I/O-waiting cores between two readings of /proc/stat, and the runnable and blocked processes at
    the second."""
    (total0, idle0, wait0), (total1, idle1, wait1) = cpu_jiffies(before), cpu_jiffies(after)
    spent = max(1, total1 - total0)
    idle, wait = idle1 - idle0, wait1 - wait0
    busy = cores * (spent - idle - wait) / spent
    return round(busy, 2), round(cores * wait / spent, 2), procs(after, "procs_running"), procs(after, "procs_blocked")


def main(out: str) -> None:
    cores = os.cpu_count() or 1
    stop = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.append(True))
    stat = Path("/proc/stat")
    with open(out, "w") as file:
        file.write(",".join(COLUMNS) + "\n")
        before = stat.read_text()
        while not stop:
            time.sleep(1.0)
            after = stat.read_text()
            row = (round(time.time(), 2), cores, *sample(before, after, cores))
            file.write(",".join(map(str, row)) + "\n")
            file.flush()
            before = after


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "hostload.csv")

"""Which process a record was written by, and whether that process still runs: a pid alone is
reused, so a process is its host, its pid and the start time the OS gives it. The lease of a
leader (``client/ha/``) and a job's registry entry (``job_registry.py``) name their process so.

**I/O:** ``/proc`` (Linux); elsewhere a signal 0 to the pid, without the start time.
"""

from __future__ import annotations

import os
import socket


def process_start_time(pid: int) -> int | None:
    """The start time of process ``pid`` (clock ticks since boot, Linux), 0 where the OS does
    not say, None when there is no such process or it is a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
    except FileNotFoundError:
        return None
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return 0
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] in ("Z", "X"):  # exited, not yet reaped
        return None
    return int(fields[19])


def this_process_start() -> int:
    return process_start_time(os.getpid()) or 0


def process_alive(host: str, pid: int, process_start: int) -> bool | None:
    """Whether that process still runs; None when it cannot be known from here (another
    host). A stopped process (a paused leader) runs. ``process_start`` 0: not compared."""
    if host != socket.gethostname():
        return None
    started = process_start_time(pid)
    if started is None:
        return False
    return process_start in (0, started)

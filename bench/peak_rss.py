"""Peak resident memory of a process tree: a benchmark's driver, its Spark JVM, its Python
workers, or a peer's processes, read from ``/proc`` (Linux) without any dependency.

The figure is the largest sum, over all samples, of the resident set sizes of the roots and of
every process descending from them. Pages shared between processes (a forked worker's
copy-on-write pages, shared libraries) count in each process that maps them, as ``ps`` and
``top`` count them: an upper bound of what the tree holds, measured alike for every benchmark it
is compared with. A process that lives shorter than one sampling interval may be missed.

    with PeakRss() as rss:       # this process and its descendants
        run_the_benchmark()
    print(rss.peak_mib)

**Threading:** one sampling thread per ``PeakRss``, started by ``__enter__`` and joined by
``__exit__``; ``peak_bytes`` is read after ``__exit__``.
**I/O:** reads ``/proc/<pid>/stat`` of every process, every ``interval_s``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable

PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
MiB = 1 << 20
TICKS = os.sysconf("SC_CLK_TCK")
# Fields of /proc/<pid>/stat after the command name, counted from its third field (state).
_PPID, _UTIME, _STIME, _RSS_PAGES = 4 - 3, 14 - 3, 15 - 3, 24 - 3


def process_stats() -> dict[int, tuple[str, int, int, float]]:
    """Every process of the machine: pid -> (command name, parent pid, resident bytes, CPU
    seconds used so far)."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # exited since the listing
            continue
        # The command name is in parentheses and may hold spaces and parentheses itself.
        name = stat[stat.index(b"(") + 1 : stat.rindex(b")")].decode(errors="replace")
        fields = stat[stat.rindex(b")") + 2 :].split()
        cpu_s = (int(fields[_UTIME]) + int(fields[_STIME])) / TICKS
        table[int(entry)] = (name, int(fields[_PPID]), int(fields[_RSS_PAGES]) * PAGE_BYTES, cpu_s)
    return table


def process_table() -> dict[int, tuple[int, int]]:
    """Every process of the machine: pid -> (parent pid, resident bytes)."""
    return {pid: (ppid, rss) for pid, (_, ppid, rss, _) in process_stats().items()}


def tree_pids(
    table: dict[int, tuple[int, int]], roots: Iterable[int], exclude: Iterable[int] = ()
) -> set[int]:
    """The roots and their descendants, without the subtrees of ``exclude``. Pure."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _rss) in table.items():
        children.setdefault(ppid, []).append(pid)
    skipped = set(exclude)
    found: set[int] = set()
    pending = [pid for pid in roots if pid in table and pid not in skipped]
    while pending:
        pid = pending.pop()
        if pid in found:
            continue
        found.add(pid)
        pending.extend(c for c in children.get(pid, ()) if c not in skipped)
    return found


def child_pids(pid: int) -> list[int]:
    """The processes ``pid`` started that still run (to exclude a server a benchmark started
    before its measured part, a Kafka broker say)."""
    return [p for p, (ppid, _rss) in process_table().items() if ppid == pid]


class PeakRss:
    """Samples the resident bytes of a process tree until exited; keeps the largest sum.

    ``roots``: the processes whose trees are measured (default: this process). ``exclude``:
    processes whose trees are not counted although they descend from a root.
    """

    def __init__(
        self,
        roots: Iterable[int] | None = None,
        exclude: Iterable[int] = (),
        interval_s: float = 0.25,
    ) -> None:
        self._roots = list(roots) if roots is not None else [os.getpid()]
        self._exclude = list(exclude)
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="peak-rss", daemon=True)
        self.peak_bytes = 0

    def sample(self) -> int:
        table = process_table()
        total = sum(table[pid][1] for pid in tree_pids(table, self._roots, self._exclude))
        self.peak_bytes = max(self.peak_bytes, total)
        return total

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            self.sample()

    def __enter__(self) -> PeakRss:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    @property
    def peak_mib(self) -> float:
        return round(self.peak_bytes / MiB, 1)

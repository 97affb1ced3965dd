"""The keyed count (W1) on Bytewax 0.21: N events with key ``(i * 2654435761) % K``, a count per
key emitting ``(key, count)`` per event, a discarding sink; 2 processes of one worker each (the
GIL makes a process per worker Bytewax's way to use 2 cores), recovery on with a snapshot every
second (``-s 1``, Bytewax's epoch), as our keyed count checkpoints every second.

    python bench/peers/bytewax_count.py --events 1000000 --keys 100000

Installs ``bytewax==0.21.*`` into a virtual environment of its own on first use
(``peer_venv.py``). Prints one JSON line: events/s, the peak RSS of the two processes' trees,
and the size of its recovery store (the SQLite files its snapshots went into) at the end.

Measured as ours where Bytewax lets it, and where it differs:
- events/s over the time from all workers reading (the later of the two source partitions'
  first batch) to both processes exited (their last epoch's snapshot written), where ours runs
  from all tasks running to all finished, its final checkpoint included;
- the events come from a source of 2 partitions of contiguous ranges in batches of 1,024, as
  our ``NumberSequenceSource``'s 2 splits are read into buffers of 1,024;
- Bytewax routes by string keys only (``key_on``): the key is ``str(k)``, ours the int ``k``;
- state is Bytewax's ``stateful_map`` (its in-memory state, snapshotted into SQLite per epoch),
  ours a ``ValueState`` on the heap backend.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from peer_venv import peer_python, read_figures, run_measured, version, write_figures

MULTIPLIER = 2654435761
BATCH = 1024
PROCESSES = 2


def flow(events: int, keys: int, partitions: int, figures: str) -> Any:
    """The dataflow, built in each Bytewax process (``python -m bytewax.run``)."""
    import bytewax.operators as op
    from bytewax.dataflow import Dataflow
    from bytewax.inputs import FixedPartitionedSource, StatefulSourcePartition
    from bytewax.outputs import DynamicSink, StatelessSinkPartition

    class Numbers(StatefulSourcePartition):
        def __init__(self, next_id: int, end: int) -> None:
            self.next_id, self.end, self.first_batch = next_id, end, None

        def next_batch(self) -> list[int]:
            if self.first_batch is None:
                self.first_batch = time.monotonic()
                write_figures(figures, "source", {"first_batch": self.first_batch})
            if self.next_id >= self.end:
                raise StopIteration
            lo, self.next_id = self.next_id, min(self.next_id + BATCH, self.end)
            return list(range(lo, self.next_id))

        def snapshot(self) -> int:
            return self.next_id

    class Sequence(FixedPartitionedSource):
        def list_parts(self) -> list[str]:
            return [str(p) for p in range(partitions)]

        def build_part(self, step_id: str, for_part: str, resume_state: int | None) -> Numbers:
            p = int(for_part)
            start, end = events * p // partitions, events * (p + 1) // partitions
            return Numbers(start if resume_state is None else resume_state, end)

    class Discarding(StatelessSinkPartition):
        def __init__(self) -> None:
            self.written = 0

        def write_batch(self, items: list) -> None:
            self.written += len(items)

        def close(self) -> None:
            write_figures(figures, "sink", {"written": self.written})

    class Discard(DynamicSink):
        def build(self, step_id: str, worker_index: int, worker_count: int) -> Discarding:
            return Discarding()

    def count(state: int | None, _event: int) -> tuple[int, int]:
        c = (state or 0) + 1
        return c, c

    dataflow = Dataflow("keyed_count")
    numbers = op.input("events", dataflow, Sequence())
    keyed = op.key_on("key", numbers, lambda i: str((i * MULTIPLIER) % keys))
    counts = op.stateful_map("count", keyed, count)
    op.output("discard", counts, Discard())
    return dataflow


def _free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--snapshot-interval-s", type=int, default=1)
    parser.add_argument("--timeout-s", type=float, default=1800)
    args = parser.parse_args()

    python = peer_python(
        "bytewax",
        "bytewax==0.21.*",
        "import importlib.metadata as m; assert m.version('bytewax').startswith('0.21')",
    )
    with tempfile.TemporaryDirectory(prefix="barrierflow-bytewax-") as figures:
        recovery = Path(figures, "recovery")
        recovery.mkdir()
        # The recovery partitions, one per process, created empty as Bytewax requires.
        subprocess.run([python, "-m", "bytewax.recovery", recovery, str(PROCESSES)], check=True)
        addresses = ";".join(f"127.0.0.1:{port}" for port in _free_ports(PROCESSES))
        dataflow = f"bytewax_count:flow({args.events}, {args.keys}, {PROCESSES}, {figures!r})"
        run = [python, "-m", "bytewax.run", dataflow, "-a", addresses, "-r", str(recovery)]
        run += ["-s", str(args.snapshot_interval_s), "-b", "0"]
        ended, peak_mib = run_measured(
            [[*run, "-i", str(i)] for i in range(PROCESSES)], args.timeout_s
        )
        started = max(f["first_batch"] for f in read_figures(Path(figures), "source"))
        written = sum(f["written"] for f in read_figures(Path(figures), "sink"))
        recovery_bytes = sum(f.stat().st_size for f in recovery.rglob("*") if f.is_file())
    if written != args.events:
        raise SystemExit(f"Bytewax's sink got {written} counts, expected {args.events}")
    print(
        json.dumps(
            {
                "bench": "peer",
                "peer": "bytewax",
                "version": version(python, "bytewax"),
                "events": args.events,
                "keys": args.keys,
                "parallelism": PROCESSES,
                "snapshot_interval_s": args.snapshot_interval_s,
                "events_per_s": round(args.events / (ended - started)),
                "processing_s": round(ended - started, 3),
                "peak_rss_mib": peak_mib,
                "recovery_mib": round(recovery_bytes / (1 << 20), 1),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()

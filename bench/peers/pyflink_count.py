"""The keyed count (W1) on PyFlink 2.3: N events with key ``(i * 2654435761) % K``, a count per
key in ``ValueState`` emitting ``(key, count)`` per event, a discarding sink; parallelism 2,
exactly-once checkpoints every second on the heap (hashmap) backend; Python functions in
PyFlink's thread mode (embedded in the JVM) or process mode (Python worker processes).

    python bench/peers/pyflink_count.py --events 200000 --keys 100000 --mode thread
    python bench/peers/pyflink_count.py --events 200000 --keys 100000 --mode process

Installs ``apache-flink==2.3.*`` into a virtual environment of its own on first use
(``peer_venv.py``; it needs Java 17, as Spark does). Prints one JSON line: events/s, the peak
RSS of the process tree (the client, its MiniCluster JVM, its Python workers).

The program is ``keyed_count.py``'s, written against PyFlink, and measured as ours where
PyFlink lets it; where it differs:
- events/s over the time from all Python functions open (the last ``open()`` of the key map
  and the count: every task running) to ``execute()`` returning in the client (the final
  checkpoint and the job's end included, and the client's polling for it); ours runs from all
  tasks running to all finished, as the JobMaster records them;
- the events come from Flink's ``NumberSequenceSource`` (Java) and are discarded by Flink's
  ``DiscardingSink`` (Java), where ours are Python throughout;
- the state is declared ``Types.PICKLED_BYTE_ARRAY()`` (PyFlink needs a type; pickled values
  are what ours keeps for an undeclared type); the outputs' type is not declared, in both;
- PyFlink's defaults otherwise (bundles of up to 100,000 records or 1 s, operator chaining).
"""

from __future__ import annotations

import argparse
import json
import os
import site
import sys
import tempfile
import time
from pathlib import Path

MULTIPLIER = 2654435761
PARALLELISM = 2


def record(figures: str, prefix: str, values: dict) -> None:
    """Called in the job's Python functions (pickled by value with them, as this module runs as
    ``__main__``: PyFlink's workers need not import anything of ours)."""
    path = Path(figures) / f"{prefix}-{os.getpid()}-{time.monotonic_ns()}.json"
    path.write_text(json.dumps(values))


def job(events: int, keys: int, mode: str, interval_ms: int, figures: str) -> None:
    """Runs in the peer's environment: the PyFlink program, then the time ``execute()``
    returned."""
    from pyflink.common import Configuration, Types, WatermarkStrategy
    from pyflink.datastream import CheckpointingMode, StreamExecutionEnvironment
    from pyflink.datastream.connectors import Sink
    from pyflink.datastream.connectors.number_seq import NumberSequenceSource
    from pyflink.datastream.functions import KeyedProcessFunction, MapFunction
    from pyflink.datastream.state import ValueStateDescriptor

    class Key(MapFunction):
        def open(self, runtime_context):
            record(figures, "open", {"at": time.monotonic()})

        def map(self, i):
            return (i * MULTIPLIER) % keys

    class Count(KeyedProcessFunction):
        def open(self, runtime_context):
            descriptor = ValueStateDescriptor("count", Types.PICKLED_BYTE_ARRAY())
            self.count = runtime_context.get_state(descriptor)
            self.seen = 0
            record(figures, "open", {"at": time.monotonic()})

        def process_element(self, key, ctx):
            count = (self.count.value() or 0) + 1
            self.count.update(count)
            self.seen += 1
            yield key, count

        def close(self):
            record(figures, "close", {"seen": self.seen})

    # Thread mode embeds the base interpreter in the JVM (started by this process): it finds
    # this environment's packages (PyFlink, pemja) only through PYTHONPATH.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [*site.getsitepackages(), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    config = Configuration()
    config.set_string("python.execution-mode", mode)
    # PyFlink runs "python" from the PATH for its workers (process mode) and to find libpython
    # (thread mode): this environment's, where PyFlink is.
    config.set_string("python.executable", sys.executable)
    config.set_string("python.client.executable", sys.executable)
    # A failure ends the run: with checkpointing, Flink's default restarts without end.
    config.set_string("restart-strategy.type", "none")
    config.set_string("state.backend.type", "hashmap")
    config.set_string("execution.checkpointing.dir", f"file://{figures}/checkpoints")
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(PARALLELISM)
    env.enable_checkpointing(interval_ms, CheckpointingMode.EXACTLY_ONCE)
    numbers = env.from_source(
        NumberSequenceSource(0, events - 1), WatermarkStrategy.no_watermarks(), "events"
    )
    (
        numbers.map(Key())
        .key_by(lambda k: k)
        .process(Count())
        .sink_to(Sink("org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink"))
    )
    env.execute("keyed-count")
    record(figures, "executed", {"at": time.monotonic()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--mode", choices=["thread", "process"], default="thread")
    parser.add_argument("--interval-ms", type=int, default=1000)
    parser.add_argument("--timeout-s", type=float, default=1800)
    parser.add_argument("--figures", help=argparse.SUPPRESS)  # set: run the job, in the venv
    args = parser.parse_args()
    if args.figures:
        job(args.events, args.keys, args.mode, args.interval_ms, args.figures)
        return

    from peer_venv import peer_python, read_figures, run_measured, version

    python = peer_python(
        "pyflink",
        "apache-flink==2.3.*",
        "import importlib.metadata as m; assert m.version('apache-flink').startswith('2.3')",
    )
    with tempfile.TemporaryDirectory(prefix="barrierflow-pyflink-") as figures:
        command = [python, __file__, "--figures", figures, "--events", str(args.events)]
        command += ["--keys", str(args.keys), "--mode", args.mode]
        command += ["--interval-ms", str(args.interval_ms)]
        _, peak_mib = run_measured([command], args.timeout_s)
        started = max(f["at"] for f in read_figures(Path(figures), "open"))
        (executed,) = read_figures(Path(figures), "executed")
        seen = sum(f["seen"] for f in read_figures(Path(figures), "close"))
    if seen != args.events:
        raise SystemExit(f"PyFlink's count saw {seen} events, expected {args.events}")
    elapsed = executed["at"] - started
    print(
        json.dumps(
            {
                "bench": "peer",
                "peer": f"pyflink-{args.mode}",
                "version": version(python, "apache-flink"),
                "events": args.events,
                "keys": args.keys,
                "parallelism": PARALLELISM,
                "interval_ms": args.interval_ms,
                "events_per_s": round(args.events / elapsed),
                "processing_s": round(elapsed, 3),
                "peak_rss_mib": peak_mib,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()

"""Checkpoints under back-pressure: aligned, unaligned, aligned with a timeout, and aligned with
buffer debloating, in one run.

Two workloads, parallelism 2:

- ``slow-stage`` (the unaligned-checkpoint issue's): a keyed count over K keys behind a keyed
  shuffle, then a slow stage doing 1 ms of work every 5 records (it holds back the whole job),
  a checkpoint every second;
- ``slow-keyed`` (the buffer-debloating issue's, a job whose function calls a model or a
  service): a keyed function that takes 2 ms a record behind a keyed shuffle, a checkpoint
  every 500 ms.

Each mode runs the same bounded job; per mode one JSON line: throughput (events/s over the
processing time), checkpoint duration median (p50) and max, persisted bytes median, completed,
failed and unaligned checkpoints, and where an unaligned checkpoint's time goes (start delay:
trigger to the last subtask's first barrier; async: the slowest subtask's writing). A last line
gives the ratios, measured in this run.

    python bench/backpressure.py
    python bench/backpressure.py --events 300000 --repeat 3
    python bench/backpressure.py --modes unaligned --events 100000 --details
    python bench/backpressure.py --state-backend rocksdb --incremental
    python bench/backpressure.py --workload slow-keyed --modes aligned aligned-debloat --repeat 3

``--details`` also prints each checkpoint's figures per subtask (start delay, alignment, sync,
async, persisted bytes), to see where the time goes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time

from barrierflow.checkpoint.history import CheckpointStatus
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.functions import KeyedProcessFunction, MapFunction
from barrierflow.datastream.state import ValueStateDescriptor
from barrierflow.protocol.checkpoint_barrier import CheckpointKind

MODES = {
    "aligned": {},
    "unaligned": {"execution.checkpointing.unaligned.enabled": True},
    "aligned-timeout-100ms": {
        "execution.checkpointing.unaligned.enabled": True,
        "execution.checkpointing.aligned-checkpoint-timeout": "100 ms",
    },
    "aligned-debloat": {"taskmanager.network.memory.buffer-debloat.enabled": True},
}
# per workload: events and checkpoint interval when not given (a run of about a minute)
WORKLOADS = {"slow-stage": (300_000, 1000), "slow-keyed": (60_000, 500)}


class Count(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, key, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        return ((key, count),)


class SlowCount(KeyedProcessFunction):
    """The count, 2 ms a record: a call to a model or a service, say."""

    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, key, ctx):
        time.sleep(0.002)
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        return ((key, count),)


class SlowStage(MapFunction):
    """1 ms of work every 5 records: a call to a slow service, say."""

    def open(self, runtime_context):
        self.seen = 0

    def map(self, record):
        self.seen += 1
        if self.seen % 5 == 0:
            time.sleep(0.001)
        return record


def run(spark, mode: str, args: argparse.Namespace) -> dict:
    keys = args.keys
    env = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(args.parallelism)
    env.configure(
        {
            **MODES[mode],
            "state.backend.type": args.state_backend,
            "execution.checkpointing.incremental": args.incremental,
        }
    )
    env.enable_checkpointing(args.interval_ms)
    env.get_checkpoint_config().set_checkpoint_storage(tempfile.mkdtemp(prefix="bench-bp-"))
    keyed = (
        env.from_source(NumberSequenceSource(1, args.events), "events")
        .map(lambda i: (i * 2654435761) % keys)
        .key_by(lambda k: k)
    )
    if args.workload == "slow-keyed":
        keyed.process(SlowCount()).sink_to(DiscardingSink())
    else:
        keyed.process(Count()).map(SlowStage()).sink_to(DiscardingSink())
    result = env.execute(f"backpressure-{mode}")
    periodic = [r for r in result.checkpoint_history if r.kind is CheckpointKind.CHECKPOINT]
    done = [r for r in periodic if r.status is CheckpointStatus.COMPLETED]
    if args.details:
        for r in done:
            print(json.dumps({"mode": mode, "checkpoint": r.checkpoint_id, **_figures(r)}))
    durations = [r.duration_ms for r in done] or [0.0]
    unaligned = [r for r in done if r.unaligned]
    return {
        "mode": mode,
        "workload": args.workload,
        "state_backend": args.state_backend + (" incremental" if args.incremental else ""),
        "events": args.events,
        "events_per_s": round(args.events / (result.processing_ms / 1000)),
        "checkpoint_ms_median": round(statistics.median(durations), 1),
        "checkpoint_ms_max": round(max(durations), 1),
        "persisted_bytes_median": round(statistics.median([r.persisted_data for r in done] or [0])),
        "completed": len(done),
        "failed": len(periodic) - len(done),
        "unaligned": len(unaligned),
        "start_delay_ms_median": _median_of_max(unaligned, "start_delay_ms"),
        "async_ms_median": _median_of_max(unaligned, "async_ms"),
    }


def _figures(record) -> dict:
    subtasks = sorted(record.subtasks, key=lambda s: (s.vertex, s.subtask))
    return {
        "duration_ms": round(record.duration_ms, 1),
        "unaligned": record.unaligned,
        "subtasks": [
            {
                "subtask": f"{s.vertex}[{s.subtask}]",
                "start_delay_ms": round(s.start_delay_ms, 1),
                "alignment_ms": round(s.alignment_ms, 1),
                "sync_ms": round(s.sync_ms, 1),
                "async_ms": round(s.async_ms, 1),
                "persisted": s.persisted_data,
            }
            for s in subtasks
        ],
    }


def _median_of_max(records: list, field: str) -> float | None:
    """Per checkpoint the slowest subtask's figure; the median over checkpoints."""
    if not records:
        return None
    return round(statistics.median(max(getattr(s, field) for s in r.subtasks) for r in records), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=list(WORKLOADS), default="slow-stage")
    parser.add_argument("--events", type=int, help="default: by workload, 300,000 or 60,000")
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--interval-ms", type=int, help="default: by workload, 1000 or 500")
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    parser.add_argument("--repeat", type=int, default=1, help="runs of each mode, interleaved")
    parser.add_argument("--details", action="store_true", help="every checkpoint's figures")
    parser.add_argument("--state-backend", choices=["hashmap", "rocksdb"], default="hashmap")
    parser.add_argument("--incremental", action="store_true", help="rocksdb: incremental")
    args = parser.parse_args()
    events, interval_ms = WORKLOADS[args.workload]
    args.events = args.events or events
    args.interval_ms = args.interval_ms or interval_ms

    from barrierflow.cluster.spark.session import get_or_create_session

    spark = get_or_create_session(args.parallelism)
    lines: dict[str, list[dict]] = {m: [] for m in args.modes}
    for _ in range(args.repeat):
        for mode in args.modes:
            line = run(spark, mode, args)
            lines[mode].append(line)
            print(json.dumps(line), flush=True)
    if "aligned" in lines and "unaligned" in lines:
        aligned = statistics.median(line["checkpoint_ms_median"] for line in lines["aligned"])
        unaligned = statistics.median(line["checkpoint_ms_median"] for line in lines["unaligned"])
        throughput = statistics.median(line["events_per_s"] for line in lines["unaligned"])
        print(
            json.dumps(
                {
                    "aligned_over_unaligned_checkpoint_median": round(aligned / unaligned, 1),
                    "unaligned_over_aligned_throughput": round(
                        throughput / statistics.median(x["events_per_s"] for x in lines["aligned"]),
                        3,
                    ),
                }
            ),
            flush=True,
        )
    if "aligned" in lines and "aligned-debloat" in lines:
        off, on = lines["aligned"], lines["aligned-debloat"]
        print(
            json.dumps(
                {
                    "debloat_checkpoint_ms_median": statistics.median(
                        line["checkpoint_ms_median"] for line in on
                    ),
                    "aligned_checkpoint_ms_median": statistics.median(
                        line["checkpoint_ms_median"] for line in off
                    ),
                    "debloat_over_aligned_throughput": round(
                        statistics.median(line["events_per_s"] for line in on)
                        / statistics.median(line["events_per_s"] for line in off),
                        3,
                    ),
                }
            ),
            flush=True,
        )
    spark.stop()


if __name__ == "__main__":
    main()

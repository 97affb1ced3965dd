"""The autoscaler against issue 37's goals, on a Kafka topic fed at a rate one subtask cannot
keep up with: the job's map sleeps 1 ms a record, so that a subtask's capacity (under 1,000
records/s) is set by the sleep and not by the machine's two cores.

    Kafka (24 partitions) -> Work: sleep 1 ms -> key_by(i % 2,400) -> Count -> Stamp -> FileSink

Each produced record carries its index i and the time it was produced; ``Work`` adds its
parallelism, ``Stamp`` the time the record was processed, into an exactly-once ``FileSink``.
The committed output then tells how far processing was behind the input at every moment (a
record's processing time less its produce time) and at which parallelism. Two runs, each on an
embedded ``local[8]`` (8 task slots; the subtasks sleep, so 8 fit on two cores), the source's
vertex limited to 8 (``job.autoscaler.vertex.max-parallelism``):

- ``step``: 1,200 records/s (``--warm-s``), then 3x as much (``--step-s``), then 1,200/s again
  (``--fall-s``), with short test windows: ``job.autoscaler.metrics.window`` 30 s,
  ``stabilization.interval`` 30 s, ``catch-up.duration`` 60 s, and
  ``scale-up.grace-period`` 60 s (its default, an hour, would hold any scale-down for an hour
  after a scale-up). Measured: the time from the step to the scale-up (goal: within 2
  minutes); the peak of the delay after the step and the time from which every record is
  processed within 10 s of its produce (goal: the lag stops growing and returns within 10 s
  of input); the time from the fall to the scale-down (goal: within 5 minutes).
- ``steady``: 1,800 records/s with ±20% noise (each second's rate drawn uniformly) for
  ``--steady-s`` (600 s), the source's vertex starting at 3 subtasks (about 0.7 busy), with
  every autoscaler duration scaled by the run's length over an hour (at 600 s a sixth:
  window 150 s, stabilization 50 s, catch-up 300 s, grace period 600 s): the run stands for
  an hour at the defaults, so that "at most 2 rescales an hour" is at most 2 in the run. The
  load's noise is not scaled: each second's rate is drawn anew, as fast as in the hour.

Both runs read the source to known end offsets (the schedule is drawn before the run), end by
themselves, and their committed output is compared record by record with the one a failure-free
run commits (``scale_figures.check_keyed_counts``): each record of partition ``i % 24`` under
key ``i % 2,400``, so each key's records arrive in order whatever the parallelism. A wrong output
fails the run; a slow one does not. The autoscaler's decisions, made and skipped, are read from
the job's rescale history (REST ``GET /jobs/:id/rescales``) and printed with their reasons.

    python bench/autoscale.py                    # both runs, about 20 minutes
    python bench/autoscale.py --only step
    python bench/autoscale.py --quick            # shorter phases: a smoke run

The last line is JSON with every figure. Without ``--bootstrap`` it starts the ``noida-db``
test broker. Only one benchmark may run on the machine at a time.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from job_rest import job_address, rescale_history, rescale_history_after
from rescale_job import read_committed
from scale_figures import check_keyed_counts, lag_after, median_p99, schedule

from barrierflow.cluster.spark.session import get_or_create_context
from barrierflow.datastream import KeyedProcessFunction, MapFunction, StreamExecutionEnvironment
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.kafka import KafkaOffsetsInitializer, KafkaSource
from barrierflow.datastream.formats.json import JsonRowDeserializationSchema
from barrierflow.datastream.state import ValueStateDescriptor
from tests.servers.kafka import KafkaBroker, kafka_broker

PARTITIONS = 24  # divides evenly among 1, 2, 3, 4, 6 and 8 readers
KEYS = 2400  # a multiple of the partitions: a key's records are all in one partition
SLOTS = 8
BASE_RATE = 1200  # records/s: one subtask takes under 1,000
STEADY_RATE = 1800
LAG_BOUND_S = 10.0
SCALE_UP_GOAL_S = 120.0
SCALE_DOWN_GOAL_S = 300.0
STEP_SETTINGS = {
    "job.autoscaler.metrics.window": "30 s",
    "job.autoscaler.stabilization.interval": "30 s",
    "job.autoscaler.catch-up.duration": "60 s",
    "job.autoscaler.scale-up.grace-period": "60 s",
}
DEFAULT_DURATIONS_S = {  # the Flink operator's defaults, which barrierflow keeps
    "job.autoscaler.metrics.window": 900,
    "job.autoscaler.stabilization.interval": 300,
    "job.autoscaler.catch-up.duration": 1800,
    "job.autoscaler.scale-up.grace-period": 3600,
}


def steady_settings(seconds: int) -> dict[str, str]:
    """The default durations scaled so that ``seconds`` of the run stand for an hour."""
    factor = seconds / 3600
    return {key: f"{default * factor:g} s" for key, default in DEFAULT_DURATIONS_S.items()}


class Work(MapFunction):
    """1 ms of sleep a record: a subtask's capacity is the sleep's."""

    def open(self, runtime_context):
        self.parallelism = runtime_context.get_number_of_parallel_subtasks()

    def map(self, event):
        time.sleep(0.001)
        return [event["i"], event["t"], self.parallelism]


class Count(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield [ctx.get_current_key(), value[0], count, value[1], value[2]]


class Stamp(MapFunction):
    def map(self, record):
        return [*record, time.time()]


# --- input ---------------------------------------------------------------------------------


@dataclass
class Producer:
    """Produces ``counts[s]`` records in second s, record i (from 1) to partition i % 24 as
    ``{"i": i, "t": produce time}``; ``started_at`` is when each second began."""

    broker: KafkaBroker
    topic: str
    counts: list[int]
    started_at: list[float] = field(default_factory=list)

    def run(self) -> None:
        from confluent_kafka import Producer as KafkaProducer

        producer = KafkaProducer({"bootstrap.servers": self.broker.bootstrap_servers,
                                  "linger.ms": 5})  # fmt: skip
        start, i = time.time(), 0
        for second, count in enumerate(self.counts):
            self.started_at.append(start + second)
            for k in range(count):
                if k % 50 == 0:
                    time.sleep(max(0.0, start + second + k / count - time.time()))
                i += 1
                value = json.dumps({"i": i, "t": time.time()}).encode()
                while True:
                    try:
                        producer.produce(self.topic, value, partition=i % PARTITIONS)
                        break
                    except BufferError:
                        producer.poll(0.01)
                producer.poll(0)
        if producer.flush(60) != 0:
            raise RuntimeError("the producer could not deliver every record")


def end_offsets(topic: str, total: int) -> dict[tuple[str, int], int]:
    """Where each partition ends once records 1..total were produced."""
    per = Counter(i % PARTITIONS for i in range(1, total + 1))
    return {(topic, p): per[p] for p in range(PARTITIONS)}


# --- the job -------------------------------------------------------------------------------


def build(env: StreamExecutionEnvironment, broker: KafkaBroker, topic: str, total: int,
          base: str, settings: dict, parallelism: int) -> None:  # fmt: skip
    env.configure({"job.autoscaler.enabled": True, **settings,
                   "job.autoscaler.vertex.max-parallelism": SLOTS, "rest.port": 0})  # fmt: skip
    env.enable_checkpointing(1000)
    env.get_checkpoint_config().set_checkpoint_storage(f"{base}/ckpt")
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(broker.bootstrap_servers)
        .set_topics(topic)
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_bounded(KafkaOffsetsInitializer.offsets(end_offsets(topic, total)))
        .set_value_only_deserializer(JsonRowDeserializationSchema())
        .build()
    )
    events = env.from_source(source, "events").set_parallelism(parallelism).uid("events")
    (
        events.map(Work())
        .set_parallelism(parallelism)
        .uid("work")
        .key_by(lambda r: r[0] % KEYS)
        .process(Count())
        .uid("count")
        .map(Stamp())
        .uid("stamp")
        .add_sink(FileSink(f"{base}/out"))
        .uid("sink")
    )


def run(broker: KafkaBroker, name: str, counts: list[int], settings: dict, parallelism: int,
        work: str) -> dict:  # fmt: skip
    """Runs the job over the produced ``counts``, printing the autoscaler's rescales as they
    happen; the committed output (checked) and the history once it ended."""
    base = tempfile.mkdtemp(prefix=f"autoscale-{name}-", dir=work)
    topic = broker.create_topic(f"autoscale-{name}-{uuid.uuid4().hex[:8]}", PARTITIONS)
    total = sum(counts)
    env = StreamExecutionEnvironment().set_parallelism(1)
    build(env, broker, topic, total, base, settings, parallelism)
    client = env.execute_async(f"autoscale-{name}")
    job_id, url, _ = job_address(f"{base}/ckpt")
    while not glob.glob(f"{base}/ckpt/*/chk-*/_metadata"):  # every task runs
        time.sleep(0.1)
    producer = Producer(broker, topic, counts)
    thread = threading.Thread(target=producer.run, daemon=True)
    thread.start()
    _follow(client, url, job_id, producer)
    client.get_job_execution_result().result()
    thread.join()
    history = rescale_history_after(client, url, job_id)
    records = read_committed(f"{base}/out")
    checked = check_keyed_counts(records, KEYS, range(1, total + 1))
    shutil.rmtree(base, ignore_errors=True)
    return {"records": records, "checked": checked, "history": history,
            "seconds": producer.started_at}  # fmt: skip


def _follow(client, url: str, job_id: str, producer: Producer) -> None:
    """Prints each rescale of the autoscaler once it ended, while the job runs."""
    shown: set[int] = set()
    while not client.done():
        with contextlib.suppress(OSError):
            for r in rescale_history(url, job_id):
                if r["status"] not in ("IN_PROGRESS", "SKIPPED") and r["id"] not in shown:
                    shown.add(r["id"])
                    t0 = producer.started_at[0] if producer.started_at else r["requested_ms"] / 1000
                    print(f"  t={r['requested_ms'] / 1000 - t0:6.1f} s {_line(r)}", flush=True)
        time.sleep(1.0)


# --- the figures ---------------------------------------------------------------------------


def _line(r: dict) -> str:
    moved = ", ".join(f"{v} {r['from_parallelism'].get(v)} -> {p}"
                      for v, p in r["to_parallelism"].items()
                      if r["from_parallelism"].get(v) != p)  # fmt: skip
    downtime = "" if r.get("downtime_ms") is None else f", downtime {r['downtime_ms'] / 1000:.2f} s"
    times = f" ({r.get('decisions', 1)} decisions)" if r["status"] == "SKIPPED" else ""
    return f"{r['status']}{times}{' ' + moved if moved else ''}{downtime}: {r['reason']}"


def _scalings(history: list[dict]) -> list[dict]:
    """The autoscaler's completed rescales, each with its direction."""
    out = []
    for r in history:
        if r["trigger"] != "autoscaler" or r["status"] != "COMPLETED":
            continue
        before, after = sum(r["from_parallelism"].values()), sum(r["to_parallelism"].values())
        out.append({**r, "up": after > before})
    return out


def _first(scalings: list[dict], up: bool, since: float) -> dict | None:
    found = [r for r in scalings if r["up"] == up and r["requested_ms"] / 1000 >= since]
    if not found:
        return None
    r = found[0]
    return {"decided_s": round(r["requested_ms"] / 1000 - since, 1),
            "done_s": round(r["ended_ms"] / 1000 - since, 1), "reason": r["reason"],
            "from": r["from_parallelism"], "to": r["to_parallelism"]}  # fmt: skip


def _delays(records: list[list]) -> list[tuple[float, float]]:
    return sorted((r[5], r[5] - r[3]) for r in records)


def step_figures(result: dict, warm_s: int, step_s: int) -> dict:
    seconds, delays = result["seconds"], _delays(result["records"])
    step, fall = seconds[warm_s], seconds[warm_s + step_s]
    scalings = _scalings(result["history"])
    up, down = _first(scalings, True, step), _first(scalings, False, fall)
    lag_up = lag_after(delays, step, fall, LAG_BOUND_S)
    lag_down = lag_after(delays, fall, float("inf"), LAG_BOUND_S)
    return {
        "run": "step", "records_checked": result["checked"], "exactly_once": True,
        "scale_up": up, "scale_down": down,
        "lag_after_step": None if lag_up is None else vars(lag_up),
        "lag_after_fall": None if lag_down is None else vars(lag_down),
        "rescales": [_line(r) for r in result["history"]],
        "downtimes_s": [round(r["downtime_ms"] / 1000, 2) for r in scalings
                        if r.get("downtime_ms") is not None],
        "goals": {"scale_up_s": SCALE_UP_GOAL_S, "lag_within_s": LAG_BOUND_S,
                  "scale_down_s": SCALE_DOWN_GOAL_S},
    }  # fmt: skip


def steady_figures(result: dict, warm_s: float, settings: dict) -> dict:
    seconds, delays = result["seconds"], _delays(result["records"])
    scalings = _scalings(result["history"])
    skipped = sum(r.get("decisions", 1) for r in result["history"] if r["status"] == "SKIPPED")
    median, p99 = median_p99(d for _, d in delays)
    return {
        "run": "steady", "records_checked": result["checked"], "exactly_once": True,
        "seconds": len(seconds), "rescales": len(scalings),
        "rescales_after_warm_up": sum(r["requested_ms"] / 1000 >= seconds[0] + warm_s
                                      for r in scalings),
        "decisions_not_to_scale": skipped,
        "delay_s": {"median": round(median, 3), "p99": round(p99, 3)},
        "history": [_line(r) for r in result["history"]],
        "settings": settings,
        "goal": "at most 2 rescales in the run (an hour at the defaults' durations)",
    }  # fmt: skip


def _print_step(f: dict) -> None:
    up, down, lag = f["scale_up"], f["scale_down"], f["lag_after_step"]
    print(f"step: {f['records_checked']:,} committed records exactly once", flush=True)
    print(f"  scale-up: {_when(up)} after the step (goal <= {SCALE_UP_GOAL_S:.0f} s)")
    if lag is not None:
        within = "never" if lag["within_s"] is None else f"{lag['within_s']:.1f} s after the step"
        print(f"  delay after the step: peak {lag['peak_s']:.1f} s at {lag['peak_at_s']:.1f} s; "
              f"every record within {LAG_BOUND_S:.0f} s of its produce from {within}")  # fmt: skip
    print(f"  scale-down: {_when(down)} after the fall (goal <= {SCALE_DOWN_GOAL_S:.0f} s)")
    print(f"  rescale downtimes: {f['downtimes_s']} s")
    print("  the rescale history, oldest first:")
    for line in f["rescales"]:
        print(f"    {line}")


def _when(found: dict | None) -> str:
    if found is None:
        return "none"
    return f"decided {found['decided_s']} s, running at the new parallelism {found['done_s']} s"


def _print_steady(f: dict) -> None:
    print(f"steady: {f['records_checked']:,} committed records exactly once; {f['seconds']} s "
          f"at {STEADY_RATE:,}/s ±20%: {f['rescales']} rescales "
          f"({f['rescales_after_warm_up']} after the first window), "
          f"{f['decisions_not_to_scale']} decisions not to (goal: <= 2 rescales); "
          f"produce-to-processing delay median {f['delay_s']['median']} s, "
          f"p99 {f['delay_s']['p99']} s")  # fmt: skip
    for line in f["history"]:
        print(f"    {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=("step", "steady"))
    parser.add_argument("--warm-s", type=int, default=120)
    parser.add_argument("--step-s", type=int, default=150)
    parser.add_argument("--fall-s", type=int, default=240)
    parser.add_argument("--steady-s", type=int, default=600)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bootstrap", help="an existing Kafka cluster; default: start one")
    parser.add_argument("--quick", action="store_true", help="short phases: a smoke run")
    args = parser.parse_args()
    if args.quick:
        args.warm_s, args.step_s, args.fall_s, args.steady_s = 60, 90, 120, 120
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    get_or_create_context(SLOTS)  # the embedded local[8]
    work = tempfile.mkdtemp(prefix="barrierflow-autoscale-")
    figures = []
    with contextlib.ExitStack() as stack:
        broker = (
            KafkaBroker(args.bootstrap) if args.bootstrap else stack.enter_context(kafka_broker())
        )
        if args.only in (None, "step"):
            phases = [(args.warm_s, BASE_RATE), (args.step_s, 3 * BASE_RATE),
                      (args.fall_s, BASE_RATE)]  # fmt: skip
            print(f"step: {BASE_RATE:,}/s for {args.warm_s} s, {3 * BASE_RATE:,}/s for "
                  f"{args.step_s} s, {BASE_RATE:,}/s for {args.fall_s} s", flush=True)  # fmt: skip
            result = run(broker, "step", schedule(phases), STEP_SETTINGS, 1, work)
            figures.append(step_figures(result, args.warm_s, args.step_s))
            _print_step(figures[-1])
        if args.only in (None, "steady"):
            counts = schedule([(args.steady_s, STEADY_RATE)], noise=0.2, seed=args.seed)
            print(f"steady: {STEADY_RATE:,}/s ±20% for {args.steady_s} s", flush=True)
            settings = steady_settings(args.steady_s)
            print(f"  durations: {settings}", flush=True)
            result = run(broker, "steady", counts, settings, 3, work)
            window_s = float(settings["job.autoscaler.metrics.window"].split()[0])
            figures.append(steady_figures(result, window_s, settings))
            _print_steady(figures[-1])
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({"benchmark": "autoscale", "quick": args.quick, "figures": figures}))


if __name__ == "__main__":
    main()

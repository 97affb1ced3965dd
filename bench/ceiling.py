"""The keyed count's ceilings: the same workloads as plain Python with no framework, so that each
figure of ours can be given as a ratio to what this machine does in the same run.

- ``dict``: N events with key ``(i * 2654435761) % K`` (as ``keyed_count.py``), a count per key
  in a dict, the ``(key, count)`` output built and dropped; in 1 or in P processes.
- ``functions``: the keyed count's own functions called once per event in plain Python, as an
  engine that runs them record by record calls them: the ``map`` (``i * 2654435761 % K``), the
  key selector and ``Count.process_element`` of ``keyed_count.py``, its ValueState a dict entry
  under the current key behind the same ``value()`` and ``update()`` calls, its ``(key,
  count)`` output taken. No routing, batches, network or checkpoints: the floor of such an
  engine on this job, where ``dict`` is the floor of the work itself.
- ``rocksdict``: the same with the counts in RocksDB (rocksdict, raw mode): a get and a put per
  event, with the options of our RocksDB backend (its default block cache and write buffers,
  bloom filters, no write-ahead log), one database per process. Keys are 8 bytes and counts
  8 bytes, where our backend writes a 14-byte row key (key group, length, pickled key) and a
  pickled count: the ceiling leaves out our encoding, not RocksDB's work.
- ``kafka``: the Kafka client alone (confluent-kafka) against the broker and with the messages
  of ``kafka_roundtrip.py``: N JSON events in a topic of 2 partitions, one process per
  partition consuming it, counting per key and producing ``{"key", "count", "ts"}`` as JSON to
  a topic of 2 partitions, with the producer settings of our ``KafkaSink``. ``--transactional``
  as our exactly-once sink: a transactional producer that commits every ``--interval-ms``
  (ours commits when a checkpoint completes); otherwise a plain producer flushed at the end.

Each process owns a share of the keys, as each subtask of our keyed count does, and no record
crosses between processes. With P dividing K, key ``(i * 2654435761) % K`` is congruent to
``i * 2654435761`` modulo P, so process j, taking the events ``i = j (mod P)``, sees exactly
the keys ``k = j * 2654435761 (mod P)``, a share disjoint from the others' (2654435761 is
prime). In Kafka, event i has key ``i % K`` and is in partition ``i % 2``: with K even,
process j, reading partition j, sees exactly the keys ``k = j (mod 2)``.

Prints one JSON line: events/s over the time from all processes ready (state opened, clients
connected) to the last one finished, as ours is over the time from all tasks running to all
finished; and the peak RSS of the whole process tree (``peak_rss.py``; the broker excluded).

    python bench/ceiling.py dict --events 5000000 --keys 100000 --processes 2
    python bench/ceiling.py dict --events 5000000 --keys 100000 --processes 1
    python bench/ceiling.py functions --events 5000000 --keys 100000 --processes 2
    python bench/ceiling.py rocksdict --events 4000000 --keys 2000000 --processes 2
    python bench/ceiling.py kafka --events 200000 --keys 10000 --transactional
    python bench/ceiling.py kafka --events 200000 --bootstrap localhost:9092   # an existing cluster

Without ``--bootstrap``, ``kafka`` starts the ``noida-db`` test broker as ``kafka_roundtrip.py``.

**Lifecycle:** each workload runs in worker processes (spawned, so that no sampling thread is
forked); they prepare, meet at a barrier, run, and send their figures back on a queue.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import queue
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from peak_rss import PeakRss, child_pids

MULTIPLIER = 2654435761  # Knuth's multiplicative hash, a prime: the benches' key scattering
PARTITIONS = 2  # kafka_roundtrip.py's topics


@dataclass(frozen=True)
class Share:
    """What one process does: the events ``range(index, events, processes)``."""

    events: int
    keys: int
    processes: int
    index: int

    def event_ids(self) -> range:
        return range(self.index, self.events, self.processes)


def count_in_dict(share: Share, ready: Any) -> dict:
    keys = share.keys
    counts: dict[int, int] = {}
    get = counts.get
    last = None
    ready.wait()
    started = time.monotonic()
    for i in share.event_ids():
        k = (i * MULTIPLIER) % keys
        c = get(k, 0) + 1
        counts[k] = c
        last = (k, c)
    finished = time.monotonic()
    return {
        "started": started,
        "finished": finished,
        "counted": sum(counts.values()),
        "last": last,  # the output is built, as ours builds it for its sink
    }


class _DictValueState:
    """A ValueState as plainly as it can be: a dict entry under the key being processed."""

    __slots__ = ("data", "key")

    def __init__(self) -> None:
        self.data: dict[Any, Any] = {}
        self.key: Any = None

    def value(self) -> Any:
        return self.data.get(self.key)

    def update(self, value: Any) -> None:
        self.data[self.key] = value


class _Context:
    """The runtime context ``Count.open`` asks for its state."""

    def __init__(self, state: _DictValueState) -> None:
        self._state = state

    def get_state(self, descriptor: Any) -> _DictValueState:
        return self._state


def count_by_functions(share: Share, ready: Any) -> dict:
    from keyed_count import Count

    keys = share.keys
    state = _DictValueState()
    count = Count()
    count.open(_Context(state))
    process = count.process_element
    map_function = lambda i: (i * MULTIPLIER) % keys  # noqa: E731 - as keyed_count.py's
    key_selector = lambda k: k  # noqa: E731
    last = None
    ready.wait()
    started = time.monotonic()
    for i in share.event_ids():
        record = map_function(i)
        key = key_selector(record)
        state.key = key
        for output in process(record, None):
            last = output
    finished = time.monotonic()
    return {
        "started": started,
        "finished": finished,
        "counted": sum(state.data.values()),
        "last": last,
    }


def count_in_rocksdict(share: Share, ready: Any, directory: str) -> dict:
    from rocksdict import Rdict, WriteOptions

    from barrierflow.state.backends import StateBackendConfig
    from barrierflow.state.backends.registry import ROCKSDB
    from barrierflow.state.backends.rocksdb.database import db_options

    job = StateBackendConfig(kind="rocksdb")  # a job that sets no state.backend.rocksdb.* key
    options = db_options(
        *(
            ROCKSDB.option(job, f"state.backend.rocksdb.{key}")
            for key in (
                "block.cache-size",
                "writebuffer.size",
                "compaction.level.target-file-size-base",
                "compaction.level.max-size-level-base",
            )
        )
    )
    write_options = WriteOptions()
    write_options.disable_wal = True  # as our backend: checkpoints make state durable
    db = Rdict(os.path.join(directory, f"db-{share.index}"), options)
    db.set_write_options(write_options)
    get, put, keys = db.get, db.put, share.keys
    last = None
    ready.wait()
    started = time.monotonic()
    for i in share.event_ids():
        k = ((i * MULTIPLIER) % keys).to_bytes(8, "big")
        raw = get(k)
        c = 1 if raw is None else int.from_bytes(raw, "little") + 1
        put(k, c.to_bytes(8, "little"))
        last = (k, c)
    finished = time.monotonic()
    counted = sum(int.from_bytes(v, "little") for v in db.values())  # untimed: the check
    db.close()
    return {"started": started, "finished": finished, "counted": counted, "last": last}


def roundtrip_in_kafka(
    share: Share,
    ready: Any,
    bootstrap: str,
    topics: tuple[str, str],
    transactional: bool,
    interval_s: float,
) -> dict:
    import msgspec
    from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

    source, sink = topics
    consumer = Consumer(
        {  # as our KafkaSource's consumers
            "bootstrap.servers": bootstrap,
            "group.id": f"ceiling-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(source, share.index, 0)])
    conf = {"bootstrap.servers": bootstrap, "linger.ms": 5}  # as our KafkaSink's producers
    if transactional:
        conf.update(
            {"acks": "all", "enable.idempotence": True, "transactional.id": uuid.uuid4().hex}
        )
    producer = Producer(conf)
    if transactional:
        producer.init_transactions()
    decode, encode = msgspec.json.Decoder().decode, msgspec.json.Encoder().encode
    expected = len(share.event_ids())
    counts: dict[int, int] = {}
    seen = 0
    ready.wait()
    started = time.monotonic()
    next_commit = started + interval_s
    if transactional:
        producer.begin_transaction()
    while seen < expected:
        for message in consumer.consume(1000, timeout=0.1):
            if message.error() is not None:
                if message.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise RuntimeError(f"partition {share.index} of {source}: {message.error().str()}")
            event = decode(message.value())
            key = event["key"]
            c = counts.get(key, 0) + 1
            counts[key] = c
            value = encode({"key": key, "count": c, "ts": event["ts"]})
            while True:
                try:
                    producer.produce(sink, value)
                    break
                except BufferError:  # the local queue is full: let librdkafka send
                    producer.poll(0.05)
            seen += 1
        producer.poll(0)
        if transactional and time.monotonic() >= next_commit:
            producer.commit_transaction()
            producer.begin_transaction()
            next_commit += interval_s
    if transactional:
        producer.commit_transaction()
    elif producer.flush(60):
        raise RuntimeError(f"records to {sink} still unsent after 60 s")
    finished = time.monotonic()
    consumer.close()
    return {
        "started": started,
        "finished": finished,
        "counted": sum(counts.values()),
    }


def _worker(
    run: Callable[[Share, Any], dict], share: Share, ready: Any, results: Any, release: Any
) -> None:
    try:
        results.put((share.index, run(share, ready)))
    except BaseException as e:
        ready.abort()  # the others must not wait at the barrier for this one
        results.put((share.index, {"error": f"{type(e).__name__}: {e}"}))
        raise
    release.wait()  # alive, state and all, until the parent has sampled the tree once more


def collect(results: Any, workers: list) -> dict[int, dict]:
    """Each worker's figures, by share; a worker that died without a word is an error."""
    done: dict[int, dict] = {}
    while len(done) < len(workers):
        try:
            index, figures = results.get(timeout=1)
            done[index] = figures
        except queue.Empty:
            lost = [w.exitcode for i, w in enumerate(workers) if i not in done and not w.is_alive()]
            if lost:
                raise SystemExit(f"a ceiling worker died (exit code {lost[0]})") from None
    return done


def run_processes(
    run: Callable[[Share, Any], dict], events: int, keys: int, processes: int, **figures: Any
) -> dict:
    """Runs ``run(share, ready)`` in ``processes`` spawned processes, one share each, and sums
    up their figures; ``ready`` is the barrier they meet at once prepared."""
    spawn = multiprocessing.get_context("spawn")
    ready, results, release = spawn.Barrier(processes), spawn.Queue(), spawn.Event()
    with PeakRss(exclude=child_pids(os.getpid())) as rss:  # a broker started before: not ours
        workers = [
            spawn.Process(
                target=_worker,
                args=(run, Share(events, keys, processes, i), ready, results, release),
                daemon=True,  # ended with this process if it gives up on them
            )
            for i in range(processes)
        ]
        for w in workers:
            w.start()
        done = collect(results, workers)
        rss.sample()  # the workers' state at its largest: they wait for the release
        release.set()
        for w in workers:
            w.join()
    failed = {i: r["error"] for i, r in done.items() if "error" in r}
    if failed:
        raise SystemExit(f"ceiling workers failed: {failed}")
    counted = sum(r["counted"] for r in done.values())
    if counted != events:
        raise SystemExit(f"the workers counted {counted} events, expected {events}")
    elapsed = max(r["finished"] for r in done.values()) - min(r["started"] for r in done.values())
    return {
        **figures,
        "events": events,
        "keys": keys,
        "processes": processes,
        "events_per_s": round(events / elapsed),
        "processing_s": round(elapsed, 3),
        "peak_rss_mib": rss.peak_mib,
    }


def owned_keys_check(keys: int, processes: int) -> None:
    if keys % processes:
        raise SystemExit(
            f"--keys {keys} is not divisible by --processes {processes}: the processes could "
            "not each own a share of the keys without exchanging records (see the module "
            "docstring); choose a multiple"
        )


def kafka(args: argparse.Namespace) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/servers: the broker
    from kafka_roundtrip import produce

    from tests.servers.kafka import KafkaBroker, kafka_broker

    owned_keys_check(args.keys, PARTITIONS)
    with contextlib.ExitStack() as stack:
        broker = (
            KafkaBroker(args.bootstrap) if args.bootstrap else stack.enter_context(kafka_broker())
        )
        name = uuid.uuid4().hex[:8]
        topics = (
            broker.create_topic(f"ceiling-in-{name}", PARTITIONS),
            broker.create_topic(f"ceiling-out-{name}", PARTITIONS),
        )
        produce(broker, topics[0], args.events, args.keys, None)  # before, as ours: untimed
        run = partial(
            roundtrip_in_kafka,
            bootstrap=broker.bootstrap_servers,
            topics=topics,
            transactional=args.transactional,
            interval_s=args.interval_ms / 1000,
        )
        return run_processes(
            run,
            args.events,
            args.keys,
            PARTITIONS,
            workload="kafka",
            transactional=args.transactional,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    workloads = parser.add_subparsers(dest="workload", required=True)
    for name, events, keys in (
        ("dict", 5_000_000, 100_000),
        ("functions", 5_000_000, 100_000),
        ("rocksdict", 4_000_000, 2_000_000),
        ("kafka", 200_000, 10_000),
    ):
        sub = workloads.add_parser(name)
        sub.add_argument("--events", type=int, default=events)
        sub.add_argument("--keys", type=int, default=keys)
        if name == "kafka":
            sub.add_argument("--transactional", action="store_true", help="as exactly-once")
            sub.add_argument("--interval-ms", type=int, default=1000, help="between commits")
            sub.add_argument("--bootstrap", help="an existing Kafka cluster; default: start one")
        else:
            sub.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()

    if args.workload == "kafka":
        figures = kafka(args)
    elif args.workload in ("dict", "functions"):
        owned_keys_check(args.keys, args.processes)
        run = count_in_dict if args.workload == "dict" else count_by_functions
        figures = run_processes(run, args.events, args.keys, args.processes, workload=args.workload)
    else:
        owned_keys_check(args.keys, args.processes)
        directory = tempfile.mkdtemp(prefix="barrierflow-ceiling-")
        try:
            figures = run_processes(
                partial(count_in_rocksdict, directory=directory),
                args.events,
                args.keys,
                args.processes,
                workload="rocksdict",
            )
        finally:
            shutil.rmtree(directory, ignore_errors=True)
    print(json.dumps({"bench": "ceiling", **figures}), flush=True)


if __name__ == "__main__":
    main()

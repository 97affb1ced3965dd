"""``DataStreamUtils``: Flink's ``DataStreamUtils.reinterpretAsKeyedStream``, which PyFlink
does not offer.

A stream already partitioned as ``key_by`` would partition it (each subtask holding exactly
the records of its key groups: a Kafka topic written by key group, the output of a keyed
operator that kept the key) can be used as a ``KeyedStream`` without the shuffle: the keyed
operator chains to the stream's operator, so its records are neither serialized nor sent.
Nothing runs here; the edge is recorded forward and marked, the graph refuses it where the
chain cannot form (``graph/job_graph.py``), and the keyed operator checks each record's key
group at run time (``runtime/operators/key_group_check.py``).
"""

from __future__ import annotations

from typing import Any

from barrierflow.api.datastream import DataStream, KeyedStream, keyed_stream
from barrierflow.errors import ConfigurationError
from barrierflow.graph.transformation import TransformationKind


class DataStreamUtils:
    @staticmethod
    def reinterpret_as_keyed_stream(
        data_stream: DataStream, key_selector: Any, key_type: Any = None
    ) -> KeyedStream:
        """``data_stream`` as a ``KeyedStream`` keyed by ``key_selector``, with no shuffle:
        the keyed operator runs in the thread of ``data_stream``'s operator, at its
        parallelism.

        **Warning** (Flink's): the stream must already be partitioned exactly as ``key_by``
        would partition it, that is by key group: subtask *i* of ``data_stream`` must hold
        every record, and only the records, whose key's key group is in the range of subtask
        *i* (for the job's max parallelism and this parallelism). Otherwise one key's state
        would be split between subtasks, and checkpoints would hold state in the wrong key
        groups. Each record is checked when it reaches the keyed operator: one outside its
        subtask's key groups fails the job, naming the record, its key and key group, the
        subtask and its range. A rescale changes the ranges: where ``data_stream`` is a
        source's output (partitioned outside the job, a Kafka topic written with
        ``KeyGroupPartitioner``), the job keeps that parallelism (a rescale is refused, the
        autoscaler leaves it, reactive mode is refused; docs/pyflink-compatibility.md).

        Refused (``ConfigurationError``) where the keyed operator cannot chain to
        ``data_stream``'s operator: another parallelism, another consumer of that operator,
        ``start_new_chain``/``disable_chaining``, a union or side output in between."""
        if not isinstance(data_stream, DataStream):
            raise ConfigurationError(
                f"reinterpret_as_keyed_stream() needs a DataStream, got {data_stream!r:.100}"
            )
        t = data_stream.get_transformation()
        if t.kind is TransformationKind.PARTITION:
            raise ConfigurationError(
                f"reinterpret_as_keyed_stream() takes the output of an operator, not of "
                f"{t.name} (key_by, rebalance, ...): its records would be partitioned twice; "
                "reinterpret the stream before it, or the output of the operator after it"
            )
        return keyed_stream(data_stream, key_selector, key_type, reinterpreted=True)

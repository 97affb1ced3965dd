"""KafkaSink's committer: commits a transaction on the producer that opened it where this
subtask's writer still has it, and otherwise makes sure its records are committed exactly once
(``transactions.ensure_committed``); fences what failed attempts left open.

**Threading:** the task thread. **I/O:** short-lived producers and commit-group consumers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from barrierflow.connectors.base.optional_dependency import require
from barrierflow.connectors.interfaces.committables import Recovery
from barrierflow.connectors.interfaces.delivery_guarantee import DeliveryGuarantee
from barrierflow.connectors.interfaces.sink import Committable, Committer, CommitterContext
from barrierflow.connectors.kafka.sink_writer import TransactionalKafkaWriter
from barrierflow.connectors.kafka.transactions import TRANSACTION_SLOTS, ensure_committed, fence

if TYPE_CHECKING:
    from barrierflow.connectors.kafka.sink import KafkaSink


class KafkaCommitter(Committer):
    def __init__(self, sink: KafkaSink, context: CommitterContext) -> None:
        self._kafka = require("confluent_kafka", "kafka", "KafkaSink")
        self._sink = sink
        writer = context.writer
        self._writer = writer if isinstance(writer, TransactionalKafkaWriter) else None
        self._transactional_id = sink.transactional_ids(context.job_name, context.operator_uid)

    def commit(self, committables: list[Committable]) -> None:
        for c in committables:
            live = self._writer is not None and self._writer.commit_pending(c.data, c.checkpoint_id)
            if not live:
                ensure_committed(self._kafka, self._sink, c.data, c.checkpoint_id)

    def abort_lingering(self, recovery: Recovery) -> None:
        """Fences the transactional ids of the old subtasks this one answers for, aborting
        what they left open, so that none holds back read_committed consumers. (A sink that
        never wrote transactions skips it, unless its restored snapshot holds some.)"""
        exactly_once = self._sink.delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE
        if not exactly_once and not recovery.committables:
            return
        for old in recovery.owned_subtasks():
            for slot in range(TRANSACTION_SLOTS):
                fence(self._kafka, self._sink, self._transactional_id(old, slot))

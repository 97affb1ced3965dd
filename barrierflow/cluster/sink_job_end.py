"""What a job that ended for good left prepared in its sinks' systems is settled, on the
JobMaster: each attempt's start commits what the restored checkpoint names and rolls back the
rest (``Committer.abort_lingering``), but a job whose restart strategy gave up, or that refused
to start (no retained checkpoint readable), has no next attempt, and a PostgreSQL transaction
it prepared for a checkpoint that never completed would hold its locks until someone rolled it
back by hand.

Each sink's committer is made here once per subtask, without a writer, and asked to settle
what the old subtasks it answers for left (``Committer.settle_at_job_end``): commit what was
prepared up to the last completed checkpoint (a completed checkpoint named it), roll back the
rest. A sink that fails to settle is logged, naming it: the job's own failure is the error
the user sees.

**Threading:** the JobMaster's thread. **I/O:** the sinks' committers (their connections).
"""

from __future__ import annotations

import logging
import time

from barrierflow.connectors.interfaces.commit_retry import commit_with_retries
from barrierflow.connectors.interfaces.committables import Recovery
from barrierflow.connectors.interfaces.sink import CommitterContext, Sink
from barrierflow.graph.job_graph import JobGraph

log = logging.getLogger("barrierflow.jobmaster")


def settle_sinks(
    job_graph: JobGraph, job_id: str, job_name: str, last_completed: int | None
) -> None:
    """Asks every sink subtask's committer to settle what was left prepared, given the job's
    last completed (or restored) checkpoint."""
    for vertex in job_graph.vertices:
        for node in vertex.chain:
            sink = node.function
            if not isinstance(sink, Sink):
                continue
            where = f"sink {node.uid!r} ({node.name})"
            for subtask in range(vertex.parallelism):
                context = CommitterContext(
                    job_id, job_name, node.uid, subtask, vertex.parallelism, attempt=0
                )
                try:
                    _settle(sink, where, context, last_completed)
                except Exception as e:  # noqa: BLE001 - the job's own error is the one raised
                    log.error(
                        "%s, subtask %d, could not settle what the job left prepared (%s: %s): "
                        "transactions prepared after checkpoint %s may still hold locks; roll "
                        "them back by hand, or restore the job from its last checkpoint, whose "
                        "start does it",
                        where, subtask, type(e).__name__, e, last_completed,
                    )  # fmt: skip


def _settle(sink: Sink, where: str, context: CommitterContext, last_completed: int | None) -> None:
    committer = sink.create_committer(context)
    if committer is None:
        return
    try:
        recovery = Recovery(context.subtask, context.parallelism)
        commit_with_retries(
            lambda: committer.settle_at_job_end(recovery, last_completed),
            sink.commit_retry,
            f"{where}, subtask {context.subtask},",
            "settle what the job left prepared",
            time.sleep,
        )
    finally:
        committer.close()

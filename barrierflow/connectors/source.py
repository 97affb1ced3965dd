"""The source interface, Flink's FLIP-27 shape: a ``SplitEnumerator`` on the JobMaster decides
who reads what (``split_enumerator.py``); a ``SourceReader`` per subtask reads the splits it is
given (``source_reader.py``).

A *split* is a unit of input a reader reads alone (a file, a Kafka partition, a range of
numbers), as a dict of plain MessagePack values; the reader updates its position in it as it
reads. The framework owns everything else: the readers' split positions are the source
operator's list state, dealt out anew on a rescale (``runtime/source_operator.py``); the
enumerator's state goes into the checkpoint, and requests and assignments travel as operator
events (``source_coordinator.py``); a bounded source ends when every reader was told there are
no more splits and has read the ones it had.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from typing import Any

from barrierflow.connectors.job_settings import JobSettings
from barrierflow.connectors.source_coordinator import SourceCoordinator
from barrierflow.connectors.source_reader import (
    SourceReader,
    SourceReaderContext,
    SplitRun,
    tells_splits,
)
from barrierflow.connectors.split_enumerator import Split, SplitEnumerator, SplitEnumeratorContext
from barrierflow.control.operator_coordinator import CoordinatorProvider, OperatorCoordinatorContext
from barrierflow.errors import ConfigurationError

__all__ = [
    "Boundedness",
    "Source",
    "SourceReader",
    "SourceReaderContext",
    "Split",
    "SplitEnumerator",
    "SplitEnumeratorContext",
    "SplitRun",
    "tells_splits",
]


class Boundedness(enum.Enum):
    """Flink's names: whether the source's input ends."""

    BOUNDED = "bounded"
    CONTINUOUS_UNBOUNDED = "continuous-unbounded"


class Source(CoordinatorProvider, ABC):
    """A replayable source: a ``SplitEnumerator`` on the JobMaster (hosted by the operator's
    coordinator) and a ``SourceReader`` per subtask."""

    @property
    def boundedness(self) -> Boundedness:
        return Boundedness.BOUNDED

    def is_bounded(self) -> bool:
        return self.boundedness is Boundedness.BOUNDED

    @abstractmethod
    def create_reader(self, context: SourceReaderContext) -> SourceReader: ...

    @abstractmethod
    def create_enumerator(self, context: SplitEnumeratorContext) -> SplitEnumerator:
        """The enumerator of a job that starts afresh."""

    @abstractmethod
    def restore_enumerator(
        self, context: SplitEnumeratorContext, state: dict[str, Any]
    ) -> SplitEnumerator:
        """The enumerator as its ``snapshot_state`` left it."""

    def enumerator_after_earlier_version(self, context: SplitEnumeratorContext) -> SplitEnumerator:
        """The enumerator of a job restored from a checkpoint an earlier barrierflow took,
        before sources had enumerators, whose readers' state held their splits. A source that
        cannot go on from that alone refuses rather than read its input again."""
        raise ConfigurationError(
            f"source {context.operator_uid!r} ({type(self).__name__}): the checkpoint being "
            "restored was taken by an earlier barrierflow, before sources had split enumerators, "
            "and this source's positions cannot be carried over from it (its input would be "
            "read again). Restore with this source under a new uid and "
            "--allow-non-restored-state (-n), or start the job afresh."
        )

    def check(self, job: JobSettings) -> None:
        """On the driver, before the job is submitted: refuse bad configuration (a broker
        unreachable, a path missing) with a ``ConfigurationError``, at once rather than in a
        restart loop on the executors."""

    def create_coordinator(self, context: OperatorCoordinatorContext) -> SourceCoordinator:
        return SourceCoordinator(self, context)

"""The source interface, Flink's FLIP-27 shape: a ``SplitEnumerator`` on the JobMaster decides
who reads what (``split_enumerator.py``); a ``SourceReader`` per subtask reads the splits it is
given (``source_reader.py``). Performs no I/O.

A *split* is a unit of input a reader reads alone (a file, a Kafka partition, a range of
numbers); the reader keeps its position in it as it reads. Splits and the enumerator's state
cross processes and checkpoints through the source's versioned codecs (``split_codec``,
``enumerator_state_codec``: ``versioned_codec.py``); a source that declares none has plain
dicts. The framework owns everything else: the readers' split positions are the source
operator's list state, dealt out anew on a rescale (``runtime/source_operator.py``); the
enumerator's state goes into the checkpoint, and requests and assignments travel as operator
events (the JobMaster's ``cluster/coordinators/source_coordinator.py``); a bounded source ends
when every reader was told there are no more splits and has read the ones it had.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from typing import Any

from barrierflow.connectors.interfaces.job_settings import JobSettings
from barrierflow.connectors.interfaces.source_reader import (
    SourceReader,
    SourceReaderContext,
    SplitRun,
    tells_splits,
)
from barrierflow.connectors.interfaces.split_enumerator import (
    Split,
    SplitEnumerator,
    SplitEnumeratorContext,
)
from barrierflow.connectors.interfaces.versioned_codec import PLAIN_VALUES, VersionedCodec

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


class Source(ABC):
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
    def restore_enumerator(self, context: SplitEnumeratorContext, state: Any) -> SplitEnumerator:
        """The enumerator as its ``snapshot_state`` left it (read by
        ``enumerator_state_codec``)."""

    def split_codec(self) -> VersionedCodec[Any]:
        """How this source's splits are kept in checkpoints and sent to its readers. By
        default plain values: a source whose splits are dicts of numbers, strings, bytes and
        lists needs no codec of its own."""
        return PLAIN_VALUES

    def enumerator_state_codec(self) -> VersionedCodec[Any]:
        """How its enumerator's state is kept in checkpoints (plain values by default). Asked
        for version ``BEFORE_ENUMERATORS``, it gives the state to go on from after a restore of
        a checkpoint taken before sources had enumerators, whose readers' state held all their
        splits; a codec that cannot (its source's positions are not all with the readers)
        raises ``UnknownVersion``, and the restore is refused naming the source."""
        return PLAIN_VALUES

    def check(self, job: JobSettings) -> None:  # noqa: B027 - an optional hook
        """On the driver, before the job is submitted: refuse bad configuration (a broker
        unreachable, a path missing) with a ``ConfigurationError``, at once rather than in a
        restart loop on the executors."""

    def job_ended(self) -> None:  # noqa: B027 - an optional hook
        """On the driver, once the job ended (finished, failed for good or canceled): remove
        what the source made for the job alone (``from_spark``'s staged files)."""

"""The operator coordinator of a source: hosts its split enumerator on the JobMaster.

It makes the enumerator afresh or restores it from the checkpoint the attempt restores, tells
it of each reader as its subtask runs (``subtask_ready``), hands it the readers' split
requests, sends its assignments as operator events, and puts its state into every checkpoint
(``connectors/interfaces/split_enumerator.py`` says why nothing is lost or read twice). Splits
and the enumerator's state cross as the source's versioned codecs store them.

**Threading:** the JobMaster's thread, except the enumerator's ``discover`` functions, which
run on a thread of the coordinator's own (``call_periodically``), so that listing a directory
or asking brokers never stalls the JobMaster. **Lifecycle:** ``start``; ``restore_state``
before every attempt (each makes a new enumerator); ``close``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from barrierflow.connectors.interfaces import source_events
from barrierflow.connectors.interfaces.source import Source
from barrierflow.connectors.interfaces.split_enumerator import (
    Split,
    SplitEnumerator,
    SplitEnumeratorContext,
)
from barrierflow.connectors.interfaces.versioned_codec import (
    BEFORE_ENUMERATORS,
    UnknownVersion,
    decode_state,
    encode_state,
    encode_stored,
)
from barrierflow.control.operator_coordinator import OperatorCoordinator, OperatorCoordinatorContext
from barrierflow.errors import ConfigurationError

log = logging.getLogger("barrierflow.connectors")

TICK_S = 0.05  # how often the JobMaster's thread looks for finished discoveries
RETRY_S = 10.0  # a failed discovery is tried again after this at the latest
T = TypeVar("T")


@dataclass
class _Discovery:
    discover: Callable[[], Any]
    handle: Callable[[Any], None]
    interval_s: float
    due_s: float = 0.0  # on the coordinator's clock: the first one at once
    running: Future | None = field(default=None)


class _EnumeratorContext(SplitEnumeratorContext):
    """One enumerator's view of the coordinator; a new one per enumerator, so that what an
    old one scheduled dies with it."""

    def __init__(self, coordinator: SourceCoordinator) -> None:
        self._coordinator = coordinator
        self._context = coordinator.context
        self.readers: set[int] = set()
        self.discoveries: list[_Discovery] = []
        self.closed = False

    @property
    def operator_uid(self) -> str:
        return self._context.operator_uid

    @property
    def parallelism(self) -> int:
        return self._context.parallelism

    def registered_readers(self) -> frozenset[int]:
        return frozenset(self.readers)

    def assign_splits(self, assignment: Mapping[int, list[Split]]) -> None:
        for subtask, splits in assignment.items():
            if subtask not in self.readers:
                raise ValueError(
                    f"{self._coordinator.where}: its enumerator assigned {len(splits)} split(s) "
                    f"to subtask {subtask}, whose reader is not registered (registered: "
                    f"{sorted(self.readers)}); assign only to registered_readers()"
                )
            if splits:
                codec = self._coordinator.split_codec
                try:
                    stored = [encode_stored(codec, s) for s in splits]
                except TypeError as e:
                    where = self._coordinator.where
                    raise TypeError(f"{where}: a split its enumerator assigned: {e}") from None
                self._send(subtask, source_events.AddSplits(stored))

    def signal_no_more_splits(self, subtask: int) -> None:
        self._send(subtask, source_events.NoMoreSplits())

    def _send(self, subtask: int, event: source_events.AddSplits | source_events.NoMoreSplits):
        self._context.send_event(subtask, source_events.encode(event))

    def call_periodically(
        self, discover: Callable[[], T], handle: Callable[[T], None], interval_s: float
    ) -> None:
        self.discoveries.append(_Discovery(discover, handle, interval_s))
        self._coordinator.tick_discoveries()

    def tick(self, now_s: float, run: Executor) -> None:
        """Starts the discoveries that are due; hands those that finished to their handlers
        (one on an executor that runs it at once, at once)."""
        for d in self.discoveries:
            if d.running is None and now_s >= d.due_s and not self.closed:
                d.due_s = now_s + d.interval_s
                d.running = run.submit(d.discover)
            if d.running is not None and d.running.done():
                future, d.running = d.running, None
                error = future.exception()
                if error is not None:
                    d.due_s = min(d.due_s, now_s + RETRY_S)
                    log.warning(
                        "%s: discovery failed, tried again in %.1f s: %s: %s",
                        self._coordinator.where, d.due_s - now_s, type(error).__name__, error,
                    )  # fmt: skip
                elif not self.closed:
                    d.handle(future.result())


class SourceCoordinator(OperatorCoordinator):
    """``discovery_executor``: where ``discover`` functions run (default: a thread of its
    own); ``clock``: seconds, monotonic (tests pass their own)."""

    def __init__(
        self,
        source: Source,
        context: OperatorCoordinatorContext,
        discovery_executor: Executor | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.source = source
        self.context = context
        self.where = f"source {context.operator_uid!r} ({context.operator_name})"
        self.split_codec = source.split_codec()
        self._state_codec = source.enumerator_state_codec()
        self._executor = discovery_executor
        self._own_executor: ThreadPoolExecutor | None = None  # made at the first discovery
        self._clock = clock or time.monotonic
        self._enumerator: SplitEnumerator | None = None
        self._enumerator_context: _EnumeratorContext | None = None
        self._early_requests: set[int] = set()  # requests of readers not registered yet
        self._ticking = False
        self._started = False

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        self._started = True
        if self._enumerator is None:
            self._reset(None)
        else:  # restored before it started
            self._enumerator.start()

    def restore_state(self, checkpoint_id: int | None, state: bytes | None) -> None:
        """A new enumerator: restored from ``state``, or afresh without one (a fresh start, or
        a source the restored snapshot does not know)."""
        self._reset(None if state is None else decode_state(self._state_codec, state))

    def restore_from_earlier_version(self, checkpoint_id: int) -> None:
        """A checkpoint taken before sources had enumerators: its readers' state is all there
        is, and only the source's state codec knows whether it can go on from that alone."""
        try:
            state = self._state_codec.deserialize(BEFORE_ENUMERATORS, b"")
        except UnknownVersion:
            raise ConfigurationError(
                f"{self.where} ({type(self.source).__name__}): the checkpoint being restored was "
                "taken by an earlier barrierflow, before sources had split enumerators, and "
                "this source's positions cannot be carried over from it (its input would be "
                "read again). Restore with this source under a new uid and "
                "--allow-non-restored-state (-n), or start the job afresh."
            ) from None
        self._reset(state)

    def _reset(self, state: Any) -> None:
        """A new enumerator, restored from ``state`` (None: afresh)."""
        self._close_enumerator()
        self._early_requests = set()
        context = self._enumerator_context = _EnumeratorContext(self)
        if state is None:
            self._enumerator = self.source.create_enumerator(context)
        else:
            self._enumerator = self.source.restore_enumerator(context, state)
        if self._started:
            self._enumerator.start()

    def backlog(self) -> float | None:
        """The enumerator's part of the source's backlog (splits not handed out)."""
        return self._enumerator.backlog() if self._enumerator is not None else None

    def close(self) -> None:
        """The job ended: the enumerator closes, and the source removes what it made for it."""
        self._close_enumerator()
        if self._own_executor is not None:
            self._own_executor.shutdown(wait=False, cancel_futures=True)
        self.source.job_ended()

    def _close_enumerator(self) -> None:
        if self._enumerator_context is not None:
            self._enumerator_context.closed = True
        if self._enumerator is not None:
            enumerator, self._enumerator = self._enumerator, None
            enumerator.close()

    # --- readers ------------------------------------------------------------------------------

    def subtask_ready(self, subtask: int) -> None:
        enumerator, context = self._current()
        context.readers.add(subtask)
        enumerator.add_reader(subtask)
        if subtask in self._early_requests:
            self._early_requests.discard(subtask)
            enumerator.handle_split_request(subtask)

    def handle_event(self, subtask: int, payload: bytes) -> None:
        source_events.decode_to_enumerator(payload)  # a split request: the only kind
        enumerator, context = self._current()
        if subtask in context.readers:
            enumerator.handle_split_request(subtask)
        else:  # asked while opening, before its subtask reported running
            self._early_requests.add(subtask)

    # --- checkpoints --------------------------------------------------------------------------

    def snapshot_state(self, checkpoint_id: int) -> bytes:
        enumerator, _ = self._current()
        state = enumerator.snapshot_state(checkpoint_id)
        try:
            return encode_state(self._state_codec, state)
        except TypeError as e:
            raise TypeError(f"{self.where}: its enumerator's state: {e}") from None

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        enumerator, _ = self._current()
        enumerator.notify_checkpoint_complete(checkpoint_id)

    # --- discovery ----------------------------------------------------------------------------

    def tick_discoveries(self) -> None:
        """Looks after the enumerator's discoveries; registers itself on the JobMaster's
        thread once, at the first."""
        if not self._ticking:
            self._ticking = True
            self.context.call_periodically(TICK_S, self.tick_discoveries)
        if self._executor is None:
            self._executor = self._own_executor = ThreadPoolExecutor(
                1, thread_name_prefix=f"discovery-{self.context.operator_uid}"
            )
        if self._enumerator_context is not None:
            self._enumerator_context.tick(self._clock(), self._executor)

    def _current(self) -> tuple[SplitEnumerator, _EnumeratorContext]:
        if self._enumerator is None or self._enumerator_context is None:
            self.start()
        assert self._enumerator is not None and self._enumerator_context is not None
        return self._enumerator, self._enumerator_context

"""How a window operator keeps and fires its windows: the interface of its two paths, one of
which it chooses when it opens (``WindowOperator.open``) and delegates to from then on.

- ``AlignedWindowPath`` (``aligned_window_path.py``), the batch path: event-time tumbling or
  sliding windows with a ``reduce`` or ``aggregate`` and nothing else, on a backend that keeps
  state on the heap; accumulators by window end, outside keyed state between snapshots
  (docs/adr/0021-aligned-window-batch-path.md, docs/adr/0024-window-tables-in-checkpoints.md).
- ``GeneralWindowPath`` (``general_window_path.py``): any assigner, trigger, window function,
  evictor, allowed lateness or late side output, on any backend; windows in keyed state and
  timers, record by record.

Both give the same output in the same order, and each restores what the other checkpointed
(``runtime/window_state.py``).

**Threading:** the task thread only.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from barrierflow.protocol.checkpoint_barrier import CheckpointOptions
from barrierflow.protocol.record_batch import RecordBatch
from barrierflow.runtime.operators.stream_operator import UserFunctionError
from barrierflow.runtime.timer_service import InternalTimerService
from barrierflow.state.backend import KeyedStateBackend
from barrierflow.windowing.window_assigners import AssignerContext, MergingWindowAssigner
from barrierflow.windowing.window_spec import WindowSpec
from barrierflow.windowing.window_triggers import EventTimeTrigger


@dataclass(frozen=True)
class WindowParts:
    """What either path works with, made by the window operator when it opened."""

    spec: WindowSpec
    key_selector: Callable[[Any], Any]
    backend: KeyedStateBackend
    timers: InternalTimerService
    assigner_context: AssignerContext  # its keyed state is the current key's
    failure: Callable[..., UserFunctionError]  # (record, error, key): the error to raise
    late_tag: str | None  # the late data's side output, where someone consumes it

    @property
    def plain(self) -> bool:
        """Event-time windows that do not merge, with the default trigger, one accumulator
        per window, no allowed lateness and no late side output: where the batch path may
        run, and the general path takes its inlined loop."""
        spec = self.spec
        return (
            self.late_tag is None
            and spec.assigner.is_event_time()
            and not isinstance(spec.assigner, MergingWindowAssigner)
            and type(spec.trigger) is EventTimeTrigger
            and not spec.buffers_elements
            and not spec.allowed_lateness_ms
        )


class WindowPath(Protocol):
    """A window operator's path: what the operator hands on, on the task thread."""

    late_records_dropped: int  # served as ``numLateRecordsDropped``

    def process(self, records: list[Any], timestamps: list[int]) -> RecordBatch:
        """A batch of records (``NO_TIMESTAMP`` where a record has none) into their windows;
        the outputs of windows that fired on them."""
        ...

    def advance_watermark(self, watermark: int) -> RecordBatch:
        """Event time advanced to ``watermark``, above the timers' last one: what the windows
        it ends emit, with their last moments as timestamps."""
        ...

    def on_processing_time(self, now_ms: int) -> RecordBatch | None:
        """What processing-time windows and triggers due at ``now_ms`` emit."""
        ...

    def in_keyed_state(self, options: CheckpointOptions) -> AbstractContextManager[None]:
        """While the keyed backend takes the synchronous phase of a snapshot of ``options``:
        what the path keeps outside keyed state is in it (and out again after)."""
        ...

"""The operators of ``connect``: two inputs, one function with a method per input
(``datastream/functions/two_input.py`` adapts CoMap, CoFlatMap and CoProcess functions to
``process_element1`` / ``process_element2``).

The task's ``TwoInputNetworkInput`` hands the batches of input 1 to ``process_batch`` and those
of input 2 to ``process_batch2``; each runs the process operators' loop with its input's
method, so the records carry no tag and need no dispatch. Keyed, each input has its own key
selector (``OperatorSpec.key_selector`` and ``key_selector2``) and both share the operator's
keyed state and timers, as in Flink's ``KeyedCoProcessOperator``.

**Threading:** the task thread only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from barrierflow.protocol.record_batch import RecordBatch
from barrierflow.runtime.operators import (
    KeyedProcessOperator,
    OperatorContext,
    ProcessOperator,
    TwoInputOperator,
)


class CoProcessOperator(TwoInputOperator, ProcessOperator):
    """Two streams connected, not keyed: no state, no timers."""

    def open(self, ctx: OperatorContext) -> None:
        super().open(ctx)
        self._ctx2: Any = self._ctx  # the context of input 2's records

    def process_batch(self, batch: RecordBatch) -> RecordBatch:
        return self._process(batch, self.spec.function.process_element1, self._ctx)

    def process_batch2(self, batch: RecordBatch) -> RecordBatch:
        return self._process(batch, self.spec.function.process_element2, self._ctx2)


class KeyedCoProcessOperator(TwoInputOperator, KeyedProcessOperator):
    """Two keyed streams connected: each record's key by its input's key selector."""

    def open(self, ctx: OperatorContext) -> None:
        super().open(ctx)
        self._ctx2: Any = self._ctx
        # input 2's key selector; a broadcast input has none and sets its own
        self._select2: Callable[[Any], Any] | None = self.spec.key_selector2

    def process_batch(self, batch: RecordBatch) -> RecordBatch:
        fn, select = self.spec.function, self.spec.key_selector
        assert select is not None  # a keyed operator's spec has it
        check = self.key_group_check
        return self._process_keyed(batch, select, fn.process_element1, self._ctx, check)

    def process_batch2(self, batch: RecordBatch) -> RecordBatch:
        fn, select = self.spec.function, self._select2
        assert select is not None  # set at open
        return self._process_keyed(batch, select, fn.process_element2, self._ctx2)

"""Which operator coordinator the JobMaster makes for an operator's function: the function's
own if it provides one (``CoordinatorProvider``), else a source's enumerator host, or a sink's
global committer host when it has a global committer; none for anything else. Decided here, on
the side that hosts them, so that the connectors' interfaces know nothing of the JobMaster.

**Threading:** the JobMaster's thread (a test harness's thread in ``barrierflow/testing/``).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

from barrierflow.cluster.coordinators.global_committer_coordinator import (
    GlobalCommitterCoordinator,
)
from barrierflow.cluster.coordinators.source_coordinator import SourceCoordinator
from barrierflow.connectors.interfaces.sink import Sink
from barrierflow.connectors.interfaces.source import Source
from barrierflow.control.operator_coordinator import (
    CoordinatorProvider,
    OperatorCoordinator,
    OperatorCoordinatorContext,
)


def create_coordinator(
    function: Any,
    context: OperatorCoordinatorContext,
    discovery_executor: Executor | None = None,
    clock: Callable[[], float] | None = None,
) -> OperatorCoordinator | None:
    """The coordinator of the operator whose function is ``function``, or None when it needs
    none. ``discovery_executor`` and ``clock``: a source's (``SourceCoordinator``; a test
    harness runs discoveries at once, on its own clock)."""
    if isinstance(function, CoordinatorProvider):
        return function.create_coordinator(context)
    if isinstance(function, Source):
        return SourceCoordinator(function, context, discovery_executor, clock)
    if isinstance(function, Sink):
        committer = function.create_global_committer()
        if committer is not None:
            return GlobalCommitterCoordinator(
                committer, function.committable_codec(), context, function.commit_retry
            )
    return None

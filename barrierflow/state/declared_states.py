"""The keyed states a job's functions declare, found without running the job: each keyed
function is opened with a runtime context whose state is an empty heap backend that records
every descriptor asked of it. What ``barrierflow run -s PATH --dry-run`` compares with the
state a snapshot holds (``coordination/state_mapping.py``).

No record is processed and nothing is restored; but ``open()`` (and ``close()``) are the
program's own code and do what they do (a function that connects to a server in ``open()``
connects). **Threading:** the caller's thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from barrierflow.datastream.functions.one_input import RuntimeContext
from barrierflow.graph.job_graph import JobGraph
from barrierflow.protocol.key_group_range import KeyGroupRange
from barrierflow.state.backends.hashmap import HeapKeyedStateBackend
from barrierflow.state.descriptors import StateDescriptor
from barrierflow.state.keyed_state_store import KeyedStateStore


@dataclass(frozen=True)
class DeclaredStates:
    """The descriptors an operator's function asked for in ``open()``; ``error``: what
    ``open()`` raised instead, if it did (the states it would have declared are unknown)."""

    descriptors: tuple[StateDescriptor, ...]
    error: str = ""


class _Recorder:
    """A keyed backend that records what is asked of it and hands out empty heap state."""

    def __init__(self, max_parallelism: int) -> None:
        self._heap = HeapKeyedStateBackend(max_parallelism, KeyGroupRange(0, -1))
        self.key_context = self._heap.key_context
        self.descriptors: dict[str, StateDescriptor] = {}

    def get_state(self, descriptor: StateDescriptor) -> Any:
        self.descriptors.setdefault(descriptor.name, descriptor)
        return self._heap.get_state(descriptor)

    def entries(self, name: str) -> Any:
        return iter(())


def declared_states(
    function: Any, name: str, parallelism: int, max_parallelism: int
) -> DeclaredStates:
    """Opens (and closes) ``function`` once, recording the keyed states it declares."""
    recorder = _Recorder(max_parallelism)
    context = RuntimeContext(
        name, 0, parallelism, KeyedStateStore(recorder), max_parallelism=max_parallelism
    )
    try:
        open_function = getattr(function, "open", None)
        if callable(open_function):
            open_function(context)
        close_function = getattr(function, "close", None)
        if callable(close_function):
            close_function()
    except Exception as e:  # noqa: BLE001 - reported, the dry run goes on
        return DeclaredStates(tuple(recorder.descriptors.values()), f"{type(e).__name__}: {e}")
    return DeclaredStates(tuple(recorder.descriptors.values()))


def declared_states_of(job_graph: JobGraph) -> dict[str, DeclaredStates]:
    """What each keyed operator of ``job_graph`` declares, by uid."""
    found = {}
    for vertex in job_graph.vertices:
        for node in vertex.chain:
            if node.key_selector is not None:
                found[node.uid] = declared_states(
                    node.function, node.name, vertex.parallelism, job_graph.max_parallelism
                )
    return found

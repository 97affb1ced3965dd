"""Which operators need the timestamp column of their input, decided from the StreamGraph.

Once a stream has event time, its batches carry a timestamp per record (``RecordBatch``), and
carrying it costs the record path per record: routing it with the records, encoding and
decoding it, setting each record's timestamp on a process function's context. An operator's
input needs the column when the operator reads it or carries it to outputs that need it:

- a timestamp assigner reads it only if it uses the timestamp the record had (its strategy has
  no assigner, or the assigner's code reads its second parameter); it gives its outputs new
  timestamps, so it carries none;
- a window reads it (event-time windows assign records by it);
- a process function (one or two inputs, broadcast) reads it if its per-record method may use
  its context (``ctx.timestamp()``, event-time timers): only a method whose code provably never
  loads the context parameter does not; its outputs carry its inputs' timestamps;
- map, filter, flat_map and async I/O read none and carry them; a sink reads none.

Each job edge and each operator in a chain then drops the column where its consumer does not
need it (``TimestampColumn.DROPPED``), so a job whose functions never look at the timestamps
after a shuffle pays for them only up to it (docs/adr/0015-operator-chain-and-one-record-path.md).
Watermarks are untouched: they flow as before, and timers registered from a context that
reads them fire as before. Performs no I/O.
"""

from __future__ import annotations

import dis
import enum
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from barrierflow.graph.transformation import TransformationKind

if TYPE_CHECKING:
    from barrierflow.graph.stream_graph import StreamGraph, StreamNode


class TimestampColumn(enum.Enum):
    """What an edge, or an operator's input, does with the batches' timestamp column."""

    NEEDED = "needed"  # carried (the safe default)
    DROPPED = "dropped"  # no one downstream reads it: left out


# Operators whose outputs do not carry their inputs' timestamps: an assigner and a window give
# new ones, a sink has no outputs. Every other operator carries them (map, process functions,
# async I/O, ...), so that an operator added later is safe by default.
_GIVES_NEW = frozenset(
    {
        TransformationKind.SOURCE,
        TransformationKind.TIMESTAMPS,
        TransformationKind.WINDOW,
        TransformationKind.SINK,
    }
)
_PROCESSES = frozenset(
    {
        TransformationKind.PROCESS,
        TransformationKind.CO_PROCESS,
        TransformationKind.BROADCAST_PROCESS,
    }
)
# Names through which code can reach its local variables without loading them.
_FRAME_ACCESS = frozenset({"locals", "vars", "eval", "exec", "_getframe", "currentframe"})


def plan_timestamps(graph: StreamGraph) -> None:
    """Sets each node's ``input_timestamps``: consumers first, so that a node knows what the
    nodes it feeds need."""
    needed: dict[int, bool] = {}
    for node in reversed(graph.nodes):  # topological order: consumers after producers
        downstream = any(needed[edge.target.id] for edge in node.out_edges)
        needed[node.id] = _reads(node) or (node.kind not in _GIVES_NEW and downstream)
        node.input_timestamps = (
            TimestampColumn.NEEDED if needed[node.id] else TimestampColumn.DROPPED
        )


def _reads(node: StreamNode) -> bool:
    kind = node.kind
    if kind is TransformationKind.TIMESTAMPS:
        assigner = node.function.timestamp_assigner
        if assigner is None:
            return True  # the strategy keeps the timestamps records had
        extract = getattr(assigner, "extract_timestamp", assigner)
        return may_use_argument(extract, 1)
    if kind is TransformationKind.WINDOW:
        return True
    if kind in _PROCESSES:
        return any(may_use_argument(m, 1) for m in _per_record_methods(node.function))
    return False


def _per_record_methods(function: Any) -> Iterable[Callable[..., Any] | None]:
    """The methods that get each record and its context: a two-input adapter names them
    (``datastream/functions/two_input.py``), a process function has ``process_element``
    (None when it has none)."""
    methods = getattr(function, "per_record_methods", None)
    if callable(methods):
        named: Iterable[Callable[..., Any]] = methods()
        return named
    return (getattr(function, "process_element", None),)


def may_use_argument(fn: Any, index: int) -> bool:
    """Whether calling ``fn`` may use its positional argument ``index`` (0 the first one a
    caller passes). False only when ``fn`` is Python code that never loads that parameter,
    shares it with no inner function and reaches no frame's locals; anything else (a builtin,
    a ``functools.partial``, ``*args``) may."""
    if fn is None:
        return False
    func = getattr(fn, "__func__", fn)  # a bound method's function
    if getattr(func, "__code__", None) is None:
        # a callable object: its class's __call__, if that is Python code
        classes = type(fn).__mro__
        call = next((c.__dict__["__call__"] for c in classes if "__call__" in c.__dict__), None)
        if getattr(call, "__code__", None) is None:
            return True
        func, index = call, index + 1  # a callable object: its __call__, after self
    elif func is not fn:
        index += 1  # a bound method: its function's parameters start with self
    code = func.__code__
    if index >= code.co_argcount:
        return True  # it goes to *args, or the call fails anyway
    name = code.co_varnames[index]
    if name in code.co_cellvars or _FRAME_ACCESS & set(code.co_names):
        return True
    return any(
        "FAST" in instruction.opname and name in _names(instruction.argval)
        for instruction in dis.get_instructions(code)
    )


def _names(argval: Any) -> tuple[Any, ...]:
    return argval if isinstance(argval, tuple) else (argval,)

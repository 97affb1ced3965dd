"""Each operator its own user function, as in PyFlink, where every operator unpickles its own.

A program may hand one function object to two operators (``f = Sum(); a.process(f);
b.process(f)``), and the API may wrap it (a ``KeyedMap`` around a ``MapFunction``, a
``CoProcess``, a window's functions in its ``WindowSpec``). Shipped in one pickle, the
operators of a slot would share the object, and with it what the function keeps in ``self``:
the state handles its ``open`` sets. The second ``open`` would point both operators at its own
keyed state, and the first operator's records would be counted there, under the other's keys.

So an operator whose function reaches an object that an earlier operator's reaches (the
function itself, or what its attributes hold, two levels down: through a wrapper to the
user's object) gets a copy, pickled and unpickled as Spark ships it. An operator that shares
nothing keeps its function as it is: nothing is pickled twice, and a large function (a model)
is not copied for nothing. A copy of an object the two only read (a shared lookup table) costs
its memory once more, and is harmless. Performs no I/O.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from types import BuiltinFunctionType, FunctionType, MethodType, ModuleType
from typing import Any

import cloudpickle

from barrierflow.errors import ConfigurationError
from barrierflow.graph.stream_graph import StreamNode

# What two operators may share without sharing state: values, code, classes and modules.
_NOT_STATE = (
    type(None), bool, int, float, complex, str, bytes, tuple, frozenset, range,
    type, FunctionType, BuiltinFunctionType, ModuleType,
)  # fmt: skip
_DEPTH = 2  # a wrapper, the user's object in it, and what that holds

log = logging.getLogger("barrierflow.jobmaster")


def _reached(obj: Any, depth: int = _DEPTH) -> list[Any]:
    """The program's objects that could hold state among ``obj`` and what its attributes hold,
    ``depth`` levels down. barrierflow's own objects (the API's wrappers, connectors, types)
    are looked through, not counted: two sinks built from one ``FileSink`` share settings, not
    state (each subtask's writer is its own). A bound method stands for its object."""
    if isinstance(obj, MethodType):
        obj = obj.__self__
    if isinstance(obj, _NOT_STATE):
        return []
    found = [] if type(obj).__module__.startswith("barrierflow.") else [obj]
    if depth > 0:
        attributes = list(getattr(obj, "__dict__", {}).values())
        for cls in type(obj).__mro__:
            slots = cls.__dict__.get("__slots__", ())
            for name in (slots,) if isinstance(slots, str) else slots:
                if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                    attributes.append(getattr(obj, name))
        for value in attributes:
            found += _reached(value, depth - 1)
    return found


def own_functions(nodes: Iterable[StreamNode]) -> dict[str, Any]:
    """Each node's function by uid: its own, or a copy where it reaches an object an earlier
    node's function reaches too."""
    seen: set[int] = set()
    functions: dict[str, Any] = {}
    for node in nodes:
        reached = {id(o) for o in _reached(node.function)}  # the nodes hold them all meanwhile
        function = node.function
        if reached & seen:
            try:
                function = cloudpickle.loads(cloudpickle.dumps(function))
            except Exception as e:
                raise ConfigurationError(
                    f"operator {node.uid!r} ({node.name}) shares its function, or an object "
                    "it holds, with an operator before it, and it cannot be copied for it "
                    f"({type(e).__name__}: {e}); give each operator a function of its own"
                ) from e
            log.info(
                "Operator %r (%s) shares an object with an operator before it: it runs a copy "
                "of its function, as in PyFlink",
                node.uid,
                node.name,
            )
        seen |= reached
        functions[node.uid] = function
    return functions

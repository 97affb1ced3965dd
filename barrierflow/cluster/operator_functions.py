"""Each operator its own user function, as in Flink, where every operator deserializes its own.

A program may pass one function object to two operators (``f = Sum(); a.process(f);
b.process(f)``, as PyFlink allows). Shipped as it is, both operators of a slot would run the
same object, and share what it keeps in ``self``: its state handles, set in ``open``. The
second ``open`` then points both operators at its own keyed state, and the first operator's
records are counted there, under the other's keys. PyFlink gives each operator its own
copy, as Flink does.

So an operator whose function reaches an object that an operator before it already uses gets
a copy, pickled and unpickled as Spark ships it. An operator that shares nothing keeps its
function as it is, so a large function (a model, a lookup table) is not copied for nothing.
Performs no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import cloudpickle

from barrierflow.graph.stream_graph import StreamNode
from barrierflow.windowing.window_spec import WindowSpec


def _user_objects(function: Any) -> list[Any]:
    """The objects of a user's that a node's function is or holds: a window's functions sit
    in its ``WindowSpec``."""
    if isinstance(function, WindowSpec):
        candidates = (function.function, function.window_function)
    else:
        candidates = (function,)
    return [o for o in candidates if o is not None]


def own_functions(nodes: Iterable[StreamNode]) -> dict[str, Any]:
    """Each node's function by uid: its own, or a copy where an earlier node uses an object
    of it too."""
    seen: set[int] = set()
    functions: dict[str, Any] = {}
    for node in nodes:
        objects = _user_objects(node.function)
        shared = any(id(o) in seen for o in objects)
        seen.update(id(o) for o in objects)  # the nodes hold them: no id is reused meanwhile
        functions[node.uid] = (
            cloudpickle.loads(cloudpickle.dumps(node.function)) if shared else node.function
        )
    return functions

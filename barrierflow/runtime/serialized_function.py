"""An operator's user function, pickled on its own, as Flink and PyFlink ship each operator's:
every operator that loads it gets an object of its own.

A program may hand one function object to two operators (``f = Sum(); a.process(f);
b.process(f)``), and the API wraps what it is given (a ``KeyedMap`` around a ``MapFunction``, a
``CoProcess``, a window's functions in its ``WindowSpec``...). Shipped inside one pickle, the
operators of a slot would share the object, and with it what the function keeps in ``self``:
the state handles its ``open`` sets. The second ``open`` would point both operators at its own
keyed state. Pickled apart, each operator unpickles its own copy, as in PyFlink. A function
used once costs its pickled bytes beside the object, as in PyFlink.

The bytes are made on the driver from the user's program, once per job (``JobPlan``), after
the connectors were checked (a DataFrame's files staged) and before Spark starts, so that a
function that cannot be pickled is named then; each subtask loads its own as it builds its
operator chain. They are the program's own code, not data read from storage.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import cloudpickle

from barrierflow.errors import ConfigurationError

if TYPE_CHECKING:
    from barrierflow.runtime.operators import OperatorSpec


@dataclass(frozen=True)
class SerializedFunction:
    data: bytes

    def load(self) -> Any:
        return cloudpickle.loads(self.data)


def serialize_function(function: Any, operator: str) -> SerializedFunction:
    """``operator``: how errors name the operator (its uid and name)."""
    try:
        return SerializedFunction(cloudpickle.dumps(function))
    except Exception as e:
        raise ConfigurationError(
            f"operator {operator}: its function cannot be pickled to be shipped to the "
            f"executors ({type(e).__name__}: {e}); create what cannot be pickled (a client, a "
            "lock, a file) in the function's open()"
        ) from e


def with_own_function(spec: OperatorSpec) -> OperatorSpec:
    """``spec`` with its function loaded, an object of this operator's own (a spec made by a
    test harness may carry the object itself)."""
    function = spec.function
    if isinstance(function, SerializedFunction):
        return replace(spec, function=function.load())
    return spec

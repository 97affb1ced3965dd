"""PyFlink's ``pyflink.datastream.state``, at the same path."""

from barrierflow.state import *  # noqa: F403 - every public state name
from barrierflow.state import __all__  # noqa: F401

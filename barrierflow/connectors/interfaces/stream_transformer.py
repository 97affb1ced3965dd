"""PyFlink's preprocessing hook of a sink: a sink may ask for its input stream to be reshaped
before it reaches the sink (``DataStream.sink_to`` applies it). Performs no I/O."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any


class StreamTransformer(ABC):
    """Turns the stream a sink is given into the stream the sink writes."""

    @abstractmethod
    def apply(self, ds: Any) -> Any:
        """The stream to write, built on ``ds`` (a ``DataStream``) with its operators."""


class SupportsPreprocessing(ABC):
    """A sink whose input goes through a ``StreamTransformer`` first (None: as it is)."""

    @abstractmethod
    def get_transformer(self) -> StreamTransformer | None: ...

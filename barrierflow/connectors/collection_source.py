"""``CollectionSource``'s path as ``env.from_collection`` imports it (``builtin/
collection_source.py`` defines it). Performs no I/O."""

from barrierflow.connectors.builtin.collection_source import CollectionSource

__all__ = ["CollectionSource"]

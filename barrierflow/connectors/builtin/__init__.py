"""Internal: sources and sinks that reach no external system: PyFlink's ``NumberSequenceSource``
(ranges of numbers; public in ``barrierflow.datastream.connectors.number_seq``),
``CollectionSource`` (``from_collection``'s values, shipped with the job), both on
``range_reader.py``; ``CollectSink`` (``print()`` and ``execute_and_collect``: records to the
driver) and ``DiscardingSink`` (public in ``barrierflow.datastream.connectors.discarding``)."""

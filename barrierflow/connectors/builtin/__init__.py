"""Sources and sinks that reach no external system: ``SequenceSource`` and PyFlink's
``NumberSequenceSource`` (ranges of numbers), ``CollectionSource`` (``from_collection``'s values,
shipped with the job), both on ``range_reader.py``; ``CollectSink`` (``print()`` and
``execute_and_collect``: records to the driver) and ``DiscardingSink``."""

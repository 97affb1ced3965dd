"""The event timestamp a record carries when nothing assigned it one. Records travel with their
timestamps only once a stream has event time (``WatermarkStrategy``); a record that joins such a
stream without one (a union with a stream that has none) carries this. Performs no I/O."""

NO_TIMESTAMP = -(2**63)

"""Internal: the connector interfaces; their public path is
``barrierflow.datastream.connectors.base``.

The interfaces every connector and the runtime program against, and nothing else: sources
(``source.py``, ``split_enumerator.py``, ``source_reader.py``), sinks (``sink.py``: writer,
committer, global committer), committables in the checkpoint and who commits which after a
rescale (``committables.py``), commit retries (``commit_retry.py``), delivery guarantees, job
settings, the events between readers and enumerators and between writers and global committers,
a sink's preprocessing of its input, and the versioned codecs of splits, enumerator states and
committables (``versioned_codec.py``). Performs no I/O and loads no connector."""

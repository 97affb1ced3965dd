"""Internal: checkpoints as bytes and files: the barrier handler, the storage layout and its
I/O, metadata, the key-group format, channel state and fsck. No public names: a program sets
checkpointing through ``barrierflow.datastream.CheckpointConfig`` (docs/public-api.md)."""

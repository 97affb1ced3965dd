"""Internal: the wire protocol between tasks and the JobMaster: frames, buffers, record batches
and checkpoint options. No public names (docs/public-api.md)."""

"""Internal: the driver side of checkpointing: the checkpoint coordinator (a pure core of
decisions and a thin I/O shell), pending and completed checkpoints, the shared state registry
and state assignment. No public names (docs/public-api.md)."""

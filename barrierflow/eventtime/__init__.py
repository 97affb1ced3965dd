"""Internal: event time; its public names are in ``barrierflow.common`` (``Duration``, ``Time``,
``WatermarkStrategy``).

Event time: durations, watermark strategies and how a task combines the watermarks of its
input channels. Foundation: the runtime, the API and user code import it."""

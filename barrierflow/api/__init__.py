"""Internal: PyFlink's environment and streams behind the public API: they declare a job and build
its plan, nothing more. Their public names are in ``barrierflow.datastream`` and
``barrierflow.common``, PyFlink's paths (docs/public-api.md)."""

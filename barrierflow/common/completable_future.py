"""PyFlink's ``pyflink.common.completable_future``."""

from barrierflow.api.completable_future import CompletableFuture

__all__ = ["CompletableFuture"]

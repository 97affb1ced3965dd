"""PyFlink's ``CompletableFuture``: what a ``JobClient`` call returns, a result to wait for.

PyFlink's wraps a Java future; this one wraps a ``concurrent.futures.Future`` completed by the
thread that runs the job or by the JobMaster's. ``result()`` blocks until it is done.

**Threading:** any thread may wait on it or read it.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Generic, TypeVar

T = TypeVar("T")


class CompletableFuture(Generic[T]):
    def __init__(self, future: Future[T]) -> None:
        self._future = future

    @staticmethod
    def completed(value: T) -> CompletableFuture[T]:
        """A future that is done already, with ``value``."""
        future: Future[T] = Future()
        future.set_result(value)
        return CompletableFuture(future)

    def cancel(self) -> bool:
        """Stops waiting for a result not yet there; the job goes on (``JobClient.cancel``
        cancels a job)."""
        return self._future.cancel()

    def cancelled(self) -> bool:
        return self._future.cancelled()

    def done(self) -> bool:
        return self._future.done()

    def result(self, timeout_s: float | None = None) -> T:
        """Waits (at most ``timeout_s``, else for as long as it takes) and returns the result,
        or raises the error the operation ended with (``TimeoutError`` if still running)."""
        return self._future.result(timeout_s)

    def exception(self, timeout_s: float | None = None) -> BaseException | None:
        """Waits as ``result`` does; the error the operation ended with, or None."""
        return self._future.exception(timeout_s)

    def __repr__(self) -> str:
        state = "done" if self._future.done() else "pending"
        return f"CompletableFuture({state})"

    def __str__(self) -> str:
        return repr(self)

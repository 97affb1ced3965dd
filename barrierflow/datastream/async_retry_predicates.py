"""PyFlink's ``pyflink.datastream.async_retry_predicates``: for a retry strategy's
``result_predicate`` and ``exception_predicate``."""

from barrierflow.datastream.functions.async_io import (
    empty_result_predicate,
    exception_type_predicate,
    has_exception_predicate,
)

__all__ = ["empty_result_predicate", "exception_type_predicate", "has_exception_predicate"]

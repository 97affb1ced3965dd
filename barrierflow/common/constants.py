"""PyFlink's ``pyflink.common.constants``: Java's long bounds, and the name of the main output
(side outputs have a tag of their own). Performs no I/O."""

__all__ = ["DEFAULT_OUTPUT_TAG", "MAX_LONG_VALUE", "MIN_LONG_VALUE"]


MAX_LONG_VALUE = 0x7FFFFFFFFFFFFFFF
MIN_LONG_VALUE = -MAX_LONG_VALUE - 1
DEFAULT_OUTPUT_TAG = ""

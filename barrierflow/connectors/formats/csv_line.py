"""One line of CSV as Flink's CSV format writes it (Jackson's CSV writer, compared with
PyFlink 2.3's bytes): numbers and booleans as they are; a text field quoted when it is longer
than 24 characters, or holds a character below the separator and quote character (space, ``#``,
``+``, ``!``... with the defaults), the escape character or a backslash; a quote inside a
quoted field doubled, and the escape character (when one is set) escaped by itself; a null as
the null literal; the line ends with the line separator. Performs no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from barrierflow.errors import ConfigurationError

_LONGEST_UNQUOTED = 24


def one_char(value: str, what: str) -> str:
    """A separator, quote or escape character: exactly one."""
    if not isinstance(value, str) or len(value) != 1:
        raise ConfigurationError(f"{what} must be a single char, got {value!r}")
    return value


@dataclass(frozen=True)
class CsvLineFormat:
    separator: str = ","
    quote: str | None = '"'
    escape: str | None = None
    line_separator: str = "\n"

    def line(self, fields: list[tuple[str | None, bool]], null_literal: str) -> str:
        """``fields``: each field's text (None for null) and whether it is text (else a number
        or a boolean, never quoted)."""
        return (
            self.separator.join(
                null_literal if text is None else self._field(text) if is_text else text
                for text, is_text in fields
            )
            + self.line_separator
        )

    def _field(self, text: str) -> str:
        if self.quote is None or not self._needs_quotes(text):
            return text
        if self.escape is not None:
            text = text.replace(self.escape, self.escape * 2)
        return self.quote + text.replace(self.quote, self.quote * 2) + self.quote

    def _needs_quotes(self, text: str) -> bool:
        if len(text) > _LONGEST_UNQUOTED:
            return True
        safe = max(ord(self.separator), ord(self.quote or "\0")) + 1
        return any(ord(c) < safe or c == "\\" or c == self.escape for c in text)

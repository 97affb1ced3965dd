"""Windows: the windows themselves, the assigners that put a record into them, and how session
windows merge. Foundation: the window operator, the API and user code import it."""

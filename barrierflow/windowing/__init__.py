"""Internal: windows, the assigners that put a record into them (``window_assigners.py``), their
triggers (``window_triggers.py``), how session windows merge, and the window operator's specs.
The public names are at PyFlink's path, ``barrierflow.datastream.window``.

``assigners`` and ``triggers``, the modules that held the assigners and triggers before, are
deprecated faces: each name warns and gives the public one. ``windows.py`` keeps its path
silently: window keys pickled in state name it. Foundation: the window operator, the API and
user code import it."""

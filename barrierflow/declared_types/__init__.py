"""Internal: declared types (``output_type=``, ``type_info=``, a state descriptor's type) at
work. The types themselves are public at PyFlink's paths, ``barrierflow.common.typeinfo`` and
``barrierflow.common.types``.

Values converted as PyFlink converts them (``conversion.py``), written as PyFlink's Java side
prints them (``java_strings.py``), and held by MessagePack by a short signature
(``msgpack_types.py``). Performs no I/O."""

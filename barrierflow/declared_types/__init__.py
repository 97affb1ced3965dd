"""Declared types (``output_type=``, ``type_info=``, a state descriptor's type) at work: values
converted as PyFlink converts them (``conversion.py``), written as PyFlink's Java side prints
them (``java_strings.py``), and held by MessagePack by a short signature
(``msgpack_types.py``). The types themselves are PyFlink's, at PyFlink's paths
(``common/typeinfo.py``, ``common/types.py``). Performs no I/O."""

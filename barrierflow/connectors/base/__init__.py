"""Internal: what connectors share; connector authors use
``barrierflow.datastream.connectors.base``.

What connectors share and the framework does not need: the reader of splits that keeps their
positions (``split_reader.py``) and the one that reads them one at a time
(``sequential_split_reader.py``), sources whose splits are all known at the start
(``static_split_source.py``, ``static_split_enumerator.py``), codecs of msgspec structs
(``struct_codec.py``, public in ``barrierflow.datastream.connectors.base``), a function mapped
over a batch (``batch_map.py``) and optional client libraries (``optional_dependency.py``)."""

"""The fault campaign's jobs (``bench/chaos.py``): what each run's job program is given
(``spec``), the program ``barrierflow run`` runs (``program``), and per job its input, its
committed output and how to compare it (``catalog``)."""

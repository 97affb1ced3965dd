"""Internal: changing a running job's parallelism. Its public faces are ``JobClient.rescale``
(``barrierflow.common``), the command line's ``rescale`` and the REST API.

The rescaler (one rescale at a time, from a checkpoint taken for it, by the restore path), the
requests it takes from outside the JobMaster's loop, and the policies that ask for rescales on
their own: reactive mode (the parallelism follows the task slots Spark gives the job).
Decisions are pure; the JobMaster applies them."""

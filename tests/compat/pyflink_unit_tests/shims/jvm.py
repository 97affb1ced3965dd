"""The JVM side PyFlink's tests reach, replaced: the gateway refuses (a test that needs it is
excluded before it runs; one that reaches it anyway fails naming it), the environment's Java
configuration is a view over barrierflow's configuration, and a job's failure, which PyFlink
raises as py4j's ``Py4JJavaError``, is barrierflow's ``JobExecutionError``."""

from __future__ import annotations

from typing import Any

from barrierflow.errors import ConfigurationError, JobExecutionError

Py4JJavaError = JobExecutionError

# Keys of Flink's JVM runtime (its RPC system) that PyFlink's tests set; barrierflow has no
# such runtime, so they are accepted and ignored here.
_JVM_RUNTIME_PREFIXES = ("akka.", "pekko.")


class JvmGatewayUnavailable(RuntimeError):
    """A test reached PyFlink's JVM gateway, which barrierflow does not have."""


def get_gateway() -> Any:
    raise JvmGatewayUnavailable(
        "PyFlink's JVM gateway: barrierflow runs no JVM for its jobs' operators"
    )


def _unavailable(*_args: Any, **_kwargs: Any) -> Any:
    return get_gateway()


invoke_java_object_method = add_jars_to_context_class_loader = to_jarray = _unavailable
load_java_class = _unavailable
_find_flink_home = _find_flink_source_root = _unavailable


class JavaObject:  # the type PyFlink's tests check results against; nothing here is one
    pass


class EnvironmentConfiguration:
    """``get_j_env_configuration(env)``: the environment's configuration, set with Java's
    method names (``setString``) or PyFlink's (``set_string``)."""

    def __init__(self, env: Any) -> None:
        self._env = env

    def _set(self, key: str, value: Any) -> EnvironmentConfiguration:
        if str(key).startswith(_JVM_RUNTIME_PREFIXES):
            return self
        try:
            self._env.configure({key: value})
        except ConfigurationError:
            if not str(key).startswith("python."):
                raise
        return self

    setString = setInteger = setBoolean = setLong = _set
    set_string = set_integer = set_boolean = set_float = _set

    def getString(self, key: str, default: Any = None) -> Any:
        return self._env.get_configuration().get_string(key, default)

    get_string = getString


def get_j_env_configuration(env: Any) -> EnvironmentConfiguration:
    return EnvironmentConfiguration(env)

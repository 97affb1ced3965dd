"""A job's Python dependencies: what the environment's methods and Flink's python.* keys
declare, the paths checked before Spark starts (a missing one named), pip's commands, and
what the driver zips and ships for Spark."""

from __future__ import annotations

import zipfile

import pytest

from barrierflow.client.python_dependency_checks import (
    checked_dependencies,
    pip_install_command,
)
from barrierflow.cluster.python_dependencies import (
    PythonArchive,
    PythonDependencies,
    python_dependencies,
)
from barrierflow.cluster.spark.python_dependency_shipping import _py_file
from barrierflow.common import Configuration
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.errors import ConfigurationError


def declared(env: StreamExecutionEnvironment) -> PythonDependencies:
    return python_dependencies(env.get_configuration().get)


def test_the_environment_records_flinks_keys_as_pyflink_does():
    env = StreamExecutionEnvironment()
    assert declared(env).is_empty()
    env.add_python_file("a.py")
    env.add_python_file("libs")
    env.set_python_requirements("requirements.txt", "wheels")
    env.add_python_archive("venv.tar.gz", "venv")
    env.add_python_archive("data.zip")
    env.set_python_executable("venv/bin/python")
    conf = env.get_configuration()
    assert conf.get("python.files") == "a.py,libs"
    assert conf.get("python.requirements") == "requirements.txt#wheels"
    assert conf.get("python.archives") == "venv.tar.gz#venv,data.zip"
    assert declared(env) == PythonDependencies(
        files=("a.py", "libs"),
        requirements="requirements.txt",
        requirements_cache="wheels",
        archives=(PythonArchive("venv.tar.gz", "venv"), PythonArchive("data.zip", "data.zip")),
        executable="venv/bin/python",
    )


def test_the_keys_come_from_any_configuration_and_no_longer_warn(caplog):
    conf = Configuration()
    conf.set_string("python.files", "x.zip, y.py")
    conf.set_string("python.requirements", "r.txt")
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    deps = declared(env)
    assert deps.files == ("x.zip", "y.py")
    assert (deps.requirements, deps.requirements_cache) == ("r.txt", None)
    assert "does nothing" not in caplog.text


def test_paths_are_made_absolute_and_a_missing_one_is_refused_naming_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mod.py").write_text("X = 1\n")
    (tmp_path / "r.txt").write_text("")
    (tmp_path / "wheels").mkdir()
    deps = checked_dependencies(
        PythonDependencies(files=("mod.py",), requirements="r.txt", requirements_cache="wheels")
    )
    assert deps.files == (str(tmp_path / "mod.py"),)
    assert deps.requirements_cache == str(tmp_path / "wheels")
    with pytest.raises(ConfigurationError, match=r"python.files.*'gone.zip' does not exist"):
        checked_dependencies(PythonDependencies(files=("mod.py", "gone.zip")))
    with pytest.raises(ConfigurationError, match=r"python.archives.*'venv.zip'"):
        checked_dependencies(PythonDependencies(archives=(PythonArchive("venv.zip", "v"),)))
    with pytest.raises(ConfigurationError, match=r"requirements cache directory 'mod.py'"):
        checked_dependencies(PythonDependencies(requirements="r.txt", requirements_cache="mod.py"))


def test_pip_installs_offline_from_the_cache_directory_else_from_the_index():
    offline = pip_install_command("r.txt", "/wheels", python="py")
    assert offline[:4] == ["py", "-m", "pip", "install"]
    assert offline[-5:] == ["-r", "r.txt", "--no-index", "--find-links", "/wheels"]
    assert "--no-index" not in pip_install_command("r.txt", None)


def test_a_directory_is_zipped_as_a_package_or_as_modules(tmp_path):
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "core.py").write_text("")
    modules = tmp_path / "libs"
    modules.mkdir()
    (modules / "helper.py").write_text("")
    staging = tmp_path / "staging"
    staging.mkdir()
    with zipfile.ZipFile(_py_file(str(package), str(staging))) as z:
        assert sorted(z.namelist()) == ["mypkg/__init__.py", "mypkg/core.py"]
    with zipfile.ZipFile(_py_file(str(modules), str(staging))) as z:
        assert z.namelist() == ["helper.py"]
    assert _py_file(str(modules / "helper.py"), str(staging)) == str(modules / "helper.py")

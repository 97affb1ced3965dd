"""A job's Python dependencies on a real Spark standalone cluster (a master and two one-core
workers on this machine): its functions import a module that is only in a shipped zip, and a
package that only ``set_python_requirements`` installs, offline, from a directory holding a
wheel this test builds (no network). Both run there: through the environment's methods with
``barrierflow run --master``, and through ``spark-submit --py-files`` with Flink's
``python.requirements`` key; each executor installs the requirements once. Without them
the job fails naming the missing module; a requirement the packages cannot meet fails the job
on the driver, with pip's message, before Spark starts. A packed interpreter in an archive runs
the workers, on the cluster and on the embedded local master, and a data archive is read by
a relative path on the cluster's executors."""

from __future__ import annotations

import base64
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from tests.servers.spark_standalone import standalone_cluster

pytestmark = [pytest.mark.faults]

ROOT = Path(__file__).resolve().parents[2]

JOB = """
import json
import sys

from barrierflow.common import Types
from barrierflow.datastream import StreamExecutionEnvironment

mode, zip_path, requirements, cache, out = sys.argv[1:6]
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
if mode == "api":
    env.add_python_file(zip_path)
    env.set_python_requirements(requirements, cache)
elif mode == "keys":  # the zip comes with spark-submit --py-files
    env.configure({"python.requirements": requirements + "#" + cache})


def shout_twice(x):
    import bfzipmod
    import bfsecretpkg

    return bfsecretpkg.shout(bfzipmod.twice(x)), bfsecretpkg.__file__


numbers = env.from_collection(list(range(1, 9)), type_info=Types.INT())
results = list(numbers.rebalance().map(shout_twice).execute_and_collect())
with open(out, "w") as f:
    json.dump(results, f)
"""


ARCHIVES_JOB = """
import json
import os
import sys

from barrierflow.datastream import StreamExecutionEnvironment

interpreter, data, out = sys.argv[1:4]
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
env.add_python_archive(interpreter, "pyenv")
env.set_python_executable("pyenv/bin/python")
if data != "-":
    env.add_python_archive(data, "data")


def where(x):
    words = None
    if os.path.exists("data/words.txt"):
        with open("data/words.txt") as f:
            words = f.read().strip()
    return x, os.environ.get("BF_FROM_ARCHIVE"), words


results = list(env.from_collection([1, 2, 3, 4]).rebalance().map(where).execute_and_collect())
with open(out, "w") as f:
    json.dump(results, f)
"""


def interpreter_archive(d: Path) -> Path:
    """A tar holding ``bin/python``: this interpreter, started with a mark in its environment
    (a packed virtualenv's interpreter stands for it: the same Python version, as PySpark
    requires)."""
    launcher = d / "pyenv-src" / "bin" / "python"
    launcher.parent.mkdir(parents=True)
    launcher.write_text(f'#!/bin/sh\nBF_FROM_ARCHIVE=yes exec {sys.executable} "$@"\n')
    launcher.chmod(0o755)
    return Path(shutil.make_archive(str(d / "pyenv"), "gztar", d / "pyenv-src"))


def build_wheel(directory: Path, name: str, version: str, source: str) -> Path:
    """A pure-Python wheel made by hand (a zip with its metadata and record)."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": source,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = hashlib.sha256(text.encode()).digest()
        b64 = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
        record.append(f"{path},sha256={b64},{len(text.encode())}")
    files[f"{dist}/RECORD"] = "\n".join([*record, f"{dist}/RECORD,,"]) + "\n"
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
    return wheel


@pytest.fixture
def dependencies(tmp_path):
    cache = tmp_path / "wheels"
    cache.mkdir()
    build_wheel(cache, "bfsecretpkg", "0.1", "def shout(x):\n    return str(x).upper() + '!'\n")
    with zipfile.ZipFile(tmp_path / "mods.zip", "w") as z:
        z.writestr("bfzipmod.py", "def twice(x):\n    return 2 * x\n")
    (tmp_path / "requirements.txt").write_text("bfsecretpkg==0.1\n")
    (tmp_path / "unmet-requirements.txt").write_text("bfsecretpkg==0.2\n")
    (tmp_path / "job.py").write_text(textwrap.dedent(JOB))
    return tmp_path


def _env(cluster, tmp_path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable,
           "SPARK_HOME": cluster.spark_home, "SPARK_LOCAL_IP": "127.0.0.1",
           "BARRIERFLOW_HOME": str(tmp_path / "home")}  # fmt: skip
    env.pop("PYSPARK_GATEWAY_PORT", None)
    return env


def run(cluster, d: Path, name: str, mode: str, requirements: str = "requirements.txt"):
    """``barrierflow run --master`` of the job in ``mode``: its exit status and its log."""
    log = d / f"{name}.log"
    with open(log, "wb") as out:
        done = subprocess.run(
            [sys.executable, "-m", "barrierflow.cli", "run", "--master", cluster.master_url,
             "--conf", "spark.executor.memory=512m", str(d / "job.py"), "--", mode,
             str(d / "mods.zip"), str(d / requirements), str(d / "wheels"),
             str(d / f"{name}.json")],
            env=_env(cluster, d), cwd=d, stdout=out, stderr=subprocess.STDOUT, timeout=300,
        )  # fmt: skip
    return done.returncode, log.read_text()


def check_results(path: Path) -> list[str]:
    results = json.loads(path.read_text())
    assert sorted(r[0] for r in results) == sorted(f"{2 * n}!" for n in range(1, 9))
    return [r[1] for r in results]


def test_a_zip_and_requirements_from_a_wheel_directory_run_on_the_cluster(dependencies):
    d = dependencies
    with standalone_cluster(workers=2) as cluster:
        status, log = run(cluster, d, "api", "api")
        assert status == 0, log[-3000:]
        installed_at = set(check_results(d / "api.json"))
        # the package came from a directory of the job's under each executor's working
        # directory, installed once per executor (two executors, one installation each)
        assert all(cluster.work_dir in p and "barrierflow-python-requirements-" in p
                   for p in installed_at), installed_at  # fmt: skip
        markers = glob.glob(f"{cluster.work_dir}/**/barrierflow-python-requirements-*/INSTALLED",
                            recursive=True)  # fmt: skip
        assert len(markers) == 2, markers

        submit_log = d / "submit.log"
        with open(submit_log, "wb") as out:
            submitted = subprocess.run(
                [os.path.join(cluster.spark_home, "bin", "spark-submit"),
                 "--master", cluster.master_url, "--conf", "spark.executor.memory=512m",
                 "--conf", f"spark.pyspark.python={sys.executable}",
                 "--py-files", str(d / "mods.zip"), str(d / "job.py"), "keys",
                 str(d / "mods.zip"), str(d / "requirements.txt"), str(d / "wheels"),
                 str(d / "keys.json")],
                env=_env(cluster, d), cwd=d, stdout=out, stderr=subprocess.STDOUT, timeout=300,
            )  # fmt: skip
        assert submitted.returncode == 0, submit_log.read_text()[-3000:]
        check_results(d / "keys.json")

        status, log = run(cluster, d, "none", "none")
        assert status != 0
        assert "No module named 'bfzipmod'" in log, log[-3000:]

        # a packed interpreter and a data archive, unpacked in the executors' working directory
        (d / "archives.py").write_text(textwrap.dedent(ARCHIVES_JOB))
        with zipfile.ZipFile(d / "data.zip", "w") as z:
            z.writestr("words.txt", "hello archive")
        with open(d / "archives.log", "wb") as out:
            done = subprocess.run(
                [sys.executable, "-m", "barrierflow.cli", "run", "--master", cluster.master_url,
                 "--conf", "spark.executor.memory=512m", str(d / "archives.py"), "--",
                 str(interpreter_archive(d)), str(d / "data.zip"), str(d / "archives.json")],
                env=_env(cluster, d), cwd=d, stdout=out, stderr=subprocess.STDOUT, timeout=300,
            )  # fmt: skip
        assert done.returncode == 0, (d / "archives.log").read_text()[-3000:]
        results = json.loads((d / "archives.json").read_text())
        assert sorted(map(tuple, results)) == [(n, "yes", "hello archive") for n in (1, 2, 3, 4)]


@pytest.mark.spark
def test_a_packed_interpreter_runs_the_workers_of_the_embedded_local_master(tmp_path):
    (tmp_path / "archives.py").write_text(textwrap.dedent(ARCHIVES_JOB))
    done = subprocess.run(
        [sys.executable, "-m", "barrierflow.cli", "run", str(tmp_path / "archives.py"), "--",
         str(interpreter_archive(tmp_path)), "-", str(tmp_path / "local.json")],
        env={**os.environ, "PYTHONPATH": str(ROOT), "BARRIERFLOW_HOME": str(tmp_path / "home")},
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    results = json.loads((tmp_path / "local.json").read_text())
    assert sorted(map(tuple, results)) == [(n, "yes", None) for n in (1, 2, 3, 4)]


def test_a_requirement_that_cannot_be_met_fails_the_job_before_spark_starts(dependencies):
    d = dependencies
    log = d / "unmet.log"
    with open(log, "wb") as out:
        done = subprocess.run(
            [sys.executable, "-m", "barrierflow.cli", "run", "--master", "spark://127.0.0.1:9",
             str(d / "job.py"), "--", "api", str(d / "mods.zip"),
             str(d / "unmet-requirements.txt"), str(d / "wheels"), str(d / "unmet.json")],
            env={**os.environ, "PYTHONPATH": str(ROOT), "BARRIERFLOW_HOME": str(d / "home")},
            cwd=d, stdout=out, stderr=subprocess.STDOUT, timeout=120,
        )  # fmt: skip
    text = log.read_text()
    assert done.returncode != 0
    assert "No matching distribution found for bfsecretpkg==0.2" in text, text[-3000:]
    assert "unmet-requirements.txt" in text
    assert "Connecting to Spark master" not in text  # refused before Spark was asked


def test_a_python_file_that_does_not_exist_is_refused_naming_it(dependencies):
    d = dependencies
    job = d / "missing.py"
    job.write_text(
        "from barrierflow.datastream import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        f"env.add_python_file({str(d / 'nowhere.zip')!r})\n"
        "env.from_collection([1]).print()\n"
        "env.execute('missing file')\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "barrierflow.cli", "run", "--master", "spark://127.0.0.1:9",
         str(job)],
        env={**os.environ, "PYTHONPATH": str(ROOT), "BARRIERFLOW_HOME": str(d / "home")},
        cwd=d, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    assert "nowhere.zip" in done.stdout + done.stderr
    assert "python.files" in done.stdout + done.stderr
    assert "Connecting to Spark master" not in done.stdout + done.stderr

"""PyFlink's Python dependency methods of ``StreamExecutionEnvironment``: each records one of
Flink's ``python.*`` options, as PyFlink's do; submission checks and ships what they name
(``client/python_dependencies.py``).

Performs no I/O.
"""

from __future__ import annotations

from typing import Any

from barrierflow.cluster.python_dependencies import FILE_DELIMITER, PARAM_DELIMITER


class PythonDependencySettings:
    """Mixed into ``StreamExecutionEnvironment``, whose ``configure`` and configuration these
    use."""

    def configure(self, configuration: Any) -> Any:  # the environment's
        raise NotImplementedError

    def get_configuration(self) -> Any:  # the environment's
        raise NotImplementedError

    def _appended(self, key: str, entry: str) -> None:
        current = self.get_configuration().get(key)
        self.configure({key: entry if current is None else f"{current}{FILE_DELIMITER}{entry}"})

    def add_python_file(self, file_path: str) -> None:
        """A ``.py`` file, a package or plain directory, or a zip that the job's functions
        import on every executor (a directory's modules are importable, as in PyFlink). It
        must exist when the job is submitted."""
        self._appended("python.files", str(file_path))

    def set_python_requirements(
        self, requirements_file_path: str, requirements_cache_dir: str | None = None
    ) -> None:
        """Packages installed for the job's Python workers: once per executor, into a directory
        of the job's added to their ``sys.path``. With ``requirements_cache_dir`` (made with
        ``pip download -d DIR -r requirements.txt``) pip installs from it alone, for a cluster
        without network, as PyFlink does. The requirements are resolved on the driver before
        the job starts: one that cannot be met fails it there, with pip's message."""
        value = str(requirements_file_path)
        if requirements_cache_dir is not None:
            value = f"{value}{PARAM_DELIMITER}{requirements_cache_dir}"
        self.configure({"python.requirements": value})

    def add_python_archive(self, archive_path: str, target_dir: str | None = None) -> None:
        """An archive unpacked into the working directory of every executor, into
        ``target_dir`` (default: the archive's file name): data files, or a packed virtualenv
        or conda environment whose interpreter ``set_python_executable`` names."""
        entry = str(archive_path)
        if target_dir is not None:
            entry = f"{entry}{PARAM_DELIMITER}{target_dir}"
        self._appended("python.archives", entry)

    def set_python_executable(self, python_exec: str) -> None:
        """The interpreter of the job's Python workers: an absolute path on every executor, or
        one relative to their working directory, inside an archive
        (``"venv/bin/python"`` after ``add_python_archive("venv.tar.gz", "venv")``). It must be
        the driver's Python version (PySpark checks it)."""
        self.configure({"python.executable": str(python_exec)})

"""Which Iceberg catalog a job's processes load: a name and properties, as
``pyiceberg.catalog.load_catalog`` takes them, so that it travels to the executors as plain
values (a catalog object holds connections and does not).

**I/O:** ``load`` connects to the catalog (its database, REST service or metastore).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from barrierflow.connectors.base.optional_dependency import require
from barrierflow.errors import ConfigurationError


@dataclass(frozen=True)
class CatalogRef:
    name: str
    properties: dict[str, str] = field(default_factory=dict, hash=False)

    @staticmethod
    def of(catalog: Any, properties: dict[str, str] | None, where: str) -> CatalogRef:
        """``catalog``: a catalog name (with ``properties``, or pyiceberg's configuration:
        ``.pyiceberg.yaml``, ``PYICEBERG_CATALOG__*``) or a pyiceberg catalog object."""
        if isinstance(catalog, str) and catalog:
            return CatalogRef(catalog, dict(properties or {}))
        catalog_type = getattr(require("pyiceberg.catalog", "iceberg", where), "Catalog", None)
        if catalog_type is not None and isinstance(catalog, catalog_type):
            return CatalogRef(catalog.name, {**catalog.properties, **(properties or {})})
        raise ConfigurationError(
            f"{where}: catalog must be a catalog name, as pyiceberg.catalog.load_catalog takes "
            f"it, or a pyiceberg catalog, got {catalog!r:.200}"
        )

    def load(self, where: str) -> Any:
        catalog = require("pyiceberg.catalog", "iceberg", where)
        return catalog.load_catalog(self.name, **self.properties)

    def load_table(self, identifier: str, where: str, catalog: Any = None) -> Any:
        """The table, from ``catalog`` (a loaded catalog of this reference) or a new one."""
        exceptions = require("pyiceberg.exceptions", "iceberg", where)
        try:
            return (catalog or self.load(where)).load_table(identifier)
        except exceptions.NoSuchTableError:
            raise ConfigurationError(
                f"{where}: catalog {self.name!r} has no table {identifier!r}; create it first "
                "(catalog.create_table(identifier, schema))"
            ) from None

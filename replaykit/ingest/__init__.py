"""Ingest: logs of any format and size streamed into the run-aligned Parquet dataset,
incrementally (:func:`ingest`), and a lazy handle on it (:func:`open_dataset`).

Modules: ``_store`` (manifest, lock, generations and the atomic commit), ``_parse`` (sources,
change detection, parsing into sorted staging chunks), ``_merge`` (one tenant's new
generation, range by range), ``_ingest`` (the driver), ``dataset`` (the lazy handle).
See docs/scaling.md, "A semester of logs".
"""

from __future__ import annotations

from ._ingest import IngestReport, ingest, parse_size
from ._parse import CopyWarning
from ._store import IngestError
from .dataset import Dataset, open_dataset

__all__ = ["CopyWarning", "Dataset", "IngestError", "IngestReport", "ingest", "open_dataset",
           "parse_size"]

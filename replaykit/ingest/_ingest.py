""":func:`ingest`: logs of any format and size into the run-aligned dataset, incrementally."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .._base import native
from ..eventlog.dataset import NO_TENANT_QUARANTINE_FILE
from ..io._common import Progress, check_errors_arg, require_tenant
from ..tenancy import PARTITION_PREFIX, partition_dir_name
from . import _store
from ._merge import HEADERS_SCHEMA, QUAR_SCHEMA, TenantJob, merge_tenants
from ._parse import SPAWNS_SCHEMA, Source, classify, discover, parse
from ._store import IngestError, Lock, Manifest

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "kib": 2**10, "m": 10**6, "mb": 10**6,
          "mib": 2**20, "g": 10**9, "gb": 10**9, "gib": 2**30, "t": 10**12, "tb": 10**12,
          "tib": 2**40}


def parse_size(value: str | int) -> int:
    """``"2GB"``, ``"512MiB"``, ``"300m"`` or a number of bytes -> bytes.

    Raises:
        ValueError: not a size.
    """
    if isinstance(value, int):
        if value < 1:
            raise ValueError(f"memory_limit must be positive, got {value}")
        return value
    m = _SIZE.match(str(value))
    if not m or (m.group(2) or "").lower() not in _UNITS:
        raise ValueError(f"memory_limit must be a size such as '2GB' or '512MiB', got {value!r}")
    return int(float(m.group(1)) * _UNITS[(m.group(2) or "").lower()])


@dataclass
class IngestReport:
    """What an :func:`ingest` did.

    Attributes:
        dataset: the dataset folder.
        sources: one dict per input file: ``path`` (the manifest key), ``status`` (``new``,
            ``changed``, ``unchanged``, ``copy``), ``format``, ``input_rows``, ``loaded``,
            ``quarantined``.
        parts_written / parts_kept: part files written / hard-linked unchanged.
        tenants: tenants whose folder got a new generation.
        seconds: wall time.
    """

    dataset: str
    sources: list[dict[str, Any]] = field(default_factory=list)
    parts_written: int = 0
    parts_kept: int = 0
    tenants: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def rows(self) -> int:
        """Rows read by this ingest (loaded + quarantined of the sources it read)."""
        return sum(s["input_rows"] for s in self.sources if s["status"] in ("new", "changed"))

    def to_dict(self) -> dict[str, Any]:
        """The report as plain JSON-ready data (``replaykit ingest --json`` prints it)."""
        counts: dict[str, int] = {}
        for s in self.sources:
            counts[s["status"]] = counts.get(s["status"], 0) + 1
        return {"dataset": self.dataset, "files": counts, "rows": self.rows,
                "parts_written": self.parts_written, "parts_kept": self.parts_kept,
                "tenants": self.tenants, "seconds": round(self.seconds, 3),
                "sources": self.sources}

    def __repr__(self) -> str:
        d = self.to_dict()
        return (f"IngestReport({d['dataset']!r}, files={d['files']}, rows={d['rows']:,}, "
                f"parts_written={self.parts_written}, parts_kept={self.parts_kept})")


def ingest(
    sources: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    into: str | os.PathLike[str],
    *,
    owner: str | None = None,
    memory_limit: str | int = "2GB",
    errors: str = "quarantine",
    progress: bool | None = None,
    partition_events: int = 250_000,
    wait: bool = False,
    engine: str = "local",
    client: Any = None,
    threads: int | None = None,
) -> IngestReport:
    """Stream logs of any supported format into a run-aligned Parquet dataset, incrementally.

    ``sources``: files, folders (searched recursively) or globs, as :func:`replaykit.read_events`
    takes them; each file's format is sniffed. ``into``: the dataset folder, in the
    :meth:`EventLog.to_parquet` layout (``tenant_id=<id>/part-*.parquet``, ``_runs.parquet``,
    ``_quarantine.parquet``), so :func:`replaykit.read_parquet`, :func:`open_dataset` and
    ``engine="dask"`` read it as they read any dataset.

    Incremental: ``into/_ingest_manifest.json`` records each source (its path relative to
    what was passed, size, mtime, digest, rows, loaded and quarantined rows, version).
    Running again reads only new and changed files: a new file adds its rows, a changed or
    grown file replaces exactly the rows it contributed, and only the part files holding the
    runs those rows touch are written again (the others stay the same files). A file with the
    bytes of one already ingested under another path is skipped with a ``CopyWarning``.

    Bounded memory: large pleach JSONL files are read in line-aligned chunks and other
    files in batches (about ``memory_limit / 8`` bytes each), staged to sorted Parquet, then
    merged run range by run range; see docs/scaling.md, "A semester of logs".

    Threads: the readers parse on :func:`replaykit._base.native.threads` threads, a staging
    file is written while the next chunk is parsed, and the merge works on that many run
    ranges (of any tenants) at once, each range sized to its share of the memory limit.
    The dataset does not depend on the thread count (except where the limit is so tight
    that a range's share cuts part files smaller).

    Past one machine: ``engine="dask"`` parses the files (and byte ranges of large pleach
    files) on the Dask workers and partitions the events by run with Dask's own shuffle
    (``dask.dataframe``), then each range is settled and written by a worker; the manifest,
    side files and the commit are written here, with the same atomicity. The dataset is the
    one ``engine="local"`` writes. ``into`` and the sources must be at the same paths on the
    workers (a shared file system). Without ``client`` the current default client is used,
    else Dask's threaded scheduler in this process (which holds the parsed events in memory:
    use a client to spill).

    Safe: the new part files of a tenant are written into a new folder that replaces the old
    one by an atomic rename of the ``tenant_id=<id>`` link, the manifest last. A killed
    ingest leaves the previous dataset readable and the next run finishes or redoes it; a
    second ingest into the same dataset fails with an :class:`IngestError` (or waits for
    the first with ``wait=True``).

    Args:
        owner: the tenant of the formats that record none (as in ``read_events``).
        memory_limit: ``"2GB"``, ``"512MiB"``... or bytes.
        errors: ``"quarantine"`` (bad rows go to the dataset's quarantine, counted per source
            in the manifest) or ``"raise"``.
        progress: a progress bar (files, bytes, rows) on a terminal or in Jupyter (None:
            when interactive).
        partition_events: about how many events one part file holds (never splitting a run).
        wait: wait for another ingest into ``into`` instead of failing.
        engine: ``"local"`` (this process) or ``"dask"`` (see above).
        client: a ``distributed.Client`` for ``engine="dask"`` (default: the current one).
        threads: at most this many threads (None: every core this process may use, capped
            by ``REPLAYKIT_THREADS``).

    Returns:
        an :class:`IngestReport` (``report.to_dict()`` is what ``replaykit ingest --json``
        prints).

    Raises:
        IngestError: another ingest holds the dataset's lock; ``into`` holds a dataset not
            written by ingest.
        MissingTenantError: files of a format without tenants and no ``owner``.
        LoadError: a bad row under ``errors="raise"`` (nothing is changed).
        FileNotFoundError: a source matches nothing.
        ValueError: a bad ``memory_limit`` / ``errors`` / ``partition_events`` / ``engine``.
        SettingError: a bad ``threads`` or ``REPLAYKIT_THREADS``.
        MissingExtraError: ``engine="dask"`` without the ``dask`` extra.

    Example:
        >>> import replaykit as rk
        >>> report = rk.ingest("exports/", "semester/", owner="lab")  # doctest: +SKIP
        >>> rk.open_dataset("semester/").runs_df()  # doctest: +SKIP
    """
    t0 = time.perf_counter()
    check_errors_arg(errors)
    native.threads(threads)  # a bad threads= raises here, before anything is written
    limit = parse_size(memory_limit)
    if partition_events < 1:
        raise ValueError(f"partition_events must be >= 1, got {partition_events}")
    if engine not in ("local", "dask"):
        raise ValueError(f"engine must be 'local' or 'dask', got {engine!r}")
    if engine == "dask":
        from ..engine import require_dask

        require_dask('rk.ingest(..., engine="dask")')
    if owner is not None:
        require_tenant(owner, fmt="toh")
    args = [sources] if isinstance(sources, (str, os.PathLike)) else list(sources)
    root = Path(into)
    root.mkdir(parents=True, exist_ok=True)
    _check_ours(root)
    report = IngestReport(dataset=str(root))
    from ..io.pleach import _system_memory_pool

    # the system allocator returns freed memory to the OS (as read_pleach does while loading)
    with Lock(root, wait=wait), _system_memory_pool(), native.using_threads(threads):
        _store.apply_pending(root)  # a commit a killed ingest left half-done
        manifest = _store.read_manifest(root)
        _store.collect_garbage(root, manifest)
        found = discover(args, into=root, known=manifest.sources)
        classify(found, manifest.sources)
        todo = [s for s in found if s.status in ("new", "changed")]
        touched_meta = [s for s in found if s.status == "unchanged"
                        and manifest.sources[s.key]["mtime_ns"] != s.mtime_ns]
        if todo:
            try:
                _run(root, manifest, todo, owner=owner, errors=errors, limit=limit,
                     partition_events=partition_events, progress=progress, report=report,
                     touched_meta=touched_meta, engine=engine, client=client)
            except BaseException:
                # nothing committed (or a journal the next run finishes): drop what this run
                # staged and wrote beside the dataset
                _store.collect_garbage(root, manifest)
                raise
        elif touched_meta:  # same bytes, new mtime: remember it so the next run skips faster
            for s in touched_meta:
                manifest.sources[s.key]["mtime_ns"] = s.mtime_ns
            _store.write_json_atomic(root / _store.MANIFEST, manifest.to_json())
        final = _store.read_manifest(root)
        for s in found:
            e = final.sources.get(s.key, {})
            report.sources.append({
                "path": s.key, "status": s.status, "format": e.get("format", s.format),
                "input_rows": e.get("input_rows", 0) if s.status != "copy" else 0,
                "loaded": e.get("loaded", 0) if s.status != "copy" else 0,
                "quarantined": e.get("quarantined", 0) if s.status != "copy" else 0})
    report.seconds = time.perf_counter() - t0
    return report


def _check_ours(root: Path) -> None:
    """``into`` must be empty or a dataset written by ingest (its tenant folders are links)."""
    if (root / _store.MANIFEST).exists() or (root / _store.STATE / _store.PENDING).exists():
        return
    plain = [p.name for p in root.iterdir() if p.name.startswith(PARTITION_PREFIX)
             and not p.is_symlink()]
    if plain:
        raise IngestError(
            f"{root} holds a dataset not written by ingest ({plain[0]}/ ...): ingest into an "
            "empty or new folder (rk.ingest reads a to_parquet dataset as a source only via "
            "rk.read_parquet(...).to_parquet(...)); nothing was changed")


def _run(root: Path, manifest: Manifest, todo: list[Source], *, owner: str | None, errors: str,
         limit: int, partition_events: int, progress: bool | None, report: IngestReport,
         touched_meta: list[Source], engine: str, client: Any) -> None:
    staging = root / _store.STATE / f"staging-{os.getpid()}"
    staging.mkdir(parents=True, exist_ok=True)
    chunk_bytes = max(1 << 20, limit // 8)
    total = sum(s.size for s in todo)
    seen = [0, 0]  # rows, files
    bar = Progress(total, desc="ingest", unit="B", enabled=progress)

    def on_bytes(nbytes: int, nrows: int, nfiles: int) -> None:
        seen[0] += nrows
        seen[1] += nfiles
        bar.set_description(f"ingest [{seen[1]}/{len(todo)} files, {seen[0]:,} rows]")
        bar.update(nbytes)

    dask_run = None
    try:
        if engine == "dask":
            from ._dask import DaskIngest

            dask_run = DaskIngest(client)
            staged = dask_run.parse(todo, owner=owner, errors=errors, chunk_bytes=chunk_bytes,
                                    on_bytes=on_bytes)
        else:
            # up to a quarter of the limit stays in memory instead of staging files
            staged = parse(todo, staging, owner=owner, errors=errors, chunk_bytes=chunk_bytes,
                           on_bytes=on_bytes, mem_budget=limit // 4)
    finally:
        bar.close()
    replaced = [s for s in todo if s.status == "changed"]
    replaced_keys = {s.key for s in replaced}
    replaced_names = {n for s in replaced for n in manifest.sources[s.key].get("names", [])}
    # source string -> manifest key (old and new sources)
    name_owner: dict[str, str] = {}
    for k, e in manifest.sources.items():
        for n in e.get("names", []):
            name_owner[n] = k
    for s in todo:
        for n in s.names:
            name_owner[n] = s.key

    def owner_of(name: str) -> str:
        return name_owner.get(name, name_owner.get(name.split(":", 1)[-1], name))

    all_paths = sorted({n.split(":", 1)[1] if ":" in n else n for n in name_owner})
    rank = {p: i for i, p in enumerate(all_paths)}
    keys = _concat(staged.keys, pa.schema([("tenant_id", pa.string()), ("run_id", pa.string()),
                                           ("rows", pa.int64())]))
    if keys.num_rows:
        keys = keys.group_by(["tenant_id", "run_id"], use_threads=False) \
            .aggregate([("rows", "sum")]).rename_columns(["tenant_id", "run_id", "rows"])
    quar = _concat(staged.quarantine, QUAR_SCHEMA)
    headers = _concat(staged.headers, HEADERS_SCHEMA)
    spawns = _concat(staged.spawns, SPAWNS_SCHEMA)
    tenants = set(pc.unique(keys.column("tenant_id")).to_pylist())
    tenants |= {t for t in pc.unique(quar.column("tenant_id")).to_pylist() if t is not None}
    tenants |= set(pc.unique(headers.column("tenant_id")).to_pylist())
    for s in replaced:
        tenants |= set(manifest.sources[s.key].get("tenants", {}))
    tenants.discard("")
    gen = manifest.generation + 1
    # rows per range: partition_events, fewer when the staged rows are wide for the limit
    staged_rows = int(pc.sum(keys.column("rows")).as_py() or 0) if keys.num_rows else 0
    # in memory ~4x the staging files' bytes (and the kept tables' own bytes)
    per_row = max(64, (4 * staged.disk_bytes + staged.mem_bytes or 1) // max(1, staged_rows))
    # the merge works on `workers` ranges at once: each gets its share of the budget
    workers = native.threads()
    target = max(1_000, min(partition_events, limit // 4 // per_row // workers))
    new_manifest = Manifest(sources=json.loads(json.dumps(manifest.sources)),
                            tenants=json.loads(json.dumps(manifest.tenants)), generation=gen)
    links: list[tuple[str, str]] = []
    per_source: dict[str, dict[str, list[int]]] = {}
    jobs: list[tuple[str, dict[str, Any] | None, TenantJob]] = []
    for tenant in sorted(tenants):
        enc = partition_dir_name(tenant)
        info = manifest.tenants.get(enc)
        prev = _store.gen_dir(root, enc, info["gen"]) if info else None
        mine = keys.filter(pc.equal(keys.column("tenant_id"), tenant))
        job = TenantJob(
            tenant=tenant, prev=prev, out=_store.gen_dir(root, enc, gen),
            staged=[(f, *sp[tenant]) for f, sp in zip(staged.files, staged.spans, strict=True)
                    if tenant in sp],
            mem=[(t, *sp[tenant]) for t, sp in zip(staged.tables, staged.table_spans,
                                                   strict=True) if tenant in sp],
            new_keys=mine.select(["run_id", "rows"]),
            new_quarantine=quar.filter(pc.fill_null(pc.equal(quar.column("tenant_id"), tenant),
                                                    False)),
            new_headers=headers.filter(pc.equal(headers.column("tenant_id"), tenant)),
            new_spawns=spawns.filter(pc.equal(spawns.column("tenant_id"), tenant)),
            replaced_names=replaced_names, replaced_keys=replaced_keys, rank=rank,
            owner_of=owner_of, next_part=info["next_part"] if info else 0,
            partition_events=partition_events, target_rows=target)
        if job.out.exists():  # left by a killed run that never committed
            shutil.rmtree(job.out)
        jobs.append((enc, info, job))
    dones: Iterable[dict[str, Any]]
    if dask_run is not None:  # every tenant's ranges at once: one shuffle on the cluster
        try:
            dones = dask_run.merge([j for _, _, j in jobs])
        finally:
            dask_run.release()
    else:
        dones = merge_tenants([j for _, _, j in jobs], workers=workers)
    for (enc, info, job), done in zip(jobs, dones, strict=True):
        tenant = job.tenant
        report.parts_written += len(done["written"])
        report.parts_kept += len(done["linked"])
        report.tenants.append(tenant)
        new_manifest.tenants[enc] = {"tenant": tenant, "gen": gen, "next_part": done["next_part"],
                                     "prev": info["gen"] if info else None}
        links.append((enc, f"{_store.STATE}/t/{enc}/g{gen}"))
        for k, (loaded, quarantined) in done["counts"].items():
            per_source.setdefault(k, {})[tenant] = [loaded, quarantined]
    # the quarantined rows of no known tenant (root side file)
    old_nt = root / _store.NO_TENANT_SIDE
    nt_old = pq.read_table(old_nt).cast(QUAR_SCHEMA) if old_nt.exists() \
        else QUAR_SCHEMA.empty_table()
    rkeys = pa.array(sorted(replaced_keys), pa.string())
    nt = pa.concat_tables([
        nt_old.filter(pc.invert(pc.is_in(nt_old.column("ingest_source"), rkeys))),
        quar.filter(pc.is_null(quar.column("tenant_id")))])
    renames = []
    for name, t in ((_store.NO_TENANT_SIDE, nt),
                    (NO_TENANT_QUARANTINE_FILE, nt.drop_columns(["ingest_source"]))):
        tmp = f"{_store.STATE}/staging-{os.getpid()}/{name}"
        pq.write_table(t, root / tmp)
        renames.append((tmp, name))
    nt_counts: dict[str, int] = {}
    for k in nt.column("ingest_source").to_pylist():
        nt_counts[k] = nt_counts.get(k, 0) + 1
    # the manifest: per source, its counts per tenant (tenants not rebuilt keep theirs)
    version = _version()
    for s in todo:
        new_manifest.sources[s.key] = {
            "size": s.size, "mtime_ns": s.mtime_ns, "digest": s.digest, "format": s.format,
            "names": sorted(s.names), "input_rows": s.input_rows, "tenants": {},
            "replaykit": version, "ingested_at": time.strftime(
                "%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    for s in touched_meta:
        new_manifest.sources[s.key]["mtime_ns"] = s.mtime_ns
    for k, e in new_manifest.sources.items():
        t_counts = e.setdefault("tenants", {})
        for tenant in report.tenants:
            t_counts.pop(tenant, None)
        for tenant, c in per_source.get(k, {}).items():
            t_counts[tenant] = c
        e["loaded"] = sum(c[0] for c in t_counts.values())
        e["quarantined"] = sum(c[1] for c in t_counts.values()) + nt_counts.get(k, 0)
    _store.write_json_atomic(root / _store.STATE / _store.PENDING, {
        "links": links,
        "renames": renames, "manifest": new_manifest.to_json()})
    _store.apply_pending(root)
    _store.collect_garbage(root, new_manifest)


def _concat(tables: list[pa.Table], schema: pa.Schema) -> pa.Table:
    if not tables:
        return schema.empty_table()
    return pa.concat_tables([t.cast(schema) if t.schema != schema else t for t in tables])


@functools.cache
def _version() -> str:
    """replaykit's version (its package metadata; the package itself is above this layer)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("replaykit")
    except PackageNotFoundError:  # pragma: no cover - a source tree without metadata
        return "unknown"

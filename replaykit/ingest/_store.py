"""The on-disk state of an ingested dataset: the manifest, the lock, the tenant generations.

Layout of ``into/`` (readable by :func:`replaykit.read_parquet` and the Dask engine as any
:meth:`EventLog.to_parquet` dataset):

* ``tenant_id=<enc>`` -- a symbolic link to ``_ingest/t/<enc>/g<N>/``, the tenant's current
  *generation*: its run-aligned ``part-<k>.parquet`` files, ``_runs.parquet``,
  ``_quarantine.parquet`` and the ingest's own side tables (``_ingest_*.parquet``, which
  readers skip: they start with ``_``). A new generation hard-links the part files it does not
  change (same inode, same mtime), writes the others, and is swapped in by replacing the link
  (``rename(2)``: atomic), so a reader sees the tenant as it was before or after.
* ``_quarantine_no_tenant.parquet`` -- quarantined rows of no known tenant (replaced by rename).
* ``_ingest_manifest.json`` -- one entry per ingested source; written last.
* ``_ingest/pending.json`` -- the journal of a commit in progress: the swaps still to do and
  the manifest to install. A re-run finishes a commit that was killed half-way.
* ``_ingest.lock`` -- ``fcntl`` lock: one ingest at a time.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ReplayKitError

MANIFEST = "_ingest_manifest.json"
LOCK = "_ingest.lock"
STATE = "_ingest"
PENDING = "pending.json"
NO_TENANT_SIDE = "_ingest_no_tenant.parquet"
MANIFEST_VERSION = 1


class IngestError(ReplayKitError):
    """An ingest could not run: the dataset is locked by another ingest, or ``into`` is not a
    dataset this function wrote. Nothing was changed."""


@dataclass
class Manifest:
    """The manifest: ``sources`` (relative path -> entry) and each tenant's generation."""

    sources: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: folder name -> {"tenant", "gen", "next_part", "prev"}
    tenants: dict[str, dict[str, Any]] = field(default_factory=dict)
    generation: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"version": MANIFEST_VERSION, "generation": self.generation,
                "tenants": self.tenants, "sources": self.sources}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Manifest:
        return cls(sources=dict(data.get("sources", {})), tenants=dict(data.get("tenants", {})),
                   generation=int(data.get("generation", 0)))


def read_manifest(root: Path) -> Manifest:
    f = root / MANIFEST
    if not f.exists():
        return Manifest()
    return Manifest.from_json(json.loads(f.read_text("utf-8")))


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as JSON to ``path``: a temporary file beside it, fsynced, renamed."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    # compact: json's C encoder (``indent`` would use the pure-Python one; a manifest of
    # 10,000 sources is written twice per commit)
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


class Lock:
    """An exclusive ``fcntl.flock`` on ``into/_ingest.lock`` (released when the process dies).

    Raises:
        IngestError: another process holds it (the error names its pid) and ``wait`` is False.
    """

    def __init__(self, root: Path, *, wait: bool = False) -> None:
        self.path = root / LOCK
        self.wait = wait
        self.fd: int | None = None

    def __enter__(self) -> Lock:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if self.wait else fcntl.LOCK_NB))
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                os.close(fd)
                raise
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise IngestError(
                f"{self.path.parent}: another ingest (pid {holder}) is writing this dataset; "
                "wait for it to finish and run again (or pass wait=True / --wait to queue "
                "behind it). Nothing was changed.") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self.fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def tenant_store(root: Path, enc: str) -> Path:
    return root / STATE / "t" / enc


def gen_dir(root: Path, enc: str, gen: int) -> Path:
    return tenant_store(root, enc) / f"g{gen}"


def swap_link(link: Path, target: str) -> None:
    """Point the symbolic link ``link`` at ``target`` atomically (a new link renamed over it)."""
    tmp = link.with_name(f".{link.name}.{os.getpid()}.lnk")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    os.symlink(target, tmp)
    os.replace(tmp, link)


def apply_pending(root: Path) -> bool:
    """Finish a commit a killed ingest left in ``_ingest/pending.json`` (every file it names
    was complete before the journal was written); True when there was one."""
    pending = root / STATE / PENDING
    if not pending.exists():
        return False
    try:
        job = json.loads(pending.read_text("utf-8"))
    except (OSError, ValueError):  # the journal itself was being written: the old state holds
        pending.unlink()
        return False
    for link, target in job["links"]:
        swap_link(root / link, target)
    for tmp, final in job["renames"]:
        if (root / tmp).exists():
            os.replace(root / tmp, root / final)
    fsync_dir(root)
    write_json_atomic(root / MANIFEST, job["manifest"])
    pending.unlink()
    fsync_dir(pending.parent)
    return True


def collect_garbage(root: Path, manifest: Manifest) -> None:
    """Remove generations that are neither current nor the previous one of their tenant (a
    reader that listed the previous one may still be reading it), and staging leftovers."""
    state = root / STATE
    for d in state.glob("staging-*"):
        shutil.rmtree(d, ignore_errors=True)
    if (state / PENDING).exists():  # a commit to finish: its generations are not garbage
        return
    for enc_dir in (state / "t").glob("*") if (state / "t").exists() else []:
        info = manifest.tenants.get(enc_dir.name, {})
        keep = {f"g{info.get('gen')}", f"g{info.get('prev')}"}
        for g in enc_dir.iterdir():
            if g.name not in keep:
                shutil.rmtree(g, ignore_errors=True)
    for tmp in root.glob(".*.tmp"):
        tmp.unlink(missing_ok=True)

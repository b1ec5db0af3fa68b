"""A throwaway PostgreSQL server for tests and benchmarks (Debian's ``postgresql`` package).

:func:`temporary_postgres` runs ``initdb`` and ``pg_ctl`` from ``/usr/lib/postgresql/*/bin``
(or ``PATH``) on a free loopback port in a fresh temporary data directory. PostgreSQL refuses
to run as root, so when we are root the binaries run as an unprivileged user (``postgres``
when the package created it, else ``nobody``) through ``runuser``. The server is stopped and
its directory removed on exit.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PgServer", "find_pg_bindir", "temporary_postgres"]


@dataclass(frozen=True)
class PgServer:
    host: str
    port: int
    superuser: str
    dbname: str

    def uri(self, user: str | None = None, *, options: str | None = None) -> str:
        """A libpq URI for ``user`` (default: the superuser); ``options`` are server settings
        such as ``"-c search_path=public"`` (URL-encoded here)."""
        from urllib.parse import quote

        uri = f"postgresql://{user or self.superuser}@{self.host}:{self.port}/{self.dbname}"
        if options:
            uri += "?options=" + quote(options, safe="")
        return uri


def find_pg_bindir() -> Path | None:
    """Folder holding ``initdb`` and ``pg_ctl`` (newest Debian version first), or None."""
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
        reverse=True,
    )
    for c in candidates:
        if os.access(c, os.X_OK) and os.access(Path(c).with_name("pg_ctl"), os.X_OK):
            return Path(c).parent
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).parent
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run_as_user() -> str | None:
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root and neither 'postgres' nor 'nobody' user exists")


@contextmanager
def temporary_postgres(dbname: str = "replaykit") -> Iterator[PgServer]:
    """Start a PostgreSQL server; yield its address; stop it and delete its files on exit.

    Raises:
        FileNotFoundError: no PostgreSQL binaries are installed.
        RuntimeError: the server did not start (the message holds its log).
    """
    bindir = find_pg_bindir()
    if bindir is None:
        raise FileNotFoundError(
            "PostgreSQL server binaries (initdb, pg_ctl) not found; "
            "install them with: apt-get install -y postgresql"
        )
    user = _run_as_user()
    prefix = ["runuser", "-u", user, "--"] if user else []
    root = Path(tempfile.mkdtemp(prefix="replaykit-pg-"))
    data = root / "data"
    log = root / "server.log"
    if user:
        pw = pwd.getpwnam(user)
        os.chown(root, pw.pw_uid, pw.pw_gid)
    env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
    port = _free_port()
    started = False
    try:
        subprocess.run(
            [
                *prefix,
                str(bindir / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
            ],
            check=True,
            cwd=root,
            env=env,
            capture_output=True,
        )
        opts = (
            f"-h 127.0.0.1 -p {port} -k {root} -c fsync=off -c synchronous_commit=off "
            "-c full_page_writes=off"
        )
        proc = subprocess.run(
            [
                *prefix,
                str(bindir / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(log),
                "-w",
                "-t",
                "60",
                "-o",
                opts,
                "start",
            ],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            text = log.read_text() if log.exists() else ""
            raise RuntimeError(f"PostgreSQL did not start: {proc.stderr}\n{text}")
        started = True
        if (bindir / "createdb").exists():
            subprocess.run(
                [
                    *prefix,
                    str(bindir / "createdb"),
                    "-h",
                    "127.0.0.1",
                    "-p",
                    str(port),
                    "-U",
                    "postgres",
                    dbname,
                ],
                check=True,
                cwd=root,
                env=env,
                capture_output=True,
            )
        else:
            dbname = "postgres"
        yield PgServer(host="127.0.0.1", port=port, superuser="postgres", dbname=dbname)
    finally:
        if started:
            subprocess.run(
                [*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                cwd=root,
                env=env,
                capture_output=True,
            )
        shutil.rmtree(root, ignore_errors=True)

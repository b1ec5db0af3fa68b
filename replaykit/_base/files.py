"""The one rule for the mode of a file or folder replaykit writes: what Python's own
``open(path, "w")`` and ``Path.mkdir()`` would give it, 0o666 / 0o777 less the process umask
(0644 / 0755 under the usual umask 022), whether the command line or a Python call writes it.

Writers that go through a temporary file beside the target (so that an interrupted write
leaves the target as it was) create it here: ``tempfile.mkstemp`` / ``mkdtemp`` would make it
0600 / 0700, and the rename would carry that private mode to the file a person asked for.
"""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path

__all__ = ["new_dir_mode", "new_file_mode", "temp_dir_beside", "temp_file_beside"]

_LOCK = threading.Lock()


def _umask() -> int:
    with _LOCK:  # os.umask can only be read by setting it: set it straight back
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def new_file_mode() -> int:
    """The mode ``open(path, "w")`` gives a new file: ``0o666 & ~umask``.

    >>> oct(new_file_mode())  # doctest: +SKIP
    '0o644'
    """
    return 0o666 & ~_umask()


def new_dir_mode() -> int:
    """The mode ``Path.mkdir()`` gives a new folder: ``0o777 & ~umask``."""
    return 0o777 & ~_umask()


def temp_file_beside(target: Path) -> Path:
    """A new empty temporary file in ``target``'s folder (a hidden name that says what it
    is for), with :func:`new_file_mode`; the caller renames it over ``target`` or removes it.
    """
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, new_file_mode())
    finally:
        os.close(fd)
    return Path(name)


def temp_dir_beside(target: Path) -> Path:
    """A new empty temporary folder in ``target``'s folder, with :func:`new_dir_mode`."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    os.chmod(tmp, new_dir_mode())
    return tmp

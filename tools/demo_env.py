"""The environment `make demo` builds, seen from the dev one: which distributions it installs
and which modules it does not have (the suite runs the notebooks under nbval and the README's
examples with those modules blocked -- tests/conftest.py, tests/test_docs.py -- so a notebook
or README example that needs more than `make demo` installs fails in the suite, not for a
newcomer).

Derived, never listed by hand: the extras are the ones the Makefile's ``.installed-base``
recipe installs, resolved through pyproject.toml's ``[project.optional-dependencies]`` (the
source of truth) and then through the installed distributions' own requirements (markers
evaluated, requested extras followed).

Usage (in a kernel or a script, before the modules in question are imported)::

    import sys; sys.path.insert(0, "tools"); import demo_env; demo_env.block()
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.metadata as md
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def demo_extras(root: Path = ROOT) -> list[str]:
    """The extras `make demo` installs: those of the Makefile's ``.installed-base`` recipe.

    >>> "viz" in demo_extras()
    True
    """
    text = (root / "Makefile").read_text(encoding="utf-8")
    m = re.search(r"^\$\(VENV\)/\.installed-base:.*?\n\t\$\(PIP\) install --quiet -e "
                  r'"\.\[([^\]]*)\]"', text, flags=re.M | re.S)
    if m is None:
        raise ValueError("Makefile: no `pip install -e \".[...]\"` in the .installed-base recipe")
    return [e.strip() for e in m.group(1).split(",")]


def _requirements(extras: list[str], root: Path) -> list[Requirement]:
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    table = project["optional-dependencies"]
    out = [Requirement(r) for r in project["dependencies"]]
    todo, seen = list(extras), set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for spec in table[extra]:
            req = Requirement(spec)
            if canonicalize_name(req.name) == canonicalize_name(project["name"]):
                todo.extend(req.extras)
            else:
                out.append(req)
    return out


def demo_distributions(root: Path = ROOT) -> set[str]:
    """Every distribution (canonical name) `make demo` installs: replaykit's requirements
    with the demo extras, and theirs, transitively (as installed here)."""
    todo = [r for r in _requirements(demo_extras(root), root)
            if r.marker is None or r.marker.evaluate({"extra": ""})]
    found: set[str] = set()
    followed: set[tuple[str, frozenset[str]]] = set()
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        key = (name, frozenset(req.extras))
        if key in followed:
            continue
        followed.add(key)
        found.add(name)
        try:
            reqs = md.requires(req.name) or []
        except md.PackageNotFoundError:
            continue
        for spec in reqs:
            sub = Requirement(spec)
            if sub.marker is None or any(sub.marker.evaluate({"extra": e})
                                         for e in {"", *req.extras}):
                todo.append(sub)
    return found


#: what `python -m venv` itself puts in every venv (pip; setuptools on Python 3.11)
_VENV_OWN = {"pip", "setuptools", "pkg_resources", "_distutils_hack"}


def blocked_modules(root: Path = ROOT) -> set[str]:
    """Top-level modules installed here that no distribution of the demo environment
    provides (dev tools, extras `make demo` leaves out)."""
    demo = demo_distributions(root)
    by_module: dict[str, set[str]] = {}
    for module, dists in md.packages_distributions().items():
        by_module.setdefault(module, set()).update(canonicalize_name(d) for d in dists)
    return {m for m, dists in by_module.items()
            if m.isidentifier() and not dists & demo and m not in sys.stdlib_module_names
            and m not in _VENV_OWN}


class _Hiding:
    """A path entry's finder that does not see the ``hidden`` top-level modules: to every
    import and ``importlib.util.find_spec`` they are not installed."""

    def __init__(self, inner: Any, hidden: set[str]) -> None:
        self.inner, self.hidden = inner, hidden

    def find_spec(self, fullname: str, target: object = None) -> Any:
        if fullname.partition(".")[0] in self.hidden:
            return None
        return self.inner.find_spec(fullname, target)

    def invalidate_caches(self) -> None:
        self.inner.invalidate_caches()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def block(root: Path = ROOT) -> set[str]:
    """Make this interpreter see only what `make demo` installs: any other installed module
    is not found (``import`` raises ModuleNotFoundError, ``find_spec`` gives None), as after
    `make demo`. Modules imported before the call stay. Returns the hidden modules."""
    from importlib._bootstrap_external import _get_supported_file_loaders  # type: ignore

    hidden = blocked_modules(root)
    make = importlib.machinery.FileFinder.path_hook(*_get_supported_file_loaders())

    def hook(path: str) -> _Hiding:
        return _Hiding(make(path), hidden)  # not a folder: ImportError, the next hook

    sys.path_hooks.insert(0, hook)
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()
    return hidden


#: The IPython start-up file :func:`kernel_ipythondir` writes: every kernel started with that
#: folder as ``IPYTHONDIR`` blocks what `make demo` does not install before the first cell, as
#: :func:`block` does, and leaves a marker (``blocked-<pid>``, the number of hidden modules) in
#: the folder; if blocking fails the kernel exits at once (every cell then fails).
_STARTUP = '''\
def _replaykit_demo_env() -> None:
    import os, sys
    from pathlib import Path
    try:
        sys.path.insert(0, {tools!r})
        try:
            import demo_env
        finally:
            sys.path.remove({tools!r})
        hidden = demo_env.block(Path({root!r}))
        assert "pytest" in hidden, "pytest is not blocked"
        Path({marker!r}, f"blocked-{{os.getpid()}}").write_text(str(len(hidden)))
    except BaseException:
        import traceback
        traceback.print_exc()
        os._exit(3)


_replaykit_demo_env()
del _replaykit_demo_env
'''


def kernel_ipythondir(folder: Path, root: Path = ROOT) -> Path:
    """Make ``folder`` an IPython directory whose kernels see only what `make demo` installs
    (with the Makefile and pyproject.toml of ``root``): a kernel started with
    ``IPYTHONDIR=<folder>`` in its environment runs a start-up file that calls :func:`block`
    before any cell. The suite's nbval kernels run the notebooks this way (tests/conftest.py).
    Returns ``folder``.

    >>> import tempfile
    >>> d = kernel_ipythondir(Path(tempfile.mkdtemp()))
    >>> (d / "profile_default" / "startup" / "00-demo-env.py").is_file()
    True
    """
    startup = folder / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-demo-env.py").write_text(
        _STARTUP.format(tools=str(ROOT / "tools"), root=str(root), marker=str(folder)),
        encoding="utf-8")
    return folder


def kernel_markers(folder: Path) -> dict[int, int]:
    """The kernels started with ``folder`` (a :func:`kernel_ipythondir`) that blocked the
    modules: process id -> number of hidden modules."""
    return {int(p.name.partition("-")[2]): int(p.read_text() or 0)
            for p in folder.glob("blocked-*")}

"""The git clean filter of notebooks (tools/setup_git_filters.sh installs it): nbstripout, then
the notebook metadata a kernel or JupyterLab writes on save -- ``language_info`` and the
kernel's own ``kernelspec`` -- replaced by the one kernelspec every notebook here is committed
with. Opening, running and saving a notebook in JupyterLab therefore changes nothing git sees.

Reads a notebook on stdin, writes the committed form on stdout (nbstripout's output format).
Usage (as git runs it): python tools/nbclean.py

Git decides a file is modified when its size differs from the index's record before it asks
the filter, so a notebook saved with outputs would still be listed by ``git status`` (with an
empty ``git diff``). :func:`post_save`, JupyterLab's post-save hook under ``make lab``
(tools/jupyter_lab_config.py), refreshes the index entry of a saved notebook whose committed
form did not change -- and does nothing to a notebook whose cells did change.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import nbformat
from nbstripout._utils import strip_output

#: The kernelspec of every committed notebook (any Python 3 kernel runs them).
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}
#: nbstripout's default metadata keys, plus what a kernel or Lab adds on save.
EXTRA_KEYS = [
    "metadata.signature", "metadata.widgets", "metadata.language_info", "metadata.vscode",
    "cell.metadata.collapsed", "cell.metadata.ExecuteTime", "cell.metadata.execution",
    "cell.metadata.heading_collapsed", "cell.metadata.hidden", "cell.metadata.scrolled",
    "cell.metadata.trusted",
]


def clean(text: str) -> str:
    """The committed form of the notebook ``text``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        nb = nbformat.reads(text, as_version=nbformat.NO_CONVERT)
    nb = strip_output(nb, keep_output=False, keep_count=False, keep_id=True,
                      extra_keys=EXTRA_KEYS)
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        return nbformat.writes(nb) + "\n"


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, check=False)


def post_save(model: dict[str, Any], os_path: str, contents_manager: Any = None,
              **_: Any) -> None:
    """Jupyter's post-save hook: when the saved notebook's committed form equals what the
    index holds (outputs, counts and kernel metadata are all that changed), ``git add`` it so
    that its index entry records the new size and ``git status`` stays clean. Only when this
    checkout's clean filter is this script; never stages a change to a cell."""
    if model.get("type") != "notebook":
        return
    path = Path(os_path)
    top = _git(path.parent, "rev-parse", "--show-toplevel")
    if top.returncode:
        return  # not in a git checkout
    root = Path(os.fsdecode(top.stdout.strip()))
    rel = path.resolve().relative_to(root.resolve()).as_posix()
    filt = _git(root, "config", "filter.nbstripout.clean").stdout.decode()
    staged = _git(root, "show", f":{rel}")
    if "nbclean.py" not in filt or staged.returncode:
        return  # another filter, or a notebook git does not track yet
    if clean(path.read_text(encoding="utf-8")).encode() == staged.stdout:
        _git(root, "add", "--", rel)


def main() -> None:
    text = sys.stdin.read()
    if '"cells"' not in text:  # not a Jupyter notebook (a Zeppelin note): nbstripout's own way
        out = subprocess.run([sys.executable, "-m", "nbstripout", "--keep-id"], input=text,
                             capture_output=True, text=True, check=True)
        sys.stdout.write(out.stdout)
        return
    sys.stdout.write(clean(text))


if __name__ == "__main__":
    main()

"""Saving a notebook in `make lab` changes nothing git sees, whether or not `make test` (or
`make demo`) registered the git filter (issue 42, item 2).

A scratch git checkout holds a committed notebook, the tools `make lab` runs and no git filter
(git's global config shut out too: as a fresh clone where only `make lab` was typed). Lab is
started with tools/lab.py, as `make lab` does; in headless Chromium (Playwright) the notebook
is opened, a cell is run (an execution count and outputs) and the notebook saved with Ctrl+S.
The saved file on disk holds the run; `git status --porcelain` and `git diff` are empty.
Then, with the filter Lab registered, two more notebooks are saved the way Lab's server saves
them (its contents manager as tools/jupyter_lab_config.py configures it, with outputs,
execution counts, the kernel's language_info and kernelspec, widget state, cell timings): git
still sees nothing, a real change to a cell is seen (and not staged by the post-save hook), and
what git would commit is byte for byte what is committed.

Marked slow (tests/conftest.py: a browser and a JupyterLab server). Skips locally without
Chromium, Playwright or JupyterLab; fails when CI=true.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_report_browser import ARGS, _ci, _need_browser

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = "01_quickstart.ipynb"
#: saved through the contents manager Lab's server uses, with the metadata a kernel writes: one
#: with the language_info a kernel adds, one with hidden test cells
OTHERS = ["02_state_and_replay.ipynb", "05_integrity_and_databases.ipynb"]
TOOLS = ["lab.py", "jupyter_lab_config.py", "nbclean.py", "setup_git_filters.sh"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _git(repo: Path, *args: str, env: dict[str, str]) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env=env).stdout


def _checkout(repo: Path, env: dict[str, str]) -> None:
    (repo / "notebooks").mkdir(parents=True)
    (repo / "tools").mkdir()
    for name in (NOTEBOOK, *OTHERS):
        shutil.copy(ROOT / "notebooks" / name, repo / "notebooks" / name)
    for name in TOOLS:
        shutil.copy(ROOT / "tools" / name, repo / "tools" / name)
    for name in (".gitattributes", ".gitignore"):
        shutil.copy(ROOT / name, repo / name)
    (repo / "data").symlink_to(ROOT / "data")
    _git(repo, "init", "-q", env=env)
    for key, value in (("user.email", "t@example.org"), ("user.name", "t")):
        _git(repo, "config", key, value, env=env)
    _git(repo, "add", "-A", env=env)
    _git(repo, "commit", "-q", "-m", "a notebook", env=env)


def _url(proc: subprocess.Popen[str], deadline: float) -> tuple[str, list[str]]:
    assert proc.stdout is not None
    lines: list[str] = []
    while time.monotonic() < deadline and proc.poll() is None:
        ready, _, _ = select.select([proc.stdout], [], [], 1.0)
        if not ready:
            continue
        line = proc.stdout.readline()
        lines.append(line)
        m = re.search(r"open (http://\S+/lab\?token=\w+)", line)
        if m:
            return m.group(1), lines
    raise AssertionError("tools/lab.py printed no URL:\n" + "".join(lines[-40:]))


def test_saving_a_notebook_in_lab_leaves_git_status_clean(tmp_path: Path) -> None:
    try:
        import jupyterlab  # noqa: F401
    except ImportError:
        if _ci():
            pytest.fail("jupyterlab is not installed and CI=true (it is in the dev extra)")
        pytest.skip("jupyterlab not installed")
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    sync_playwright, exe = _need_browser()
    repo = tmp_path / "clone"
    env = dict(os.environ, GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1",
               JUPYTER_CONFIG_DIR=str(tmp_path / "jconfig"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               JUPYTER_DATA_DIR=str(tmp_path / "jdata"), JUPYTER_PLATFORM_DIRS="1",
               PYTHONUNBUFFERED="1")
    _checkout(repo, env)
    committed = (repo / "notebooks" / NOTEBOOK).read_bytes()
    # no filter: a clone where neither `make test` nor `make demo` registered one
    assert "filter.nbstripout" not in _git(repo, "config", "--list", env=env)
    settings = tmp_path / "settings"
    for ext, body in (("apputils-extension/notification",
                       {"fetchNews": "false", "checkForUpdates": False}),):
        f = settings / "@jupyterlab" / f"{ext}.jupyterlab-settings"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(body))
    jupyter = Path(sys.executable).with_name("jupyter")
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(repo / "tools" / "lab.py"), str(jupyter), "--no-browser",
         "--port", str(port), "--LabApp.news_url=", f"--LabApp.user_settings_dir={settings}",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    try:
        url, lines = _url(proc, time.monotonic() + 180)
        assert any("registered the git filter" in line for line in lines), lines
        assert "tools/nbclean.py" in _git(repo, "config", "filter.nbstripout.clean", env=env)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, args=ARGS, headless=True)
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            page.set_default_timeout(90_000)
            page.goto(url.replace("/lab?", f"/lab/tree/{NOTEBOOK}?") + "&reset")
            page.wait_for_selector(".jp-Notebook .jp-CodeCell")
            page.wait_for_function("() => /\\| Idle/.test(document.body.innerText)")
            first = page.locator(".jp-Notebook .jp-CodeCell").first
            first.locator(".jp-InputArea-editor").click()
            page.keyboard.press("Shift+Enter")
            page.wait_for_function(
                "() => /^\\[1\\]:$/.test(document.querySelector("
                "'.jp-CodeCell .jp-InputPrompt').textContent.trim())")
            page.locator(".jp-Notebook").first.click()
            # the server answers the save (PUT) after writing the file and running the
            # post-save hook: git is asked only then
            with page.expect_response(lambda r: r.request.method == "PUT"
                                      and f"/api/contents/{NOTEBOOK}" in r.url) as put:
                page.keyboard.press("Control+s")
            assert put.value.status == 200
            browser.close()
        saved = json.loads((repo / "notebooks" / NOTEBOOK).read_text())
        # Lab wrote the run to disk (an execution count, the kernel's metadata) ...
        assert any(c.get("execution_count") == 1 for c in saved["cells"])
        assert "language_info" in saved["metadata"]
        assert (repo / "notebooks" / NOTEBOOK).read_bytes() != committed
        # ... and git sees nothing
        assert _git(repo, "status", "--porcelain", env=env) == ""
        assert _git(repo, "diff", "HEAD", env=env) == ""
        staged = subprocess.run(["git", "-C", str(repo), "show", f":notebooks/{NOTEBOOK}"],
                                check=True, capture_output=True, env=env).stdout
        assert staged == committed
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    _save_as_lab_server_does(repo, env)


def _save_as_lab_server_does(repo: Path, env: dict[str, str]) -> None:
    """Run and save OTHERS the way JupyterLab does (its contents manager writes the model:
    outputs, execution counts, the kernel's language_info and kernelspec, cell timings) in
    ``repo``, whose filter Lab registered: `git status` stays clean and the committed bytes are
    unchanged; a real change is seen."""
    import asyncio
    import runpy

    import nbformat
    from traitlets.config import Config

    committed = {n: _git_bytes(repo, "show", f"HEAD:notebooks/{n}", env=env) for n in OTHERS}
    assert [n for n in OTHERS if committed[n] != (ROOT / "notebooks" / n).read_bytes()] == []
    cfg = Config()
    runpy.run_path(str(repo / "tools" / "jupyter_lab_config.py"),
                   init_globals={"get_config": lambda: cfg})
    manager = cfg.ServerApp.contents_manager_class(root_dir=str(repo))
    assert manager._post_save_hooks

    class cm:  # the async manager Lab's server uses, called as the server calls it
        get = staticmethod(lambda *a, **k: asyncio.run(manager.get(*a, **k)))
        save = staticmethod(lambda *a, **k: asyncio.run(manager.save(*a, **k)))
    for name in OTHERS:
        model = cm.get(f"notebooks/{name}", content=True)
        nb = model["content"]
        nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)",
                                     "language": "python", "name": "python3"}
        nb.metadata["language_info"] = {
            "codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
            "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
            "pygments_lexer": "ipython3", "version": sys.version.split()[0]}
        nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
        for k, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
            cell.execution_count = k + 1
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="x\n"),
                            nbformat.v4.new_output("execute_result", execution_count=k + 1,
                                                   data={"text/plain": "2"})]
            cell.metadata["execution"] = {"iopub.execute_input": "2026-01-01T00:00:00Z"}
            cell.metadata["scrolled"] = True
        cm.save({"type": "notebook", "format": "json", "content": nb}, f"notebooks/{name}")
        saved = nbformat.read(repo / "notebooks" / name, 4)  # the working copy has outputs
        assert any(c.get("outputs") for c in saved.cells if c.cell_type == "code")
    assert _git(repo, "status", "--porcelain", env=env) == ""
    assert _git(repo, "diff", "HEAD", env=env) == ""
    # a real change to a cell (of the notebook saved in Lab) is still seen, and not staged
    # by the hook
    model = cm.get(f"notebooks/{NOTEBOOK}", content=True)
    model["content"].cells[0].source += "\n\nA new sentence."
    cm.save({"type": "notebook", "format": "json", "content": model["content"]},
            f"notebooks/{NOTEBOOK}")
    assert _git(repo, "status", "--porcelain", env=env) == f" M notebooks/{NOTEBOOK}\n"
    for name in OTHERS:  # what git would commit is byte for byte what is committed
        assert _git_bytes(repo, "show", f":notebooks/{name}", env=env) == committed[name], name


def _git_bytes(repo: Path, *args: str, env: dict[str, str]) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          env=env).stdout

"""Saving a notebook in `make lab` changes nothing git sees, whether or not `make test` (or
`make demo`) registered the git filter (issue 42, item 2).

A scratch git checkout holds a committed notebook, the tools `make lab` runs and no git filter
(git's global config shut out too: as a fresh clone where only `make lab` was typed). Lab is
started with tools/lab.py, as `make lab` does; in headless Chromium (Playwright) the notebook
is opened, a cell is run (an execution count and outputs) and the notebook saved with Ctrl+S.
The saved file on disk holds the run; `git status --porcelain` and `git diff` are empty.

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
    shutil.copy(ROOT / "notebooks" / NOTEBOOK, repo / "notebooks" / NOTEBOOK)
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

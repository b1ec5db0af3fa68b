"""The first hour's setup (issue 19): what `make demo` / `make test` / `make lab` install and
run, the system-package script shared with CI, the nbstripout git filter, and one git-ignored
folder for everything the README writes."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "install_system_deps.sh"


def _extras(spec: str, table: dict[str, list[str]]) -> set[str]:
    """Every requirement name an extras list like "dev,fast" pulls in (recursively)."""
    out: set[str] = set()
    for extra in spec.split(","):
        for req in table[extra.strip()]:
            m = re.match(r"replaykit\[(.*)\]", req)
            if m:
                out |= _extras(m.group(1), table)
            else:
                out.add(re.split(r"[<>=\[; ]", req)[0].lower())
    return out


def _make_n(target: str) -> str:
    if shutil.which("make") is None:
        pytest.skip("make not installed")
    # --no-print-directory: under `make test` the inherited MAKEFLAGS would add
    # "make[1]: Entering/Leaving directory" lines around the commands
    proc = subprocess.run(["make", "--no-print-directory", "-n", "-B", target,
                           "VENV=/nonexistent-venv"], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    return proc.stdout


def test_the_readme_commands_install_jupyterlab_and_make_lab_opens_the_notebooks():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    makefile = (ROOT / "Makefile").read_text()
    specs = re.findall(r'pip install --quiet -e "\.\[([^\]]*)\]"', makefile.replace("$(PIP)",
                                                                                    "pip"))
    assert len(specs) == 2  # the base (make demo, make lab) and the dev (make test) install
    for spec in specs:
        assert "jupyterlab" in _extras(spec, extras), spec
    assert "nbstripout" in _extras("dev", extras)
    env = (ROOT / "environment.yml").read_text()
    conda = re.search(r'-e "\.\[([^\]]*)\]"', env).group(1)  # type: ignore[union-attr]
    assert {"jupyterlab", "nbstripout"} <= _extras(conda, extras)
    assert "tools/lab.py /nonexistent-venv/bin/jupyter" in _make_n("lab")
    import jupyterlab  # installed by the dev extras this suite runs under

    assert jupyterlab.__version__


def test_make_test_installs_system_packages_with_the_script_ci_uses():
    plan = _make_n("test").splitlines()
    deps = next(i for i, ln in enumerate(plan) if "tools/install_system_deps.sh" in ln)
    tests = next(i for i, ln in enumerate(plan) if "-m pytest" in ln)
    assert deps < tests
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci and "apt-get" not in ci  # one script, not two copies


def _stub_bin(tmp_path: Path, *, uid: int, apt: bool) -> Path:
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "ls").symlink_to(shutil.which("ls") or "/bin/ls")
    (bin_ / "id").write_text(f"#!/bin/sh\necho {uid}\n")
    if apt:
        (bin_ / "apt-get").write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/apt.log\n')
    for f in bin_.iterdir():
        if not f.is_symlink():
            f.chmod(0o755)
    return bin_


def _run_script(tmp_path: Path, *, uid: int, apt: bool, **env: str
                ) -> subprocess.CompletedProcess[str]:
    bash = shutil.which("bash") or "/bin/bash"
    clean = {"PATH": str(_stub_bin(tmp_path, uid=uid, apt=apt)),
             "REPLAYKIT_CHROMIUM": str(tmp_path / "no-chromium"), **env}
    return subprocess.run([bash, str(SCRIPT)], capture_output=True, text=True, check=False,
                          env=clean)


def test_system_deps_script_stops_with_the_exact_command_when_it_cannot_install(tmp_path):
    proc = _run_script(tmp_path, uid=1000, apt=True)
    assert proc.returncode == 1
    assert "sudo apt-get install -y chromium" in proc.stderr
    assert "REPLAYKIT_SKIP_SYSTEM_DEPS=1" in proc.stderr
    assert not (tmp_path / "apt.log").exists()  # nothing was run


def test_system_deps_script_installs_what_is_missing_as_root(tmp_path):
    proc = _run_script(tmp_path, uid=0, apt=True)
    assert proc.returncode == 0, proc.stderr
    calls = (tmp_path / "apt.log").read_text().splitlines()
    assert calls[0] == "update -qq"
    assert calls[1].split()[-1] == "chromium" and "install" in calls[1]
    assert "postgresql" not in calls[1] or not Path("/usr/lib/postgresql").exists()


def test_system_deps_script_can_be_told_to_go_on(tmp_path):
    proc = _run_script(tmp_path, uid=1000, apt=False, REPLAYKIT_SKIP_SYSTEM_DEPS="1")
    assert proc.returncode == 0 and "skipping" in proc.stderr and "chromium" in proc.stderr


def test_dev_install_sets_up_the_nbstripout_filter(tmp_path):
    assert "tools/setup_git_filters.sh" in _make_n("/nonexistent-venv/.installed-dev")
    nbstripout = shutil.which("nbstripout", path=str(Path(os.sys.executable).parent))
    if nbstripout is None or shutil.which("git") is None:
        pytest.skip("nbstripout or git not installed")
    import nbformat

    repo = _repo_with_filter_script(tmp_path / "repo")
    git = ["git", "-C", str(repo)]
    for _ in range(2):  # idempotent: a second dev install changes nothing
        subprocess.run(["bash", str(ROOT / "tools" / "setup_git_filters.sh"), nbstripout],
                       cwd=repo, check=True, capture_output=True)
    assert (repo / ".gitattributes").read_text() == (ROOT / ".gitattributes").read_text()
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("1 + 1", metadata={"tags": ["test"],
                                                         "jupyter": {"source_hidden": True}})
    cell.id = "keep-me"
    cell.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "2"})]
    cell.execution_count = 1
    nb.cells = [cell]
    nbformat.write(nb, repo / "n.ipynb")
    subprocess.run([*git, "add", "n.ipynb"], check=True)
    staged = nbformat.reads(subprocess.run([*git, "show", ":n.ipynb"], check=True,
                                           capture_output=True, text=True).stdout, 4)
    c = staged.cells[0]
    assert c.outputs == [] and c.execution_count is None
    assert c.id == "keep-me" and c.metadata["tags"] == ["test"]
    # the working copy keeps its outputs: only what is committed is stripped
    assert nbformat.read(repo / "n.ipynb", 4).cells[0].outputs
    # outside a git checkout the step does nothing and does not fail
    plain = tmp_path / "plain"
    plain.mkdir()
    subprocess.run(["bash", str(ROOT / "tools" / "setup_git_filters.sh"), nbstripout],
                   cwd=plain, check=True, env={**os.environ, "GIT_CEILING_DIRECTORIES":
                                               str(tmp_path)})
    assert not (plain / ".gitattributes").exists()


def _repo_with_filter_script(repo: Path) -> Path:
    """A new git repository holding tools/nbclean.py (the clean filter the script installs is
    named relative to the top of the working tree)."""
    (repo / "tools").mkdir(parents=True)
    shutil.copy(ROOT / "tools" / "nbclean.py", repo / "tools" / "nbclean.py")
    subprocess.run(["git", "-C", str(repo), "init", "-q"], check=True)
    for key, value in (("user.email", "t@example.org"), ("user.name", "t")):
        subprocess.run(["git", "-C", str(repo), "config", key, value], check=True)
    return repo


def test_nbstripout_filter_names_the_checkouts_own_venv_relatively(tmp_path):
    # every `git worktree` of a clone shares its config, and git runs filters from the top
    # of the working tree: a venv inside the checkout is named relative to that top, so
    # each worktree's filter runs its own .venv (an absolute path: the last installer's)
    nbstripout = shutil.which("nbstripout", path=str(Path(os.sys.executable).parent))
    if nbstripout is None or shutil.which("git") is None:
        pytest.skip("nbstripout or git not installed")
    repo = tmp_path / "repo"
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "bin" / "nbstripout").symlink_to(nbstripout)
    subprocess.run(["git", "-C", str(repo), "init", "-q"], check=True)
    subprocess.run(["bash", str(ROOT / "tools" / "setup_git_filters.sh"),
                    ".venv/bin/nbstripout"], cwd=repo, check=True, capture_output=True)

    def config(key: str) -> str:
        return subprocess.run(["git", "-C", str(repo), "config", key], check=True,
                              capture_output=True, text=True).stdout.strip()

    assert config("filter.nbstripout.clean") == ".venv/bin/python tools/nbclean.py"
    assert config("diff.ipynb.textconv") == ".venv/bin/python -m nbstripout -t"


def test_readme_says_how_notebook_outputs_stay_out_of_git():
    text = (ROOT / "README.md").read_text()
    assert "nbstripout" in text and "make lab" in text


def test_readme_examples_write_under_one_ignored_folder():
    text = "\n".join(re.findall(r"```(?:python|bash)\n(.*?)```",
                                (ROOT / "README.md").read_text(), flags=re.S))
    assert "scratch/" in (ROOT / ".gitignore").read_text().splitlines()
    targets = re.findall(r'(?:save_html|to_parquet|generate_cohorts)\("([^"]+)"', text)
    targets += re.findall(r"(?:-o|--output|--quarantine-out) (\S+)", text)
    targets += re.findall(r"replaykit generate \w+ (\S+)", text)
    assert len(targets) >= 8
    assert [t for t in targets if not t.startswith("scratch/")] == []


def test_lab_command_allows_root_takes_lab_args_and_names_its_url():
    import sys

    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from lab import lab_command
    finally:
        sys.path.pop(0)
    cmd, url = lab_command("jupyter", ["--no-browser", "--port", "9123"], is_root=True)
    assert "--allow-root" in cmd and "--no-browser" in cmd and cmd[-1].endswith("notebooks")
    assert url.startswith("http://127.0.0.1:9123/lab?token=")
    token = url.rsplit("=", 1)[1]
    assert f"--IdentityProvider.token={token}" in cmd and "--ServerApp.port_retries=0" in cmd
    cmd, url = lab_command("jupyter", ["--port=9200", "--ip=10.0.0.5"], is_root=False)
    assert "--allow-root" not in cmd and url.startswith("http://10.0.0.5:9200/lab?token=")


def test_make_lab_passes_lab_args_through():
    cmd = _make_n("lab").strip().splitlines()[-1]
    assert cmd.endswith("tools/lab.py /nonexistent-venv/bin/jupyter")
    proc = subprocess.run(["make", "--no-print-directory", "-n", "-B", "lab",
                           "VENV=/nonexistent-venv",
                           "LAB_ARGS=--no-browser --port 8899"], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    assert proc.stdout.strip().splitlines()[-1].endswith(
        "tools/lab.py /nonexistent-venv/bin/jupyter --no-browser --port 8899")


def test_make_demo_and_make_lab_register_the_notebook_filter_too(tmp_path):
    """Not only `make test`: the base install (`make demo`, `make lab`) registers the filter,
    and tools/lab.py registers it at start in a checkout that has none (issue 42, item 2)."""
    assert "tools/setup_git_filters.sh /nonexistent-venv/bin/nbstripout" in _make_n(
        "/nonexistent-venv/.installed-base")
    nbstripout = shutil.which("nbstripout", path=str(Path(os.sys.executable).parent))
    if nbstripout is None or shutil.which("git") is None:
        pytest.skip("nbstripout or git not installed")
    import importlib.util

    repo = _repo_with_filter_script(tmp_path / "repo")
    for name in ("lab.py", "setup_git_filters.sh"):
        shutil.copy(ROOT / "tools" / name, repo / "tools" / name)
    spec = importlib.util.spec_from_file_location("lab_copy", repo / "tools" / "lab.py")
    assert spec is not None and spec.loader is not None
    lab = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lab)
    env_git = ["git", "-C", str(repo), "config", "filter.nbstripout.clean"]
    assert subprocess.run(env_git, capture_output=True, text=True).stdout == ""
    jupyter = str(Path(nbstripout).with_name("jupyter"))
    assert lab.ensure_git_filter(jupyter) is True
    assert "tools/nbclean.py" in subprocess.run(env_git, capture_output=True, text=True).stdout
    assert lab.ensure_git_filter(jupyter) is False  # already there: nothing to do
    assert (repo / ".gitattributes").read_text() == (ROOT / ".gitattributes").read_text()

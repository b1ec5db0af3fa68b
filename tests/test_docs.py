"""Docs stay true to the code."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from _cli_batch import run_batch

ROOT = Path(__file__).resolve().parents[1]


def test_formats_doc_is_generated_from_the_current_schema():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from make_formats_doc import render
    finally:
        sys.path.pop(0)
    assert (ROOT / "docs" / "formats.md").read_text() == render(), (
        "docs/formats.md is stale: run python tools/make_formats_doc.py"
    )


def test_architecture_doc_names_only_real_modules_and_every_module():
    text = (ROOT / "docs" / "architecture.md").read_text()
    named = set(re.findall(r"`(replaykit/[\w/]+(?:\.py)?/?)`", text))
    for path in named:
        assert (ROOT / path.rstrip("/")).exists(), f"architecture.md names missing {path}"
    modules = {
        str(p.relative_to(ROOT))
        for p in (ROOT / "replaykit").glob("*.py")
        if p.name != "py.typed"
    } | {str(p.relative_to(ROOT)) + "/" for p in (ROOT / "replaykit").iterdir() if p.is_dir()
         and not p.name.startswith("__")}
    unnamed = sorted(m for m in modules if m not in named and m.rstrip("/") not in named)
    assert unnamed == [], f"architecture.md does not describe {unnamed}"


def test_architecture_package_tables_are_drawn_from_the_code():
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_architecture",
                                                  ROOT / "tools" / "make_architecture.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    text = (ROOT / "docs" / "architecture.md").read_text()
    assert tool.render(text) == text, (
        "docs/architecture.md's package tables are stale: run python tools/make_architecture.py"
    )
    # every top-level package has its table
    for pkg in (ROOT / "replaykit").iterdir():
        if (pkg / "__init__.py").is_file():
            assert f"### `replaykit/{pkg.name}/`" in text


def test_the_top_floor_has_at_most_twenty_rooms():
    """Issue 45: at most 20 top-level modules and packages (``__init__``, ``py.typed`` and the
    built extension aside), and none of the modules that moved into packages is back."""
    rooms = sorted(p.name for p in (ROOT / "replaykit").iterdir()
                   if not p.name.startswith(("__", "_core")) and p.name != "py.typed"
                   and (p.suffix == ".py" or (p / "__init__.py").is_file()))
    assert len(rooms) <= 20, rooms
    for gone in ("grain.py", "otel_export.py", "_json.py", "_native.py", "_display.py"):
        assert gone not in rooms


def test_readme_shows_the_two_commands_and_links_notebooks():
    text = (ROOT / "README.md").read_text()
    assert "make demo" in text and "make test" in text
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert f"notebooks/{nb.name}" in text, f"README does not link {nb.name}"


def _committed_text(path: Path) -> str:
    """What git holds for ``path`` (the index: what the next commit gets), so that a notebook
    run and saved in JupyterLab, outputs and all, is judged by what the strip filter commits;
    the working copy outside a git checkout or for a file git does not track."""
    import subprocess

    proc = subprocess.run(["git", "-C", str(ROOT), "show", f":{path.relative_to(ROOT)}"],
                          capture_output=True, text=True, check=False)
    return proc.stdout if proc.returncode == 0 else path.read_text(encoding="utf-8")


def test_notebooks_are_committed_without_outputs():
    import nbformat

    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = nbformat.reads(_committed_text(path), as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code, f"{path.name} has no code"
        assert all(not c.get("outputs") for c in code), f"{path.name} carries outputs"
        assert all(c.get("execution_count") is None for c in code), path.name


def test_readme_quickstart_runs(tmp_path):
    """Every Python block of README.md runs, in order, as a reader would paste it, in one
    fresh interpreter that sees only what `make demo` installs (tools/demo_env.py blocks the
    rest: the README's polars, DuckDB and Dask examples raised MissingExtraError there, issue
    42 item 1); the shell commands that use replaykit's console script run on their own in
    another fresh folder meanwhile (they must not depend on the Python blocks), each with the
    exit code its comment states (0 unless it says "exit N"); both write only under the
    git-ignored scratch/."""
    import shlex
    import subprocess

    import pytest

    pytest.importorskip("dask")
    pytest.importorskip("plotly")
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 5
    assert any("to_polars" in b for b in blocks) and any("dask" in b for b in blocks)
    py_dir, sh_dir = tmp_path / "python", tmp_path / "shell"
    for d in (py_dir, sh_dir):
        d.mkdir()
        (d / "data").symlink_to(ROOT / "data")
    script = tmp_path / "readme.py"
    script.write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'tools')!r})\nimport demo_env\n"
        "sys.path.pop(0)\nassert 'pytest' in demo_env.block()\n"
        f"blocks = {blocks!r}\nns = {{}}\n"
        "for i, code in enumerate(blocks):\n"
        "    # a bare expression line shows a value in a notebook: evaluated and dropped here\n"
        "    exec(compile(code, f'README.md python block {i + 1}', 'exec'), ns)\n"
        "print('ran', len(blocks))\n", encoding="utf-8")
    # its output to files: a full pipe would stall it while the shell commands run
    with open(tmp_path / "out.txt", "w") as out_f, open(tmp_path / "err.txt", "w") as err_f:
        python = subprocess.Popen([sys.executable, str(script)], cwd=py_dir,
                                  stdout=out_f, stderr=err_f)
    try:
        shell = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
        commands = [c for block in shell for c in block.replace("\\\n", " ").splitlines()
                    if c.startswith(".venv/bin/replaykit")]
        assert len(commands) >= 12
        used = {shlex.split(c)[1] for c in commands}
        assert {"summary", "verify-chain", "branch", "replay", "diff", "report",
                "generate"} <= used
        exe = Path(sys.executable).with_name("replaykit")
        calls, wants = [], []
        for cmd in commands:
            line, _, comment = cmd.partition("  # ")
            want = re.search(r"exit (\d)", comment)
            calls.append(shlex.split(line)[1:])
            wants.append(int(want.group(1)) if want else 0)
        # the first through the installed console script, as typed; the rest, in order, in
        # one interpreter through the script's own entry (one start-up instead of one each)
        first = subprocess.run([str(exe), *calls[0]], capture_output=True, text=True,
                               check=False, cwd=sh_dir)
        got = [first, *run_batch(calls[1:], timeout=300, cwd=sh_dir)]
        for cmd, want_code, proc in zip(commands, wants, got, strict=True):
            assert proc.returncode == want_code, (cmd, proc.stdout, proc.stderr)
        python.wait(timeout=900)
    finally:
        if python.poll() is None:
            python.kill()
            python.wait()
    out, err = ((tmp_path / f).read_text() for f in ("out.txt", "err.txt"))
    assert python.returncode == 0, err[-3000:]
    assert out.strip().splitlines()[-1] == f"ran {len(blocks)}"
    assert (py_dir / "scratch" / "cohort.html").stat().st_size > 10_000
    assert (sh_dir / "scratch" / "cohort-shell.html").stat().st_size > 10_000
    assert (sh_dir / "scratch" / "replay-fraud" / "events.parquet").exists()
    for d in (py_dir, sh_dir):
        assert sorted(p.name for p in d.iterdir()) == ["data", "scratch"], d


def _owner_as_tenant_id(source: str) -> list[str]:
    """The ``read_events(...)`` calls of ``source`` that pass ``tenant_id=`` without
    ``owner=``: the old way to name the owner of logs that record no tenant, now a TypeError
    (and, on tenant-carrying files, a filter a reader could take for it)."""
    import ast

    hits = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            kws = {k.arg for k in node.keywords}
            if name == "read_events" and "tenant_id" in kws and "owner" not in kws:
                hits.append(ast.get_source_segment(source, node) or name)
    return hits


def test_notebooks_and_docs_name_owners_with_owner_not_tenant_id():
    """The docs' code blocks and the notebooks name owners with ``owner=`` (tenant_id= alone
    on logs that record no tenant is a TypeError; on pleach files it filters)."""
    import ast

    import nbformat

    sources = [(p.name, c.source) for p in sorted((ROOT / "notebooks").glob("*.ipynb"))
               for c in nbformat.read(p, 4).cells if c.cell_type == "code"]
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for block in re.findall(r"```python\n(.*?)```", doc.read_text(), flags=re.S):
            try:
                ast.parse(block)
            except SyntaxError:
                continue  # a fragment (a signature, an elided block), not runnable code
            sources.append((doc.name, block))
    assert len(sources) > 100
    hits = [(name, call) for name, src in sources for call in _owner_as_tenant_id(src)]
    assert hits == []
    assert _owner_as_tenant_id('rk.read_events("data/toh", tenant_id="x")')  # it can fail
    assert not _owner_as_tenant_id('rk.read_events(p, owner="x", tenant_id="x")')

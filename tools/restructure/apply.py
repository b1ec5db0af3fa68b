#!/usr/bin/env python3
"""Issue 32's restructure, re-runnable: packages per concern, no module over 1,000 lines.

Usage (in a clean checkout of main, at any later commit; the built extension copied in)::

    cd /path/to/worktree && /work/main/.venv/bin/python /work/scratch/restructure/apply.py
        [--no-commit] [--no-checks] [--only-moves]

The mapping (what moves where, how split files are cut) is data: mapping.py beside this file.
The script fails loudly (exit 1, a list) when a top-level definition of a split file has no
target, when a module would exceed MAX_LINES, when a split would create an import cycle
between its parts, when an import names something the old module did not define, or when a
module alias is used ambiguously. Commit 1 is the code moved unchanged (plus shims and the
rewritten imports); later commits come from the phases below.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import os
import re
import subprocess
import sys
import tokenize
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import mapping as M  # noqa: E402

MAX_LINES = 1000
ROOT = Path.cwd()
PY = os.environ.get("RK_PYTHON", "/work/main/.venv/bin/python")
BIN = Path(PY).parent
ERRORS: list[str] = []
NOTES: list[str] = []


def fail(msg: str) -> None:
    ERRORS.append(msg)


def die_if_errors(stage: str) -> None:
    if ERRORS:
        print(f"\nFAIL ({stage}): {len(ERRORS)} problem(s):", file=sys.stderr)
        for e in ERRORS:
            print("  - " + e, file=sys.stderr)
        sys.exit(1)


def git(*args: str, check: bool = True) -> str:
    # the notebook filter is configured relative to /work/main (.venv/bin/python): use the venv
    p = subprocess.run(["git", "-c", f"filter.nbstripout.clean={PY} tools/nbclean.py", *args],
                       cwd=ROOT, capture_output=True, text=True)
    if check and p.returncode:
        print(p.stdout + p.stderr, file=sys.stderr)
        raise SystemExit(f"git {' '.join(args)} failed")
    return p.stdout


def modname(path: str) -> str:
    p = path[:-3] if path.endswith(".py") else path
    parts = p.split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def package_of(path: str) -> str:
    """The package a module's relative imports resolve against."""
    m = modname(path)
    return m if path.endswith("__init__.py") else m.rsplit(".", 1)[0]


def resolve(level: int, module: str | None, pkg: str) -> str:
    if not level:
        return module or ""
    parts = pkg.split(".")
    base = parts[: len(parts) - level + 1]
    return ".".join(base + ([module] if module else []))


def relative(target: str, pkg: str) -> tuple[int, str]:
    """``target`` (absolute) as (level, module) relative to package ``pkg``."""
    t, p = target.split("."), pkg.split(".")
    common = 0
    while common < min(len(t), len(p)) and t[common] == p[common]:
        common += 1
    level = len(p) - common + 1
    return level, ".".join(t[common:])


# --------------------------------------------------------------------------- the data model
class Split:
    def __init__(self, old: str, spec: dict):
        self.old = old
        self.oldmod = modname(old)
        self.face = spec.get("face")
        self.docfrom = spec["docfrom"]
        self.targets: dict[str, list[str]] = spec["targets"]
        self.bare = spec.get("bare") or (modname(self.face) if self.face else self.oldmod)
        self.keeps_file = old in self.targets
        self.where: dict[str, str] = {}  # name -> target path
        for t, names in self.targets.items():
            for n in names:
                if n in self.where:
                    fail(f"{old}: {n} is assigned to both {self.where[n]} and {t}")
                self.where[n] = t
        self.defined: dict[str, str] = {}  # every top-level binding -> target path
        self.imported: dict[str, tuple[str, str]] = {}  # bound name -> (abs module, name)
        self.all: list[str] = []


SPLITS = {old: Split(old, spec) for old, spec in M.SPLITS.items()}
MOVES = dict(M.MOVES)
#: old dotted module -> new dotted module, for whole moves
MODMOVE = {modname(o): modname(n) for o, n in MOVES.items()}
SPLITMOD = {s.oldmod: s for s in SPLITS.values()}


def shim_paths() -> dict[str, str]:
    """old path -> shim text needed (old path no longer exists and is not a package)."""
    return {}


# --------------------------------------------------------------------------- segmentation
def top_items(src: str, path: str):
    """(kind, names, start, end, node) per top-level statement; start/end 1-based lines,
    start extended up over the comments and blank lines after the previous statement."""
    tree = ast.parse(src)
    lines = src.splitlines(keepends=True)
    items = []
    prev_end = 0
    body = tree.body
    for i, node in enumerate(body):
        start = node.lineno
        if getattr(node, "decorator_list", None):
            start = min([start] + [d.lineno for d in node.decorator_list])
        end = node.end_lineno
        if i == len(body) - 1:
            end = len(lines)
        kind, names = classify(node, i)
        items.append((kind, names, prev_end + 1, end, node, start))
        prev_end = end
    return tree, lines, items


def classify(node: ast.stmt, index: int) -> tuple[str, list[str]]:
    if index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
            and isinstance(node.value.value, str):
        return "doc", []
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return "import", []
    if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING",
                                                                 "typing.TYPE_CHECKING"):
        if all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in node.body) \
                and not node.orelse:
            return "tc", []
        return "pre", []  # if TYPE_CHECKING: imports / else: run-time stand-ins
    if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test) \
            and "__main__" in ast.unparse(node.test):
        return "def", ["<if __name__ == '__main__'>"]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return "def", [node.name]
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names: list[str] = []
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    names.append(n.id)
        if names and all(isinstance(t, (ast.Name, ast.Tuple)) for t in targets):
            if names == ["__all__"]:
                return "all", names
            return "def", names
        return "anon", names  # subscript / attribute assignment
    return "anon", []


def used_names(node: ast.AST) -> set[str]:
    """Names a statement reads, string annotations included."""
    out: set[str] = set()
    annotations = []
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.arg) and n.annotation is not None:
            annotations.append(n.annotation)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.returns is not None:
            annotations.append(n.returns)
        elif isinstance(n, ast.AnnAssign):
            annotations.append(n.annotation)
    for a in annotations:
        for c in ast.walk(a):
            if isinstance(c, ast.Constant) and isinstance(c.value, str):
                try:
                    sub = ast.parse(c.value, mode="eval")
                except SyntaxError:
                    continue
                out |= {m.id for m in ast.walk(sub) if isinstance(m, ast.Name)}
    # names bound inside a function of the statement (locals, arguments, loop variables)
    # are not the module's, unless declared global: an approximation ruff's F821 checks
    local: set[str] = set()
    for f in ast.walk(node):
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for n in ast.walk(f):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    local.add(n.id)
                elif isinstance(n, ast.arg):
                    local.add(n.arg)
    reads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
             and isinstance(n.ctx, ast.Load)}
    top_stores = set()
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        top_stores = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
                      and isinstance(n.ctx, ast.Store)}
    return (out - (local - globals_declared(node) - top_stores)) | (reads - local)


def globals_declared(node: ast.AST) -> set[str]:
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Global):
            out |= set(n.names)
    return out


# --------------------------------------------------------------------------- import rendering
def render_from(level: int, module: str, aliases: list[tuple[str, str | None]],
                indent: str = "") -> str:
    names = ", ".join(f"{n} as {a}" if a and a != n else n for n, a in aliases)
    mod = "." * level + module
    return f"{indent}from {mod} import {names}"


def render_abs_from(target: str, aliases, new_pkg: str, was_relative: bool,
                    indent: str = "") -> str:
    if was_relative and target.split(".")[0] == new_pkg.split(".")[0]:
        level, mod = relative(target, new_pkg)
        return render_from(level, mod, aliases, indent)
    return render_from(0, target, aliases, indent)


def new_home(absmod: str, name: str, where: str) -> tuple[str, str] | None:
    """Where ``from absmod import name`` goes: (module, name) or None if unchanged.
    A module import (``from replaykit import stamps``) yields (parent, last) of the new one."""
    if absmod in SPLITMOD:
        s = SPLITMOD[absmod]
        if where in M.FACE_IMPORTERS and name in FACE_EXPORTS.get(s.old, {}):
            face = s.face or NEW_FACE_OF.get(s.old)
            if face:
                return modname(face), name
        if name in s.defined:
            return modname(s.defined[name]), name
        if name in s.imported:
            return new_home_of_import(s, name, where)
        if name == "*":
            fail(f"{where}: from {absmod} import * (split module)")
            return None
        fail(f"{where}: imports {name!r} from {absmod}, which does not define it")
        return None
    if absmod in MODMOVE:
        return MODMOVE[absmod], name
    full = f"{absmod}.{name}" if absmod else name
    if full in MODMOVE:
        new = MODMOVE[full]
        return new.rsplit(".", 1)[0], new.rsplit(".", 1)[1]
    return None


def new_home_of_import(s: Split, name: str, where: str) -> tuple[str, str]:
    """A name the split module imported (a re-export): its source when that is replaykit's,
    else the part that uses it."""
    src_mod, src_name = s.imported[name]
    if src_mod.split(".")[0] == "replaykit" and src_name:
        moved = new_home(src_mod, src_name, where)
        return moved if moved else (src_mod, src_name)
    users = [t for t, used in s.part_uses.items() if name in used]
    if users:
        pick = s.docfrom if s.docfrom in users else sorted(users)[0]
        return modname(pick), name
    return src_mod, src_name


# --------------------------------------------------------------------------- the split
def analyse_split(s: Split) -> None:
    src = (ROOT / s.old).read_text()
    s.src = src
    tree, lines, items = top_items(src, s.old)
    s.lines, s.items = lines, items
    s.import_nodes = []
    s.pre_nodes = []
    last_target = None
    s.chunks: dict[str, list[tuple[int, int, ast.stmt]]] = defaultdict(list)
    for kind, names, start, end, node, _ in items:
        if kind == "doc":
            s.doc_node = node
            continue
        if kind in ("import", "tc"):
            s.import_nodes.append((kind, node, start, end))
            continue
        if kind == "pre":
            bound = set()
            for n in ast.walk(node):
                if isinstance(n, ast.alias):
                    bound.add((n.asname or n.name).split(".")[0])
                elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    bound.add(n.id)
            s.pre_nodes.append((node, bound))
            continue
        if kind == "all":
            s.all = list(ast.literal_eval(node.value))
            continue
        if kind == "def":
            tgts = {s.where.get(n) for n in names}
            if None in tgts:
                missing = [n for n in names if n not in s.where]
                fail(f"not assigned a target: {s.old}: {', '.join(missing)} "
                     f"(line {node.lineno}; add to mapping.SPLITS[{s.old!r}])")
                continue
            if len(tgts) > 1:
                fail(f"{s.old}:{node.lineno}: one statement binds {names} to several targets")
                continue
            t = tgts.pop()
        else:  # anonymous: follows the definition above it
            base = names[0] if names else None
            t = last_target if base is None else s.where.get(base, last_target)
            if t is None:
                fail(f"{s.old}:{node.lineno}: statement with no definition above it: "
                     f"{ast.unparse(node)[:60]!r}")
                continue
            NOTES.append(f"{s.old}:{node.lineno}: {ast.unparse(node)[:50]!r} follows into {t}")
        for n in names:
            s.defined[n] = t
        s.chunks[t].append((start, end, node))
        last_target = t
    for n in s.where:
        if n not in s.defined and not n.startswith("<"):
            fail(f"{s.old}: mapping names {n!r}, which the file does not define (stale)")
    # imported names
    pkg = package_of(s.old)
    for kind, node, _, _ in s.import_nodes:
        nodes = node.body if kind == "tc" else [node]
        for imp in nodes:
            if isinstance(imp, ast.ImportFrom):
                absm = resolve(imp.level, imp.module, pkg)
                for a in imp.names:
                    s.imported[a.asname or a.name] = (absm, a.name)
            else:
                for a in imp.names:
                    s.imported[a.asname or a.name.split(".")[0]] = (a.name, "")
    s.part_uses = {}
    for t, chunks in s.chunks.items():
        used: set[str] = set()
        for _, _, node in chunks:
            used |= used_names(node)
        for node, bound in s.pre_nodes:
            if used & bound:
                used |= used_names(node)
        s.part_uses[t] = used
    # global statements must stay with their variables
    for t, chunks in s.chunks.items():
        for _, _, node in chunks:
            for g in globals_declared(node):
                if s.defined.get(g) not in (t, None):
                    fail(f"{s.old}: {getattr(node, 'name', '?')} (-> {t}) rebinds global {g} "
                         f"defined in {s.defined[g]}: put them in one target")
    # names of new modules must not shadow old names
    for t in s.targets:
        last = modname(t).rsplit(".", 1)[-1]
        if last in s.defined and t != s.old:
            fail(f"{t}: module name {last!r} is also a name of {s.old}")


def part_deps(s: Split) -> dict[str, dict[str, set[str]]]:
    deps: dict[str, dict[str, set[str]]] = {}
    for t, used in s.part_uses.items():
        own = {n for n, tt in s.defined.items() if tt == t}
        d: dict[str, set[str]] = defaultdict(set)
        for n in used - own:
            if n in s.defined:
                d[s.defined[n]].add(n)
        deps[t] = d
    return deps


def check_cycles(s: Split, deps) -> None:
    graph = {t: set(d) for t, d in deps.items()}
    seen, stack, onstack = set(), [], set()

    def visit(v, path):
        if v in onstack:
            cyc = path[path.index(v):] + [v]
            detail = " ; ".join(
                f"{a} uses {sorted(deps[a][b])[:6]} of {b}" for a, b in zip(cyc, cyc[1:]))
            fail(f"{s.old}: the split makes an import cycle: {detail}")
            return
        if v in seen:
            return
        seen.add(v)
        onstack.add(v)
        for w in sorted(graph.get(v, ())):
            visit(w, path + [w])
        onstack.discard(v)

    for t in sorted(graph):
        visit(t, [t])


def import_lines_for(s: Split, t: str, used: set[str]) -> list[str]:
    """The original imports filtered to what part ``t`` uses, written as they were in the old
    file (rewrite_source re-bases them, with the imports inside functions, afterwards)."""
    out: list[str] = []
    tc_lines: list[str] = []
    for kind, node, _, _ in s.import_nodes:
        nodes = node.body if kind == "tc" else [node]
        for imp in nodes:
            if isinstance(imp, ast.ImportFrom) and imp.module == "__future__":
                lines = [ast.unparse(imp)]
            elif isinstance(imp, ast.ImportFrom):
                keep = [a for a in imp.names if (a.asname or a.name) in used]
                if not keep:
                    continue
                lines = [render_from(imp.level, imp.module or "",
                                     [(a.name, a.asname) for a in keep])]
            else:
                keep = [a for a in imp.names if (a.asname or a.name.split(".")[0]) in used]
                if not keep:
                    continue
                lines = [ast.unparse(ast.Import(names=keep))]
            (tc_lines if kind == "tc" else out).extend(lines)
    if tc_lines:
        if "TYPE_CHECKING" not in " ".join(out):
            out.append("from typing import TYPE_CHECKING")
        out.append("")
        out.append("if TYPE_CHECKING:")
        out.extend("    " + ln for ln in tc_lines)
    return out


def rebase_from(absm: str, aliases: list[ast.alias], new_pkg: str, was_rel: bool,
                where: str, indent: str = "") -> list[str]:
    groups: dict[str, list[tuple[str, str | None]]] = {}
    for a in aliases:
        home = new_home(absm, a.name, where)
        mod, nm = home if home else (absm, a.name)
        asname = a.asname
        if home and nm != a.name and asname is None:
            asname = a.name
        groups.setdefault(mod, []).append((nm, asname))
    return [render_abs_from(mod, al, new_pkg, was_rel, indent) for mod, al in groups.items()]


def build_parts(s: Split, deps) -> dict[str, str]:
    out: dict[str, str] = {}
    for t in s.targets:
        chunks = s.chunks.get(t, [])
        if not chunks and t != s.face:
            fail(f"{t}: no definitions")
            continue
        used = s.part_uses.get(t, set())
        if t == s.docfrom:
            doc = ast.get_source_segment(s.src, s.doc_node)
        else:
            doc = '"""' + M.DOCS.get(t, "") + '"""'
            if t not in M.DOCS and t != s.face:
                fail(f"{t}: no docstring in mapping.DOCS")
        imports = import_lines_for(s, t, used)
        for other, names in sorted(deps.get(t, {}).items()):
            level, mod = relative(modname(other), package_of(s.old))
            imports.append(render_from(level, mod, [(n, None) for n in sorted(names)]))
        for node, bound in s.pre_nodes:
            if used & bound:
                imports.append("")
                imports.append(ast.get_source_segment(s.src, node))
        own = [n for n in s.all if s.defined.get(n) == t]
        body = "".join("".join(s.lines[a - 1:b]) for a, b, _ in chunks)
        text = doc + "\n\n" + "\n".join(imports) + "\n"
        if s.all:
            one = "__all__ = [" + ", ".join(f'"{n}"' for n in own) + "]"
            if len(one) > 100:
                one = "__all__ = [\n" + "".join(f'    "{n}",\n' for n in own) + "]"
            text += "\n" + one + "\n"
        text += "\n" + body.lstrip("\n")
        if not text.endswith("\n"):
            text += "\n"
        out[t] = text
    return out


# --------------------------------------------------------------------------- faces and shims
FACE_TMPL = '''"""{doc}"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing
import warnings as _warnings

if _typing.TYPE_CHECKING:
{tc}

__all__ = [
{all}
]

#: where each public name lives (imported on first use, PEP 562).
_EXPORTS: dict[str, str] = {{
{exports}
}}
#: names the old module had that moved to a module of this package: they still resolve
#: here, with a DeprecationWarning naming the new path, for one release.
_OLD = "{old}"
_MOVED: dict[str, str] = {{
{moved}
}}


def __getattr__(name: str) -> object:
    """Import the module behind a public name on first use; forward a moved name with a
    DeprecationWarning that names its new module."""
    if name in _EXPORTS:
        value = getattr(_importlib.import_module(_EXPORTS[name], __name__), name)
        globals()[name] = value
        return value
    if name in _MOVED:
        new = f"{{__name__}}{{_MOVED[name]}}"
        _warnings.warn(f"{{_OLD}}.{{name}} moved to {{new}}.{{name}}: import it from there "
                       "(the old path goes in the next release)", DeprecationWarning,
                       stacklevel=2)
        return getattr(_importlib.import_module(new), name)
{fallback}


def __dir__() -> list[str]:
    return sorted({{*globals(), *__all__}})
'''


def face_text(path: str, doc: str, exports: dict[str, str], moved: dict[str, str],
              oldmod: str, fallback_chunk: str = "", fallback_imports: list[str] = ()) -> str:
    pkg = modname(path)
    rel = {n: "." + m[len(pkg) + 1:] if m.startswith(pkg + ".") else m
           for n, m in exports.items()}
    by_mod: dict[str, list[str]] = defaultdict(list)
    for n, m in sorted(rel.items()):
        by_mod[m].append(n)
    tc = "\n".join(f"    from {m} import {', '.join(sorted(ns))}" for m, ns in
                   sorted(by_mod.items()))
    mv = {n: "." + m[len(pkg) + 1:] for n, m in moved.items() if n not in exports}
    exports_txt = "\n".join(f'    "{n}": "{m}",' for n, m in sorted(rel.items()))
    moved_txt = "\n".join(f'    "{n}": "{m}",' for n, m in sorted(mv.items()))
    if fallback_chunk:
        fb = "    return _former_getattr(name)"
    else:
        fb = '    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")'
    text = FACE_TMPL.format(doc=doc, tc=tc or "    pass", all="\n".join(
        f'    "{n}",' for n in sorted(exports)), exports=exports_txt, moved=moved_txt,
        old=oldmod, fallback=fb)
    if fallback_chunk:
        text += "\n\n" + fallback_chunk.strip("\n").replace(
            "def __getattr__(", "def _former_getattr(", 1) + "\n"
        if fallback_imports:
            text = text.replace("import importlib as _importlib\n",
                                "import importlib as _importlib\n" +
                                "".join(x + "\n" for x in fallback_imports), 1)
    return text


SHIM_TMPL = '''"""Deprecated: ``{old}`` moved to ``{new}``.

This shim goes in the next release.
"""

from __future__ import annotations

import importlib as _importlib
import warnings as _warnings

_warnings.warn("{old} moved to {new}: "
               "import from there (the old path goes in the next release)",
               DeprecationWarning, stacklevel=2)

_ALL = (
{all}
)
__all__ = list(_ALL)  # the names come from __getattr__

#: every name of the old module -> the module that holds it now.
_NEW: dict[str, str] = {{
{names}
}}


def __getattr__(name: str) -> object:
    if name in _NEW:
        return getattr(_importlib.import_module(_NEW[name]), name)
    raise AttributeError(f"module {{__name__!r}} has no attribute {{name!r}}")
{main}'''


def shim_text(old: str, new: str, names: dict[str, str], all_: list[str], main: str) -> str:
    mains = ""
    if main:
        mains = ("\n\nif __name__ == \"__main__\":\n    import runpy\n\n"
                 f"    runpy.run_module(\"{main}\", run_name=\"__main__\", alter_sys=True)\n")
    return SHIM_TMPL.format(old=old, new=new, all="\n".join(f'    "{n}",' for n in all_),
                            names="\n".join(f'    "{n}": "{m}",'
                                             for n, m in sorted(names.items())),
                            main=mains)


def module_names(src: str) -> tuple[list[str], list[str]]:
    """(top-level bound names, __all__) of a module's source."""
    tree = ast.parse(src)
    names, all_ = [], []
    for node in tree.body:
        kind, ns = classify(node, 1)
        if kind == "all":
            all_ = list(ast.literal_eval(node.value))
        elif kind == "def":
            names += [n for n in ns if not n.startswith("<")]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names += [(a.asname or a.name).split(".")[0] for a in node.names
                      if not (isinstance(node, ast.ImportFrom) and node.module == "__future__")]
    return names, all_


# --------------------------------------------------------------------------- import rewriting
def alias_uses(scope: ast.AST, bound: str):
    """(attr, name node, is_set) for every ``bound.attr`` in ``scope`` and every
    ``setattr(bound, "attr", ...)`` / ``monkeypatch.setattr(bound, "attr", ...)``; attr is
    None for a setattr whose name is not a literal."""
    out = []
    for n in ast.walk(scope):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == bound:
            out.append((n.attr, n.value, isinstance(n.ctx, ast.Store)))
        if isinstance(n, ast.Call) and len(n.args) >= 2 and isinstance(n.args[0], ast.Name) \
                and n.args[0].id == bound and ast.unparse(n.func).endswith("setattr"):
            a = n.args[1]
            name = a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else None
            out.append((name, n.args[0], True))
    return out


def check_patched(s: Split, name: str | None, where: str, scope: ast.AST) -> None:
    """A name a test sets on the old module must be used only in the part defining it (its
    users elsewhere would hold their own binding). A setattr by a variable name: the names
    of ``s`` written as strings in the same scope are the candidates."""
    if name:
        names = [name]
    else:
        names = sorted({c.value for c in ast.walk(scope) if isinstance(c, ast.Constant)
                        and isinstance(c.value, str) and c.value in s.defined})
        if not names:
            fail(f"{where}: setattr on {s.oldmod} by a variable name, no candidate names")
    for n in names:
        if n in s.imported and n not in s.defined:
            users = sorted(t for t, used in s.part_uses.items() if n in used)
            if len(users) > 1:
                fail(f"{where}: sets {n!r} on {s.oldmod} (an imported name), used by {users}")
            continue
        home = s.defined.get(n)
        if home is None:
            continue
        users = sorted(t for t, used in s.part_uses.items() if n in used and t != home)
        if users:
            fail(f"{where}: sets {s.oldmod}.{n}{'' if name else ' (setattr by a variable name)'}"
                 f", defined in {home} but used in {users}: put {n} with its users")


def split_module_alias(s: Split, scope, bound: str, where: str) -> dict[str, str] | None:
    """attr -> module for the names ``bound`` (a module object of split module ``s``) uses
    in ``scope``; None to keep binding the (face) package as it is."""
    uses = alias_uses(scope, bound)
    face_names = set(FACE_EXPORTS.get(s.old, {}))
    homes: dict[str, str] = {}
    any_set = False
    for a, _, is_set in uses:
        if is_set:
            any_set = True
            check_patched(s, a, where, scope)
        if a is None:
            continue
        if a in s.defined:
            homes[a] = modname(s.defined[a])
        elif a in s.imported:
            users = sorted(t for t, used in s.part_uses.items() if a in used)
            if is_set and len(users) == 1:
                homes[a] = modname(users[0])  # set where it is used
            else:
                homes[a] = new_home_of_import(s, a, where)[0]
        elif s.face and "__getattr__" in s.defined:
            NOTES.append(f"{where}: {bound}.{a} is left to {s.oldmod}.__getattr__")
        else:
            fail(f"{where}: {bound}.{a}: {s.oldmod} has no name {a!r}")
    if s.face and not any_set and set(homes) <= face_names:
        return None
    if not homes:
        return None if s.face else {"": s.bare}
    return homes


def enclosing_scopes(tree: ast.AST) -> dict[int, ast.AST]:
    """id(import node) -> the function (or module) it binds its names in."""
    out: dict[int, ast.AST] = {}

    def walk(node, scope):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                out[id(child)] = scope
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                walk(child, child)
            else:
                walk(child, scope)

    walk(tree, tree)
    return out


def alias_plan(s: Split, scope, bound: str, where: str, edits, span):
    """The modules to bind for ``bound`` -> [(module, alias)], adding to ``edits`` the
    rewrites of ``bound.attr`` for attrs in a second module."""
    homes = split_module_alias(s, scope, bound, where)
    if homes is None:
        return None
    if "" in homes:
        return [(homes[""], bound)]
    count: dict[str, int] = defaultdict(int)
    for m in homes.values():
        count[m] += 1
    primary = sorted(count, key=lambda m: (-count[m], m))[0]
    plan = [(primary, bound)]
    others = {}
    for m in sorted(count):
        if m != primary:
            others[m] = f"{bound}_{m.rsplit('.', 1)[1].strip('_')}"
            plan.append((m, others[m]))
    if others:
        NOTES.append(f"{where}: {bound} -> {primary}; " + ", ".join(
            f"{al} = {m}" for m, al in others.items()))
        for a, name_node, _ in alias_uses(scope, bound):
            if a in homes and homes[a] in others:
                edits.append((*span(name_node), others[homes[a]]))
    return plan


def rewrite_source(src: str, old_path: str, new_path: str, where: str) -> str:
    """Rewrite every import of a moved/split module in ``src`` (a module that was at
    ``old_path`` and is now at ``new_path``; the same for files that do not move)."""
    try:
        tree = ast.parse(src)
    except SyntaxError as e:
        fail(f"{where}: does not parse: {e}")
        return src
    old_pkg = package_of(old_path) if old_path else ""
    new_pkg = package_of(new_path) if new_path else ""
    lines = src.splitlines(keepends=True)
    offs = [0]
    for ln in lines:
        offs.append(offs[-1] + len(ln))
    edits: list[tuple[int, int, str]] = []

    def span(node):
        return (offs[node.lineno - 1] + node.col_offset,
                offs[node.end_lineno - 1] + node.end_col_offset)

    scopes = enclosing_scopes(tree)
    for node in ast.walk(tree):
        indent = ""
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            if node.level and not old_pkg:
                continue
            absm = resolve(node.level, node.module, old_pkg)
            changed = False
            groups: dict[str, list[tuple[str, str | None]]] = {}
            for a in node.names:
                bound = a.asname or a.name
                full = f"{absm}.{a.name}"
                mod, nm, asn = absm, a.name, a.asname
                if full in SPLITMOD:  # a module object of a split module
                    plan = alias_plan(SPLITMOD[full], scopes[id(node)], bound, where, edits,
                                      span)
                    if plan:
                        for target, al in plan[1:]:
                            pm, pn = target.rsplit(".", 1)
                            groups.setdefault(pm, []).append((pn, al))
                        target = plan[0][0]
                        if target != full:
                            mod, nm = target.rsplit(".", 1)
                            asn = bound if bound != nm else None
                            changed = True
                else:
                    home = new_home(absm, a.name, where)
                    if home:
                        mod, nm = home
                        if nm != a.name and asn is None:
                            asn = a.name
                        if nm == asn:
                            asn = None
                if (mod, nm, asn) != (absm, a.name, a.asname):
                    changed = True
                groups.setdefault(mod, []).append((nm, asn))
            if node.level and not changed and old_pkg != new_pkg:
                changed = True  # a moved file: re-base its relative imports
            if not changed:
                continue
            col = node.col_offset
            indent = " " * col
            stmts = [render_abs_from(m, al, new_pkg or m, bool(node.level), indent)
                     for m, al in groups.items()]
            text = "\n".join(stmts)[col:]
            edits.append((*span(node), text))
        elif isinstance(node, ast.Import):
            new_aliases = []
            changed = False
            for a in node.names:
                name = a.name
                top = name
                if name in MODMOVE:
                    name = MODMOVE[name]
                    changed = True
                    if a.asname is None:
                        fail(f"{where}:{node.lineno}: `import {a.name}` (no alias) of a moved "
                             "module: write it with `as`")
                elif name in SPLITMOD:
                    s = SPLITMOD[name]
                    if a.asname:
                        plan = alias_plan(s, scopes[id(node)], a.asname, where, edits, span)
                        if plan:
                            for target, al in plan[1:]:
                                new_aliases.append((target, al, top))
                            if plan[0][0] != name:
                                name = plan[0][0]
                            changed = True
                    elif not s.face:
                        fail(f"{where}:{node.lineno}: `import {name}` of a split module")
                new_aliases.append((name, a.asname, top))
            if changed:
                col = node.col_offset
                parts = []
                new_aliases.sort(key=lambda x: x[1] != (node.names[0].asname))
                for name, asn, _ in new_aliases:
                    parts.append(f"import {name} as {asn}" if asn else f"import {name}")
                edits.append((*span(node), ("\n" + " " * col).join(parts)))
    if not edits:
        return src
    edits.sort()
    out, pos = [], 0
    for a, b, text in edits:
        if a < pos:
            continue  # nested (cannot happen for imports)
        out.append(src[pos:a])
        out.append(text)
        pos = b
    out.append(src[pos:])
    return "".join(out)


DOTTED = re.compile(r"replaykit(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
SLASHED = re.compile(r"replaykit/[A-Za-z0-9_/]+\.py")


def rewrite_strings(text: str, code: bool) -> str:
    """Dotted paths (``replaykit.provenance.stamps_df``) and file paths (``replaykit/cli/``).
    In code, a string that is exactly a dotted path names the defining module; elsewhere a
    public name keeps its package face."""

    def dotted(m: re.Match) -> str:
        s = m.group(0)
        parts = s.split(".")
        quoted = code and m.start() > 0 and text[m.start() - 1] in "\"'" and \
            m.end() < len(text) and text[m.end()] in "\"':"
        for k in range(len(parts), 1, -1):
            mod = ".".join(parts[:k])
            rest = parts[k:]
            if mod in MODMOVE:
                return ".".join([MODMOVE[mod], *rest])
            if mod in SPLITMOD:
                sp = SPLITMOD[mod]
                if not rest:
                    if quoted:
                        return sp.bare
                    return modname(sp.face) if sp.face else (
                        modname(NEW_FACE_OF.get(sp.old, sp.old)) if sp.old in NEW_FACE_OF
                        else sp.bare)
                name = rest[0]
                if name in sp.defined:
                    home = modname(sp.defined[name])
                    if not quoted:
                        face = FACE_OF_NAME.get((sp.old, name))
                        if face:
                            home = face
                    return ".".join([home, *rest])
                return s
        return s

    def slashed(m: re.Match) -> str:
        p = m.group(0)
        if p in MOVES:
            return MOVES[p]
        if p in SPLITS:
            sp = SPLITS[p]
            if sp.keeps_file:
                return p
            if sp.face:
                return sp.face.rsplit("/", 1)[0] + "/"
            return sp.docfrom
        return p

    text = DOTTED.sub(dotted, text)
    return SLASHED.sub(slashed, text)


REL_STRING = re.compile(r"""(?<=["'])\.[A-Za-z_][A-Za-z0-9_.]*(?=["'])""")


def rewrite_relative_strings(src: str, path: str) -> str:
    """In mapping.FACE_IMPORTERS (replaykit/__init__.py's _EXPORTS / _MODULES): quoted
    relative module names (".stamps") of moved or split modules."""
    pkg = package_of(path)

    def sub(m: re.Match) -> str:
        absm = resolve(1, m.group(0)[1:], pkg)
        if absm in MODMOVE:
            new = MODMOVE[absm]
        elif absm in SPLITMOD:
            sp = SPLITMOD[absm]
            face = sp.face or NEW_FACE_OF.get(sp.old)
            new = modname(face) if face else sp.bare
        else:
            return m.group(0)
        level, mod = relative(new, pkg)
        return "." * level + mod

    return REL_STRING.sub(sub, src)


def rewrite_py_file(path: str, old_path: str | None, new_path: str) -> None:
    f = ROOT / path
    src = f.read_text()
    where = path
    out = rewrite_source(src, old_path or "", new_path if old_path else "", where)
    out = rewrite_code_strings(out)
    if path in M.FACE_IMPORTERS:
        out = rewrite_relative_strings(out, path)
    if out != src:
        f.write_text(out)


def rewrite_code_strings(src: str) -> str:
    """rewrite_strings over a Python file: code strings exact, comments/docstrings doc-style."""
    # token-wise: STRING tokens that are exactly a dotted path are code; all else text
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(src).readline))
    except (tokenize.TokenError, SyntaxError):
        return rewrite_strings(src, code=False)
    lines = src.splitlines(keepends=True)
    offs = [0]
    for ln in lines:
        offs.append(offs[-1] + len(ln))
    edits = []
    for tok in toks:
        if tok.type not in (tokenize.STRING, tokenize.COMMENT):
            continue
        a = offs[tok.start[0] - 1] + tok.start[1]
        b = offs[tok.end[0] - 1] + tok.end[1]
        s = src[a:b]
        new = rewrite_strings(s, code=tok.type == tokenize.STRING)
        if new != s:
            edits.append((a, b, new))
    if not edits:
        return src
    out, pos = [], 0
    for a, b, t in edits:
        out.append(src[pos:a])
        out.append(t)
        pos = b
    out.append(src[pos:])
    return "".join(out)


def rewrite_notebook(path: str) -> None:
    f = ROOT / path
    raw = f.read_text()
    nb = json.loads(raw)
    again = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
    if again != raw:
        fail(f"{path}: its JSON does not round-trip (indent=1, ensure_ascii=False)")
        return
    changed = False
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "code":
            new = rewrite_source(src, "", "", f"{path} cell {cell.get('id')}")
            new = rewrite_code_strings(new)
        else:
            new = rewrite_strings(src, code=False)
        if new != src:
            cell["source"] = new.splitlines(keepends=True)
            changed = True
    if changed:
        f.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


# --------------------------------------------------------------------------- the phases
FACE_EXPORTS: dict[str, dict[str, str]] = {}  # split old path -> {name: defining module}
FACE_OF_NAME: dict[tuple[str, str], str] = {}  # (split old path, name) -> face module
NEW_FACE_OF: dict[str, str] = {}  # split old path -> new face path (NEW_FACES)
PART_OF: dict[str, str] = {}  # written part -> the split file it came from
SHIM_RECORD: dict[str, tuple[str, str]] = {}  # old module -> (new module, a name it gives)
MOVED_RECORD: list[tuple[str, str, str]] = []  # (module, moved name, its new module)
FACES_WRITTEN: set[str] = set()


def tracked(*globs: str) -> list[str]:
    out = git("ls-files", *globs).split("\n")
    return [p for p in out if p]


def phase_moves(commit: bool) -> None:
    if git("status", "--porcelain", "--untracked-files=no").strip():
        raise SystemExit("the worktree has changes: run on a clean checkout")
    for p in list(MOVES) + list(SPLITS):
        if not (ROOT / p).exists():
            fail(f"{p}: not found (the mapping names a file main no longer has)")
    die_if_errors("preflight")
    for s in SPLITS.values():
        analyse_split(s)
    die_if_errors("assigning definitions")
    all_deps = {}
    for s in SPLITS.values():
        deps = part_deps(s)
        all_deps[s.old] = deps
        check_cycles(s, deps)
    die_if_errors("split cycles")
    # faces
    for s in SPLITS.values():
        exports = {}
        for n in s.all:
            if n in s.defined:
                exports[n] = modname(s.defined[n])
            elif n in s.imported:
                exports[n] = new_home_of_import(s, n, s.old)[0]
        for n in M.FACE_EXTRA.get(s.face or "", []):
            if n not in s.defined:
                fail(f"mapping.FACE_EXTRA: {n} is not a name of {s.old}")
            else:
                exports[n] = modname(s.defined[n])
        FACE_EXPORTS[s.old] = exports
        if s.face:
            for n in exports:
                FACE_OF_NAME[(s.old, n)] = modname(s.face)
    for face, members in M.NEW_FACES.items():
        for s in SPLITS.values():
            if any(t in members for t in s.targets):
                NEW_FACE_OF[s.old] = face
                for n in FACE_EXPORTS[s.old]:
                    FACE_OF_NAME[(s.old, n)] = modname(face)
    # 1. git mv the whole files, then rewrite the imports inside them
    moved_sources = {}
    for old, new in MOVES.items():
        (ROOT / new).parent.mkdir(parents=True, exist_ok=True)
        moved_sources[old] = (ROOT / old).read_text()
    # a split whose old path becomes a package directory: move the old file out of the way
    for s in SPLITS.values():
        if not s.keeps_file:
            git("rm", "-q", "--cached", s.old)
            (ROOT / s.old).unlink()
    for old, new in MOVES.items():
        (ROOT / new).parent.mkdir(parents=True, exist_ok=True)
        (ROOT / new).write_text(moved_sources[old])
        git("add", new)
        git("rm", "-q", "--cached", old, check=False)
        if (ROOT / old).exists():
            (ROOT / old).unlink()
    # 2. the split parts
    written: list[str] = []
    for s in SPLITS.values():
        parts = build_parts(s, all_deps[s.old])
        for t, text in parts.items():
            if t == s.face:
                continue
            (ROOT / t).parent.mkdir(parents=True, exist_ok=True)
            (ROOT / t).write_text(text)
            written.append(t)
            PART_OF[t] = s.old
        if s.face:
            fb_chunks = s.chunks.get(s.face, [])
            fb = "".join("".join(s.lines[a - 1:b]) for a, b, _ in fb_chunks)
            fb_imports = []
            if fb:
                used = s.part_uses.get(s.face, set())
                fb_imports = [x for x in rewrite_source("\n".join(
                    import_lines_for(s, s.face, used)), s.old, s.face, s.face).split("\n")
                    if "__future__" not in x]
            moved = {n: modname(t) for n, t in s.defined.items()
                     if t != s.face and not n.startswith("<")}
            for n in s.imported:
                if n not in moved and n not in FACE_EXPORTS[s.old]:
                    home = new_home_of_import(s, n, s.old)
                    if home[0].startswith(modname(s.face) + "."):
                        moved[n] = home[0]
            text = face_text(s.face, M.FACE_DOCS[s.face], FACE_EXPORTS[s.old], moved,
                             s.oldmod, fb, fb_imports)
            MOVED_RECORD.extend((modname(s.face), n, m) for n, m in sorted(moved.items())
                                if n not in FACE_EXPORTS[s.old] and n not in s.imported)
            (ROOT / s.face).write_text(text)
            written.append(s.face)
            FACES_WRITTEN.add(s.face)
        if s.keeps_file:
            # names that left the old file still resolve there for one release
            moved = {n: modname(t) for n, t in s.defined.items()
                     if t != s.old and not n.startswith("<")}
            kept_uses = s.part_uses.get(s.old, set())
            MOVED_RECORD.extend((s.oldmod, n, m) for n, m in sorted(moved.items())
                                if n not in kept_uses)
            if moved:
                text = (ROOT / s.old).read_text()
                text += KEPT_GETATTR.format(
                    old=s.oldmod, moved="\n".join(f'    "{n}": "{m}",'
                                                   for n, m in sorted(moved.items())))
                text = text.replace("\nfrom __future__ import annotations\n",
                                    "\nfrom __future__ import annotations\n\n"
                                    "import importlib as _importlib\n"
                                    "import warnings as _warnings\n", 1)
                (ROOT / s.old).write_text(text)
    for face, members in M.NEW_FACES.items():
        exports, moved = {}, {}
        for mpath in members:
            src = (ROOT / mpath).read_text()
            names, all_ = module_names(src)
            for n in all_:
                exports[n] = modname(mpath)
        text = face_text(face, M.FACE_DOCS[face], exports, {}, modname(face))
        (ROOT / face).write_text(text)
        written.append(face)
        FACES_WRITTEN.add(face)
    for p, text in M.MAINS.items():
        (ROOT / p).write_text(text)
        written.append(p)
    # 3. rewrite imports everywhere
    for old, new in MOVES.items():
        rewrite_py_file(new, old, new)
    for p in written:
        if p in M.MAINS:
            continue
        if p in FACES_WRITTEN:  # generated imports are right; strings may name old paths
            f = ROOT / p
            f.write_text(rewrite_code_strings(f.read_text()))
            continue
        rewrite_py_file(p, PART_OF[p], p)
    skip = set(MOVES.values()) | set(written)
    for p in tracked("*.py"):
        if p in skip or p.startswith("native/"):
            continue
        rewrite_py_file(p, p if p.startswith("replaykit/") else None, p)
    for p in tracked("*.ipynb"):
        rewrite_notebook(p)
    for p in tracked("*.md", "Makefile", "*.toml", "*.cfg", "*.ini", "*.yml", "*.yaml"):
        if p.startswith("native/") or p.startswith("tests/data/") or p == "pyproject.toml":
            continue  # pyproject.toml: mapping.TEXT_EDITS, exactly
        f = ROOT / p
        t = f.read_text()
        n = rewrite_strings(t, code=False)
        if n != t:
            f.write_text(n)
    die_if_errors("rewriting imports")
    # 4. shims at the old paths that are gone
    for old, new in MOVES.items():
        names, all_ = module_names(moved_sources[old])
        mod = modname(new)
        main = mod if "__main__" in moved_sources[old] else ""
        write_shim(old, mod, {n: mod for n in names}, all_, main)
    for s in SPLITS.values():
        if s.keeps_file or s.face:
            continue
        names = {n: modname(t) for n, t in s.defined.items() if not n.startswith("<")}
        for n in s.imported:
            names.setdefault(n, new_home_of_import(s, n, s.old)[0])
        write_shim(s.old, modname(NEW_FACE_OF.get(s.old, s.docfrom)), names, s.all, "")
    # 5. text edits (contracts, tests reading files by path)
    for path, old, new in M.TEXT_EDITS:
        f = ROOT / path
        t = f.read_text()
        if old not in t:
            fail(f"{path}: text to edit not found (mapping.TEXT_EDITS): {old[:70]!r}")
            continue
        f.write_text(t.replace(old, new, 1))
    f = ROOT / "pyproject.toml"
    f.write_text(f.read_text().rstrip("\n") + "\n" + M.NEW_CONTRACTS)
    for path, old, new in M.POST_EDITS:
        f = ROOT / path
        t = f.read_text()
        if old not in t:
            fail(f"{path}: text to edit not found (mapping.POST_EDITS): {old[:70]!r}")
            continue
        f.write_text(t.replace(old, new, 1))
    die_if_errors("text edits")
    # 6. format imports of the touched files, max lines
    touched = [p for p in git("diff", "--name-only", "HEAD").split() if p.endswith(".py")]
    touched += [p for p in git("ls-files", "--others", "--exclude-standard").split()
                if p.endswith(".py")]
    touched = sorted({p for p in touched if (ROOT / p).exists()})
    subprocess.run([str(BIN / "ruff"), "check", "--fix", "--select", "I001,F401", "--quiet",
                    *written], cwd=ROOT)
    subprocess.run([str(BIN / "ruff"), "check", "--fix", "--select", "I001", "--quiet",
                    *touched], cwd=ROOT)
    for p in tracked("replaykit/*.py") + written:
        if (ROOT / p).exists():
            n = len((ROOT / p).read_text().splitlines())
            if n > MAX_LINES:
                fail(f"{p}: {n} lines (over {MAX_LINES}): move names to another target")
    die_if_errors("sizes")
    for n in NOTES:
        print("note:", n)
    if commit:
        add_all_changed()
        git("commit", "-q", "-m", COMMIT1)


KEPT_GETATTR = '''

#: names that moved out of this module (found here for one release, with a warning).
_MOVED_OUT: dict[str, str] = {{
{moved}
}}


def __getattr__(name: str) -> object:
    if name in _MOVED_OUT:
        _warnings.warn(f"{{__name__}}.{{name}} moved to {{_MOVED_OUT[name]}}.{{name}}: "
                       "import it from there (the old path goes in the next release)",
                       DeprecationWarning, stacklevel=2)
        return getattr(_importlib.import_module(_MOVED_OUT[name]), name)
    raise AttributeError(f"module {{__name__!r}} has no attribute {{name!r}}")
'''


def write_shim(old: str, new: str, names: dict[str, str], all_: list[str], main: str) -> None:
    f = ROOT / old
    if f.exists() or (ROOT / old[:-3]).is_dir():
        if (ROOT / old[:-3]).is_dir():
            return  # the old module path is now a package of the same name
        fail(f"{old}: exists, cannot write its shim")
        return
    f.write_text(shim_text(modname(old), new, names, all_, main))
    NOTES.append(f"shim {old} -> {new}")
    sample = (all_ or sorted(n for n in names if not n.startswith("_")) or sorted(names))[0]
    SHIM_RECORD[modname(old)] = (new, sample)


def add_all_changed() -> None:
    """Stage exactly the files this script touched (never `git add -A`)."""
    changed = git("diff", "--name-only").split()
    others = git("ls-files", "--others", "--exclude-standard").split()
    paths = sorted(set(changed) | set(others))
    for p in paths:
        if p.endswith(".so") or "__pycache__" in p:
            continue
        git("add", "--", p)


COMMIT1 = """restructure (issue 32) 1/n: one package per concern, code moved unchanged

Generated by /work/scratch/restructure/apply.py (mapping.py). Whole files moved with git mv;
split files cut at top-level definitions (ast), each part with the imports it uses; shims
with a DeprecationWarning at every old path; imports in replaykit/, tests/, benchmarks/,
tools/, notebooks/, docs/ rewritten; import-linter contracts for the new packages."""


# --------------------------------------------------------------------------- checks
def run_checks() -> bool:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    results = []

    def run(label, cmd):
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        ok = p.returncode == 0
        tail = (p.stdout + p.stderr).strip().splitlines()[-12:]
        results.append((label, ok))
        print(f"[{'OK' if ok else 'FAIL'}] {label}")
        if not ok:
            print("      " + "\n      ".join(tail))
        return p

    run("lint-imports --no-cache", [str(BIN / "lint-imports"), "--no-cache"])
    run("tools/import_cycles.py (0 cycles)", [PY, "tools/import_cycles.py"])
    run("ruff check replaykit tests benchmarks (as make lint)",
        [str(BIN / "ruff"), "check", "replaykit", "tests", "benchmarks"])
    run("mypy replaykit", [str(BIN / "mypy"), "replaykit"])
    big = []
    for p in tracked("replaykit/*.py"):
        n = len((ROOT / p).read_text().splitlines())
        if n > MAX_LINES:
            big.append(f"{p}: {n}")
    print(f"[{'OK' if not big else 'FAIL'}] no module in replaykit/ over {MAX_LINES} lines"
          + ("" if not big else ": " + ", ".join(big)))
    results.append(("max lines", not big))
    smoke = (
        "import warnings, replaykit as rk\n"
        "from replaykit.cli import console_main, main\n"
        "import replaykit.integrity, replaykit.sql, replaykit.toh, replaykit.provenance\n"
        "assert rk.toh.__name__ == 'replaykit.toh', rk.toh\n"
        "for n in rk.__all__: getattr(rk, n)\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    import replaykit.provenance, replaykit.cli.files, replaykit.toh.scripts\n"
        "    assert any('replaykit.provenance' in str(x.message) for x in w), w\n"
        "assert main(['--version']) == 0\n"
        "print('smoke ok')\n")
    run("python -c 'import replaykit; ...' smoke", [PY, "-c", smoke])
    run("replaykit --version (console entry point)", [PY, "-m", "replaykit.cli", "--version"])
    ok = all(r for _, r in results)
    print("\nCHECKS:", "OK" if ok else "FAIL")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-commit", action="store_true")
    ap.add_argument("--no-checks", action="store_true")
    ap.add_argument("--checks-only", action="store_true")
    ns = ap.parse_args()
    if not ns.checks_only:
        phase_moves(commit=not ns.no_commit)
        import phases  # noqa: E402  (commits 2..n)

        phases.run(ROOT, commit=not ns.no_commit, git=git, add=add_all_changed, fail=fail,
                   errors=ERRORS, shims=(SHIM_RECORD, MOVED_RECORD), py=PY)
        die_if_errors("later phases")
    if ns.no_checks:
        return 0
    return 0 if run_checks() else 1


if __name__ == "__main__":
    sys.exit(main())

"""Special files (issue 42, red-team finding 15), closed at its class.

A path that exists but is a FIFO, a socket or a device (or a symbolic link to one) is said
as such by every entry point that takes a path -- every ``rk.read_*`` loader,
``read_parquet``, ``read_sql``'s SQLite file, the isplay branch/fixtures documents, toh
override files, ``ReplayResult.load``, the command line -- never "no such file", and never
opened (opening a FIFO for reading blocks until a writer comes; /dev/zero never ends).
Inside a folder (or among a glob's matches) such files are skipped with a
``SpecialFileWarning`` listing them (Python) or counted as skipped files with reason
``special_file`` (the CLI), never silently. Every test runs under a timeout guard: a
reader that opened a FIFO would hang, and the guard turns that into a failure.
"""

from __future__ import annotations

import csv
import inspect
import os
import signal
import socket
import warnings
from pathlib import Path

import pytest

import replaykit as rk
from replaykit import LoadError
from replaykit.cli import main as cli_main
from replaykit.datasets import generate_pleach
from replaykit.errors import SQLError, special_file_kind
from replaykit.io._common import SpecialFileWarning

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs (POSIX)")

KIND_WORDS = {"fifo": "a FIFO (named pipe)", "socket": "a socket", "device": "a device",
              "link to device": "a device"}


@pytest.fixture(autouse=True)
def _no_hang():
    """Fail (not hang) when something opens a FIFO: SIGALRM after 20 s."""
    def boom(*_):
        raise TimeoutError("a special file was opened and blocked")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _make(kind: str, where: Path, name: str) -> Path:
    p = where / name
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        try:
            s.bind(str(p))
        except OSError:  # the path is too long for a socket: a shorter folder
            pytest.skip("socket path too long here")
        s.close()
    elif kind == "device":
        return Path("/dev/zero")
    elif kind == "link to device":
        os.symlink("/dev/zero", p)
    return p


def _readers():
    """Every public rk.read_* that takes a path, with the owner argument it needs."""
    out = {}
    for name in sorted(n for n in rk.__all__ if n.startswith("read_")):
        fn = getattr(rk, name)
        params = inspect.signature(fn).parameters
        if name == "read_sql":
            continue  # a URI (tested below)
        kw = {}
        if "owner" in params:
            kw["owner"] = "acme"
        elif "tenant_id" in params and name not in ("read_parquet", "read_events"):
            kw["tenant_id"] = "acme"
        out[name] = (fn, kw)
    return out


READERS = _readers()


@pytest.mark.parametrize("kind", list(KIND_WORDS))
@pytest.mark.parametrize("reader", list(READERS))
def test_a_named_special_file_is_said_as_such(tmp_path, reader, kind):
    fn, kw = READERS[reader]
    p = _make(kind, tmp_path, "log.jsonl")
    assert special_file_kind(p) == KIND_WORDS[kind]
    with pytest.raises(LoadError) as info:
        fn(p, **kw)
    err = info.value
    assert err.reason == "special_file" and err.source == str(p)
    assert KIND_WORDS[kind] in str(err) and "no such file" not in str(err)


@pytest.mark.filterwarnings("ignore::replaykit.io.toh._shapes.OrphanRunWarning")
@pytest.mark.parametrize("native", ["native", "reference"])
@pytest.mark.parametrize("kind", ["fifo", "socket", "link to device"])
@pytest.mark.parametrize("reader", ["read_pleach", "read_events", "read_toh"])
def test_special_files_in_a_folder_are_skipped_with_a_warning(tmp_path, reader, kind,
                                                              native, monkeypatch):
    if native == "reference":
        monkeypatch.setenv("REPLAYKIT_NATIVE", "0")
    fn, kw = READERS[reader]
    logs = tmp_path / "logs"
    logs.mkdir()
    generate_pleach(logs / "a.jsonl", events=60, runs=2) if reader != "read_toh" else None
    if reader == "read_toh":
        src = sorted(Path("data/toh").rglob("*.jsonl"))[0]
        (logs / "a.jsonl").write_bytes(src.read_bytes())
    special = _make(kind, logs, "z.jsonl")
    for target in (logs, str(logs / "*.jsonl")):
        with pytest.warns(SpecialFileWarning) as caught:
            log = fn(target, **({"owner": "acme"} if reader == "read_events" else kw))
        assert len(log) > 0
        msg = str(caught[0].message)
        assert str(special) in msg and KIND_WORDS[kind].removeprefix("a ") in msg
        assert caught[0].filename == __file__  # said to the caller, not inside replaykit


def test_a_folder_of_only_special_files_says_so(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    _make("fifo", logs, "p.jsonl")
    with pytest.warns(SpecialFileWarning), pytest.raises(FileNotFoundError):
        rk.read_pleach(logs)


def test_side_documents_and_results_refuse_special_files(tmp_path):
    fifo = _make("fifo", tmp_path, "doc.json")
    for call in (lambda: rk.read_isplay_branch(fifo), lambda: rk.read_isplay_fixtures(fifo)):
        with pytest.raises(LoadError, match="FIFO"):
            call()
    from replaykit.toh.scripts import load_override

    with pytest.raises(LoadError, match="FIFO"):
        load_override(fifo)
    from replaykit.branch.replay import ReplayResult

    res = tmp_path / "result"
    res.mkdir()
    os.mkfifo(res / "manifest.json")
    with pytest.raises(LoadError, match="manifest.json: is a FIFO"):
        ReplayResult.load(res)


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_read_sql_names_a_special_sqlite_path(tmp_path, kind):
    p = _make(kind, tmp_path, "db.sqlite")
    with pytest.raises(SQLError) as info:
        rk.read_sql(f"sqlite:///{p}", tenant_id="acme")
    assert info.value.reason == "special_file" and KIND_WORDS[kind] in str(info.value)


@pytest.mark.parametrize("kind", list(KIND_WORDS))
def test_cli_names_special_files_and_counts_them_in_folders(tmp_path, kind, capsys):
    p = _make(kind, tmp_path, "named.jsonl")
    assert cli_main(["summary", str(p)]) == 2
    assert f"is {KIND_WORDS[kind]}" in capsys.readouterr().err
    logs = tmp_path / "logs"
    logs.mkdir()
    generate_pleach(logs / "a.jsonl", events=60, runs=2)
    inner = _make(kind if kind != "device" else "link to device", logs, "z.jsonl")
    out = tmp_path / "q.csv"
    assert cli_main(["summary", str(logs), "--errors", "quarantine",
                     "--quarantine-out", str(out)]) == 0
    text = capsys.readouterr()
    assert "1 file(s) skipped" in text.out + text.err
    rows = list(csv.DictReader(out.open(newline="")))
    assert [(r["source"], r["reason"]) for r in rows] == [(str(inner), "special_file")]


def test_cli_and_python_use_one_rule(tmp_path):
    """The CLI's words for a named special file are special_file_kind's."""
    from replaykit.cli.files import CliFileError, check_input_path

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for kind in KIND_WORDS:
            p = _make(kind, tmp_path, f"{kind.replace(' ', '_')}.jsonl")
            with pytest.raises(CliFileError, match=KIND_WORDS[kind].replace("(", r"\(")
                               .replace(")", r"\)")):
                check_input_path(str(p))


def test_the_same_file_named_twice_is_read_once_and_hard_links_both(tmp_path):
    """expand_paths drops a file named again through a symbolic link, ``..`` or its folder,
    in the order first named; two hard links are two names of the content and both stay
    (read_events then reports the copy), as when every name was resolved."""
    import os

    from replaykit.io._common import expand_paths

    d = tmp_path / "logs"
    (d / "sub").mkdir(parents=True)
    a, b = d / "a.jsonl", d / "sub" / "b.jsonl"
    a.write_text("{}\n")
    b.write_text("{}\n")
    (tmp_path / "link.jsonl").symlink_to(a)
    os.link(b, d / "c.jsonl")
    got = expand_paths([tmp_path / "link.jsonl", d, d / "sub" / ".." / "a.jsonl", b],
                       patterns=("*.jsonl",))
    assert got == [tmp_path / "link.jsonl", d / "c.jsonl", d / "sub" / "b.jsonl"]
    assert expand_paths(d, patterns=("*.jsonl", "a.*")) == [a, d / "c.jsonl", b]

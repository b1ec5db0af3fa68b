"""The command line's files and terminal: the files it is given (checked before they are
read) and the files it writes (checked before they are written, written whole or not at all).

Every ``replaykit`` command that writes goes through :func:`check_output` and
:func:`atomic_write`:

* a path that is a symbolic link is refused (the link is never followed, whatever it points
  to);
* a path that is one of the command's inputs is refused (``--quarantine-out`` naming the log
  being read, ``-o`` naming the ``--patch`` file);
* an existing path is refused unless ``--overwrite`` is given;
* the bytes go to a temporary file beside the target, which is renamed over it once complete:
  an interrupted command leaves the old file (or none), never half a file.

Every file given to an option (``--patch``, ``--branch``, ``--fixtures``, ``--heads``) goes
through :func:`read_option_file` or :func:`check_option_file`: a directory, FIFO, socket or
device, a file over :data:`MAX_OPTION_FILE_BYTES`, or JSON nested deeper than Python can parse,
is a one-line usage error (exit 2), never a hang, a traceback or a memory blow-up.

Text printed to a terminal goes through :func:`terminal_safe` (the console command wraps a
terminal's stdout in :class:`TerminalSafeStream`); usage errors suggest the nearest option
(:class:`CliParser`). This module imports nothing of replaykit but ``replaykit.errors`` (the
one rule for FIFOs, sockets and devices, :func:`replaykit.errors.special_file_kind`, shared
with the loaders), so ``replaykit.cli.report`` uses it too.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

from ..errors import special_file_kind

__all__ = [
    "OWNER_HELP",
    "MAX_OPTION_FILE_BYTES",
    "MODEL_POLICY_HELP",
    "TOOL_POLICY_HELP",
    "CliFileError",
    "CliHelpFormatter",
    "CliParser",
    "TerminalSafeStream",
    "atomic_write",
    "atomic_write_text",
    "check_input_path",
    "check_option_file",
    "check_parent",
    "check_output",
    "json_safe",
    "load_json_option",
    "parse_json_text",
    "policy_help",
    "read_option_file",
    "terminal_safe",
    "terminal_stdout",
]

#: The largest file an option may name (branch, patch, fixtures, manifest files): 256 MiB.
MAX_OPTION_FILE_BYTES = 256 * 1024 * 1024
#: the help of every command's ``--owner``: pleach rows carry their tenant, every other format
#: is owned by whoever the caller names (tests/io/test_read_events_owner.py)
OWNER_HELP = "owner of logs that record no tenant (every format but pleach)"


class CliFileError(Exception):
    """A file named on the command line that the command will not read or write: exit 2."""


def _kind(mode: int) -> str:
    from ..errors import special_mode_kind  # one vocabulary with the loaders

    return "a directory" if stat.S_ISDIR(mode) else special_mode_kind(mode)


def check_option_file(path: str | os.PathLike[str], option: str, *,
                      max_bytes: int = MAX_OPTION_FILE_BYTES) -> Path:
    """``path`` when it is a regular file no larger than ``max_bytes``; otherwise a
    :class:`CliFileError` naming ``option`` and what the path is.

    >>> check_option_file("/dev/null", "--patch")
    Traceback (most recent call last):
    ...
    replaykit.cli.files.CliFileError: --patch /dev/null: is a device, not a file; name a JSON file
    """
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise CliFileError(f"{option} {p}: no such file") from None
    except OSError as exc:
        raise CliFileError(f"{option} {p}: cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise CliFileError(f"{option} {p}: is {_kind(st.st_mode)}, not a file; name a JSON "
                           "file")
    if st.st_size > max_bytes:
        raise CliFileError(f"{option} {p}: {st.st_size:,} bytes, more than the "
                           f"{max_bytes:,} an option file may hold")
    return p


def read_option_file(path: str | os.PathLike[str], option: str, *,
                     max_bytes: int = MAX_OPTION_FILE_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (see :func:`check_option_file`), read without
    blocking on a FIFO swapped in after the check and never more than ``max_bytes``."""
    p = check_option_file(path, option, max_bytes=max_bytes)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise CliFileError(f"{option} {p}: cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise CliFileError(f"{option} {p}: is not a regular file any more")
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise CliFileError(f"{option} {p}: more than the {max_bytes:,} bytes an option file "
                           "may hold")
    return data


def load_json_option(path: str | os.PathLike[str], option: str) -> Any:
    """The JSON document in the option file ``path``; a :class:`CliFileError` for a file that
    is not UTF-8 JSON or nests too deeply to parse."""
    return parse_json_text(read_option_file(path, option), f"{option} {path}")


def parse_json_text(data: bytes | str, where: str) -> Any:
    """``json.loads(data)`` with its failures as one-line :class:`CliFileError` messages."""
    try:
        return json.loads(data)
    except RecursionError:
        raise CliFileError(f"{where}: JSON nested too deeply to read") from None
    except UnicodeDecodeError as exc:
        raise CliFileError(f"{where}: not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise CliFileError(f"{where}: not JSON ({exc.msg} at line {exc.lineno} column "
                           f"{exc.colno})") from None


def check_input_path(path: str) -> None:
    """Refuse a log path that names a FIFO, socket or device (reading one would block or never
    end); folders, globs and regular files pass (the loaders say what is wrong with those)."""
    kind = special_file_kind(path)  # the loaders' rule (a glob or a missing path: None)
    if kind is not None:
        raise CliFileError(f"{path}: is {kind}, not a log file or folder")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_parent(path: str | os.PathLike[str], option: str) -> None:
    """Refuse an output path whose folder cannot be made: the nearest part of it that
    exists is not a folder (``-o notes.txt/out``: a regular file, a FIFO, a device). A
    :class:`CliFileError` (exit 2) naming that part, before anything is read or written;
    without it the command failed late with the OS's "File exists" (exit 1).

    >>> check_parent("README.md/out", "-o")  # doctest: +SKIP
    Traceback (most recent call last):
    ...
    replaykit.cli.files.CliFileError: -o README.md/out: README.md is a file, not a folder; ...
    """
    p = Path(path)
    for part in p.parents:
        try:
            mode = part.stat().st_mode
        except (FileNotFoundError, NotADirectoryError):
            continue  # made by the command, or under a part that is not a folder (below)
        except OSError:  # permissions, a loop: the write says why
            return
        if stat.S_ISDIR(mode):
            return
        what = "a file" if stat.S_ISREG(mode) else _kind(mode)
        raise CliFileError(f"{option} {p}: {part} is {what}, not a folder; name a path "
                           "inside a folder")


def check_output(path: str | os.PathLike[str], option: str, *, overwrite: bool,
                 inputs: Iterable[str | os.PathLike[str]] = ()) -> Path:
    """``path`` when the command may write it: not a symbolic link, not one of ``inputs``
    (or a file inside an input folder that the command reads), and absent unless
    ``overwrite``. Otherwise a :class:`CliFileError` saying why.

    >>> check_output("README.md", "-o", overwrite=False)  # doctest: +SKIP
    Traceback (most recent call last):
    ...
    replaykit.cli.files.CliFileError: -o README.md: exists; pass --overwrite to replace it
    """
    p = Path(path)
    check_parent(p, option)
    if p.is_symlink():
        raise CliFileError(f"{option} {p}: is a symbolic link; replaykit never writes through "
                           "one (name the file itself)")
    if p.exists():
        for given in inputs:
            g = Path(given)
            if _same_file(p, g):
                raise CliFileError(f"{option} {p}: is an input of this command; name "
                                   "another file")
        if p.is_dir():
            raise CliFileError(f"{option} {p}: is a directory; name a file")
        if not overwrite:
            raise CliFileError(f"{option} {p}: exists; pass --overwrite to replace it")
    return p


@contextlib.contextmanager
def _temp_beside(target: Path) -> Iterator[Path]:
    from .._base.files import temp_file_beside  # the mode Python gives a new file (umask)

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_file_beside(target)
    try:
        yield tmp
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write(target: str | os.PathLike[str], write: Callable[[Path], Any]) -> Path:
    """Call ``write(tmp)`` on a new temporary file beside ``target``, then rename it over
    ``target`` (``os.replace``: a symbolic link at ``target`` is replaced, not followed).
    An exception (Ctrl-C included) removes the temporary file and leaves ``target`` as it was.
    """
    t = Path(target)
    with _temp_beside(t) as tmp:
        write(tmp)
        os.replace(tmp, t)
    return t


def atomic_write_text(target: str | os.PathLike[str], text: str) -> Path:
    """:func:`atomic_write` of UTF-8 ``text``."""
    return atomic_write(target, lambda tmp: tmp.write_text(text, encoding="utf-8"))


# ---------------------------------------------------------------------------- terminal text
# C0 controls but the line end, DEL, C1 controls, and the Unicode format characters that
# reorder or hide text on a terminal (bidi embeddings/overrides/isolates, zero-width marks).
_UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069"
                     "\ufeff]")
_UNSAFE_IN_CELL = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069"
                             "\ufeff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str, *, one_line: bool = True) -> str:
    """``text`` with the characters that would steer a terminal (escape sequences, carriage
    returns, backspaces, bidi overrides) written as visible ``\\xNN`` / ``\\uNNNN`` escapes;
    with ``one_line`` line ends too, so that a run id or a message stays on its line.

    >>> terminal_safe("run\\x1b[31m-1\\n")
    'run\\\\x1b[31m-1\\\\x0a'
    """
    return (_UNSAFE_IN_CELL if one_line else _UNSAFE).sub(_escape, text)


class TerminalSafeStream:
    """A text stream that writes ``terminal_safe(text, one_line=False)`` to the stream it
    wraps: installed on a terminal's stdout by the console command, so that every output mode
    (table, JSON, CSV) shows control characters of the data as escapes."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(terminal_safe(text, one_line=False))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def terminal_stdout() -> Iterator[None]:
    """While the block runs, ``sys.stdout`` escapes control characters when it is a terminal
    (:class:`TerminalSafeStream`): the one place every command's output goes through, in
    the console command and in :func:`replaykit.cli.main` alike. Output to a file or a pipe
    is written exactly (a CSV redirected to a file keeps its bytes)."""
    stream = sys.stdout
    try:
        tty = stream.isatty() and not isinstance(stream, TerminalSafeStream)
    except (AttributeError, ValueError):
        tty = False
    if not tty:
        yield
        return
    sys.stdout = TerminalSafeStream(stream)  # type: ignore[assignment]
    try:
        yield
    finally:
        if isinstance(sys.stdout, TerminalSafeStream):
            sys.stdout = stream


# ---------------------------------------------------------------------------- parsers
class CliHelpFormatter(argparse.HelpFormatter):
    """Help text wrapped between words only (never inside ``recorded-only``)."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False,
                             break_long_words=False)


class CliParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose usage errors suggest the nearest option or command
    (``--tenat`` -> ``did you mean --tenant?``), for every ``replaykit`` subcommand; help is
    wrapped by :class:`CliHelpFormatter` unless another formatter is given."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", CliHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        hint = self._suggestion(message)
        # argparse repeats what was typed (an invalid choice, an unknown option): escaped
        super().error(terminal_safe(message + (f"; did you mean {hint}?" if hint else ""),
                                    one_line=False))

    def _all_options(self) -> list[str]:
        opts = [o for a in self._actions for o in a.option_strings if o.startswith("--")]
        argv = sys.argv[1:] if self._argv is None else self._argv
        for action in self._actions:  # the options of the subcommand named in argv
            if isinstance(action, argparse._SubParsersAction):
                for word in argv:
                    sub = action.choices.get(word)
                    if isinstance(sub, CliParser):
                        sub._argv = argv
                        opts += sub._all_options()
                        break
        return opts

    _argv: list[str] | None = None

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        self._argv = list(args) if args is not None else None
        return super().parse_args(args, namespace)

    def _suggestion(self, message: str) -> str | None:
        m = re.match(r"unrecognized arguments: (.*)", message)
        if m:
            for word in m.group(1).split():
                if word.startswith("-"):
                    near = difflib.get_close_matches(word.split("=", 1)[0],
                                                     self._all_options(), n=1, cutoff=0.6)
                    if near:
                        return near[0]
            return None
        m = re.match(r"argument .*: invalid choice: '(.*)' \(choose from (.*)\)", message)
        if m:
            choices = re.findall(r"'([^']*)'", m.group(2))
            near = difflib.get_close_matches(m.group(1), choices, n=1, cutoff=0.5)
            return near[0] if near else None
        return None


def json_safe(text: str) -> str:
    """JSON text with every character :func:`terminal_safe` escapes written as a JSON
    ``\\uNNNN`` escape (the same document once parsed; such characters only occur inside
    strings, line ends of an indented document excepted)."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


# ---------------------------------------------------------------------------- help texts
#: What each replay policy does, for ``--model-policy`` / ``--tool-policy`` help (every name
#: of replaykit.branch.vocab has a line; tests/cli/test_cli_dx.py checks it).
MODEL_POLICY_HELP = {
    "recorded-only": "each model call gets the recorded output of the same call (exact)",
    "determinism-probe": "a model executor is asked each call several times and compared; "
    "the recorded output is kept (Python API only: needs model_executor=)",
    "blocked": "the model is never called; the recorded output is kept and the call is "
    "logged as blocked (exact)",
    "pinned-live": "a live model answers and its output replaces the recorded one (Python "
    "API only: needs model_executor=)",
    "compatible-live": "as pinned-live, with any compatible model (Python API only)",
}
TOOL_POLICY_HELP = {
    "pause-for-fixture": "a tool call that differs from the recording is served by a fixture; "
    "without one the replay pauses (exit 3) and lists what it needs",
    "recorded-only": "as pause-for-fixture, but a missing fixture fails the replay (exit 1)",
    "blocked": "a differing tool call is never executed and gets an error result BLOCKED",
    "live-readonly": "a tool executor runs differing calls read-only (Python API only: needs "
    "tool_executor=)",
    "live-explicit": "a tool executor runs differing calls (Python API only)",
}


def policy_help(what: str, table: dict[str, str], default: str) -> str:
    """``--model-policy`` / ``--tool-policy`` help: the default, then what each policy does."""
    lines = "; ".join(f"{name}: {text}" for name, text in table.items())
    return f"how {what} are answered (default: the branch's, else {default}). {lines}"

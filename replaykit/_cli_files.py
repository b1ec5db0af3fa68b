"""Deprecated: ``replaykit._cli_files`` moved to ``replaykit.cli.files``.

This shim goes in the next release.
"""

from __future__ import annotations

import importlib as _importlib
import warnings as _warnings

from replaykit.errors import ReplayKitDeprecationWarning as _ReplayKitDeprecationWarning

_warnings.warn("replaykit._cli_files moved to replaykit.cli.files: "
               "import from there (the old path goes in the next release)",
               _ReplayKitDeprecationWarning, stacklevel=2)

_ALL = (
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
    "check_output",
    "json_safe",
    "load_json_option",
    "parse_json_text",
    "policy_help",
    "read_option_file",
    "terminal_safe",
)
__all__ = list(_ALL)  # the names come from __getattr__

#: every name of the old module -> the module that holds it now.
_NEW: dict[str, str] = {
    "Any": "replaykit.cli.files",
    "Callable": "replaykit.cli.files",
    "CliFileError": "replaykit.cli.files",
    "CliHelpFormatter": "replaykit.cli.files",
    "CliParser": "replaykit.cli.files",
    "Iterable": "replaykit.cli.files",
    "Iterator": "replaykit.cli.files",
    "MAX_OPTION_FILE_BYTES": "replaykit.cli.files",
    "MODEL_POLICY_HELP": "replaykit.cli.files",
    "NoReturn": "replaykit.cli.files",
    "Path": "replaykit.cli.files",
    "Sequence": "replaykit.cli.files",
    "TOOL_POLICY_HELP": "replaykit.cli.files",
    "TerminalSafeStream": "replaykit.cli.files",
    "_UNSAFE": "replaykit.cli.files",
    "_UNSAFE_IN_CELL": "replaykit.cli.files",
    "_escape": "replaykit.cli.files",
    "_kind": "replaykit.cli.files",
    "_same_file": "replaykit.cli.files",
    "_temp_beside": "replaykit.cli.files",
    "argparse": "replaykit.cli.files",
    "atomic_write": "replaykit.cli.files",
    "atomic_write_text": "replaykit.cli.files",
    "check_input_path": "replaykit.cli.files",
    "check_option_file": "replaykit.cli.files",
    "check_output": "replaykit.cli.files",
    "contextlib": "replaykit.cli.files",
    "difflib": "replaykit.cli.files",
    "json": "replaykit.cli.files",
    "json_safe": "replaykit.cli.files",
    "load_json_option": "replaykit.cli.files",
    "os": "replaykit.cli.files",
    "parse_json_text": "replaykit.cli.files",
    "policy_help": "replaykit.cli.files",
    "re": "replaykit.cli.files",
    "read_option_file": "replaykit.cli.files",
    "stat": "replaykit.cli.files",
    "sys": "replaykit.cli.files",
    "tempfile": "replaykit.cli.files",
    "terminal_safe": "replaykit.cli.files",
}


def __getattr__(name: str) -> object:
    if name in _NEW:
        return getattr(_importlib.import_module(_NEW[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""The ``replaykit`` command line (console script ``replaykit``, ``python -m replaykit.cli``).

One module per command group: :mod:`.summary`, :mod:`.generate`, :mod:`.branch` (branch and
replay), :mod:`.verify` (``verify-chain``), :mod:`.report`; :mod:`.app` parses and dispatches;
:mod:`._inputs` / :mod:`._output` read and print, :mod:`.messages` words errors, :mod:`.files`
checks the files and terminal.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing
import warnings as _warnings

from replaykit.errors import ReplayKitDeprecationWarning as _ReplayKitDeprecationWarning

if _typing.TYPE_CHECKING:
    from ._output import EXIT_EMPTY, EXIT_INTERRUPTED, EXIT_OK, EXIT_PAUSED, EXIT_USAGE
    from .app import console_main, main, version_text
    from .messages import cli_error_text

__all__ = [
    "EXIT_EMPTY",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PAUSED",
    "EXIT_USAGE",
    "cli_error_text",
    "console_main",
    "main",
    "version_text",
]

#: where each public name lives (imported on first use, PEP 562).
_EXPORTS: dict[str, str] = {
    "EXIT_EMPTY": "._output",
    "EXIT_INTERRUPTED": "._output",
    "EXIT_OK": "._output",
    "EXIT_PAUSED": "._output",
    "EXIT_USAGE": "._output",
    "cli_error_text": ".messages",
    "console_main": ".app",
    "main": ".app",
    "version_text": ".app",
}
#: names the old module had that moved to a module of this package: they still resolve
#: here, with a ReplayKitDeprecationWarning naming the new path, for one release.
_OLD = "replaykit.cli"
_MOVED: dict[str, str] = {
    "Any": ".app",
    "CliFileError": ".files",
    "CliHelpFormatter": ".files",
    "CliParser": ".files",
    "MODEL_POLICY_HELP": ".files",
    "Path": "._inputs",
    "Sequence": ".app",
    "TOOL_POLICY_HELP": ".files",
    "TerminalSafeStream": ".files",
    "_DEFAULT_LIMIT": "._output",
    "_DROPPED_ALL": "._inputs",
    "_EmptyAnswer": "._output",
    "_FORMATS": "._output",
    "_Formatter": ".app",
    "_LIGHT_COMMANDS": ".app",
    "_NAMED_OWNER": "._inputs",
    "_RESULT_VIEWS": "._output",
    "_SELECTOR_FLAGS": ".branch",
    "_Ticker": ".generate",
    "_UsageError": "._output",
    "_all_tenanted": "._inputs",
    "_branch_create": ".branch",
    "_branch_file": ".branch",
    "_branch_intervene": ".branch",
    "_dispatch": ".app",
    "_emit_mapping": "._output",
    "_emit_summary": "._output",
    "_emit_table": "._output",
    "_exit_now": ".app",
    "_expand_inputs": "._inputs",
    "_generate": ".generate",
    "_has_event_ids": ".branch",
    "_help_formatter": ".app",
    "_info": "._output",
    "_input_files": "._inputs",
    "_limit": "._output",
    "_load": "._inputs",
    "_load_options": ".app",
    "_main": ".app",
    "_more": "._output",
    "_note": "._inputs",
    "_one_line_warning": ".app",
    "_parser": ".app",
    "_pick_tenant": ".branch",
    "_progress": "._output",
    "_read": "._inputs",
    "_replace_path": "._output",
    "_replay": ".branch",
    "_replay_view_parser": ".app",
    "_result_view": ".branch",
    "_run": ".app",
    "_safe_frame": "._output",
    "_save_result": ".branch",
    "_say": "._output",
    "_summary": ".summary",
    "_summary_columns": "._output",
    "_summary_table": "._output",
    "_table_options": ".app",
    "_tenant_hint": "._inputs",
    "_text_table": "._output",
    "_view_options": ".app",
    "_write_quarantine": "._inputs",
    "argparse": ".app",
    "atomic_write": ".files",
    "atomic_write_text": ".files",
    "check_input_path": ".files",
    "check_output": ".files",
    "difflib": "._inputs",
    "json": "._output",
    "json_safe": ".files",
    "load_json_option": ".files",
    "pa": "._inputs",
    "parse_json_text": ".files",
    "pd": "._output",
    "policy_help": ".files",
    "sys": ".app",
    "terminal_safe": ".files",
    "warnings": ".app",
}


def __getattr__(name: str) -> object:
    """Import the module behind a public name on first use; forward a moved name with a
    ReplayKitDeprecationWarning that names its new module."""
    if name in _EXPORTS:
        value = getattr(_importlib.import_module(_EXPORTS[name], __name__), name)
        globals()[name] = value
        return value
    if name in _MOVED:
        new = f"{__name__}{_MOVED[name]}"
        _warnings.warn(f"{_OLD}.{name} moved to {new}.{name}: import it from there "
                       "(the old path goes in the next release)", _ReplayKitDeprecationWarning,
                       stacklevel=2)
        return getattr(_importlib.import_module(new), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

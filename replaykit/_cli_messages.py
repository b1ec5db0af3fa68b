"""Deprecated: ``replaykit._cli_messages`` moved to ``replaykit.cli.messages``.

This shim goes in the next release.
"""

from __future__ import annotations

import importlib as _importlib
import warnings as _warnings

from replaykit.errors import ReplayKitDeprecationWarning as _ReplayKitDeprecationWarning

_warnings.warn("replaykit._cli_messages moved to replaykit.cli.messages: "
               "import from there (the old path goes in the next release)",
               _ReplayKitDeprecationWarning, stacklevel=2)

_ALL = (
    "CliParser",
    "TerminalSafeStream",
    "cli_error_text",
    "terminal_safe",
)
__all__ = list(_ALL)  # the names come from __getattr__

#: every name of the old module -> the module that holds it now.
_NEW: dict[str, str] = {
    "CliParser": "replaykit.cli.messages",
    "LoadError": "replaykit.cli.messages",
    "TerminalSafeStream": "replaykit.cli.messages",
    "_REWRITES": "replaykit.cli.messages",
    "cli_error_text": "replaykit.cli.messages",
    "re": "replaykit.cli.messages",
    "terminal_safe": "replaykit.cli.messages",
}


def __getattr__(name: str) -> object:
    if name in _NEW:
        return getattr(_importlib.import_module(_NEW[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

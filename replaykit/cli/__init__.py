"""The ``replaykit`` command line (console script ``replaykit``, ``python -m replaykit.cli``).

One module per command group: :mod:`.summary`, :mod:`.generate`, :mod:`.branch` (branch and
replay), :mod:`.verify` (``verify-chain``), :mod:`.report`; :mod:`.app` parses and dispatches;
:mod:`._inputs` / :mod:`._output` read and print, :mod:`.messages` words errors, :mod:`.files`
checks the files and terminal.
"""

from __future__ import annotations

import typing as _typing

from .._base.delegates import lazy_exports

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


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

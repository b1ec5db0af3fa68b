"""Deprecated: ``replaykit.report.cli`` moved to ``replaykit.cli.report``.

This shim goes in the next release.
"""

from __future__ import annotations

import importlib as _importlib
import warnings as _warnings

from replaykit.errors import ReplayKitDeprecationWarning as _ReplayKitDeprecationWarning

_warnings.warn("replaykit.report.cli moved to replaykit.cli.report: "
               "import from there (the old path goes in the next release)",
               _ReplayKitDeprecationWarning, stacklevel=2)

_ALL = (
    "EXIT_FAILED",
    "EXIT_PAUSED",
    "report_command",
)
__all__ = list(_ALL)  # the names come from __getattr__

#: every name of the old module -> the module that holds it now.
_NEW: dict[str, str] = {
    "Any": "replaykit.cli.report",
    "CliFileError": "replaykit.cli.report",
    "CliParser": "replaykit.cli.report",
    "EXIT_FAILED": "replaykit.cli.report",
    "EXIT_PAUSED": "replaykit.cli.report",
    "MODEL_POLICY_HELP": "replaykit.cli.report",
    "Path": "replaykit.cli.report",
    "Sequence": "replaykit.cli.report",
    "TOOL_POLICY_HELP": "replaykit.cli.report",
    "_cohort": "replaykit.cli.report",
    "_common": "replaykit.cli.report",
    "_load": "replaykit.cli.report",
    "_parser": "replaykit.cli.report",
    "_rca": "replaykit.cli.report",
    "argparse": "replaykit.cli.report",
    "atomic_write": "replaykit.cli.report",
    "check_option_file": "replaykit.cli.report",
    "check_output": "replaykit.cli.report",
    "policy_help": "replaykit.cli.report",
    "report_command": "replaykit.cli.report",
    "sys": "replaykit.cli.report",
}


def __getattr__(name: str) -> object:
    if name in _NEW:
        return getattr(_importlib.import_module(_NEW[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    import runpy

    runpy.run_module("replaykit.cli.report", run_name="__main__", alter_sys=True)

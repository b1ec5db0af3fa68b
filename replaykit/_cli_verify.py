"""Deprecated: ``replaykit._cli_verify`` moved to ``replaykit.cli.verify``.

This shim goes in the next release.
"""

from __future__ import annotations

import importlib as _importlib
import warnings as _warnings

from replaykit.errors import ReplayKitDeprecationWarning as _ReplayKitDeprecationWarning

_warnings.warn("replaykit._cli_verify moved to replaykit.cli.verify: "
               "import from there (the old path goes in the next release)",
               _ReplayKitDeprecationWarning, stacklevel=2)

_ALL = (
    "verify_chain_command",
)
__all__ = list(_ALL)  # the names come from __getattr__

#: every name of the old module -> the module that holds it now.
_NEW: dict[str, str] = {
    "Any": "replaykit.cli.verify",
    "ChainManifest": "replaykit.cli.verify",
    "CliFileError": "replaykit.cli.verify",
    "CliParser": "replaykit.cli.verify",
    "ManifestError": "replaykit.cli.verify",
    "Path": "replaykit.cli.verify",
    "ReplayKitError": "replaykit.cli.verify",
    "Sequence": "replaykit.cli.verify",
    "_PROBLEM_SCHEMA": "replaykit.cli.verify",
    "_SQL_PREFIXES": "replaykit.cli.verify",
    "_load_for_cli": "replaykit.cli.verify",
    "_plain": "replaykit.cli.verify",
    "_problem_frame": "replaykit.cli.verify",
    "_read_manifest_file": "replaykit.cli.verify",
    "_run_starts": "replaykit.cli.verify",
    "_safe": "replaykit.cli.verify",
    "_summary": "replaykit.cli.verify",
    "argparse": "replaykit.cli.verify",
    "check_input_path": "replaykit.cli.verify",
    "cli_error_text": "replaykit.cli.verify",
    "is_dataset": "replaykit.cli.verify",
    "json": "replaykit.cli.verify",
    "json_safe": "replaykit.cli.verify",
    "pa": "replaykit.cli.verify",
    "parse_json_text": "replaykit.cli.verify",
    "pd": "replaykit.cli.verify",
    "read_events": "replaykit.cli.verify",
    "read_option_file": "replaykit.cli.verify",
    "read_parquet": "replaykit.cli.verify",
    "sys": "replaykit.cli.verify",
    "verify_chain": "replaykit.cli.verify",
    "verify_chain_command": "replaykit.cli.verify",
    "warnings": "replaykit.cli.verify",
}


def __getattr__(name: str) -> object:
    if name in _NEW:
        return getattr(_importlib.import_module(_NEW[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

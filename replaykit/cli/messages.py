"""Error messages in the command line's words, shared by every ``replaykit`` subcommand
(:mod:`replaykit.cli`, ``verify-chain``): a module of its own so that the subcommands need not
import the command-line entry point that dispatches to them."""

from __future__ import annotations

import re

from ..errors import LoadError
from .files import CliParser, TerminalSafeStream, terminal_safe

__all__ = ["CliParser", "TerminalSafeStream", "cli_error_text", "terminal_safe"]

_REWRITES = (
    (re.compile(r"""pass errors=["']quarantine["']"""), "pass --errors quarantine"),
    (re.compile(r"""errors=["']quarantine["']"""), "--errors quarantine"),
    (re.compile(r"Pass format=\.\.\. explicitly"), "Pass --format FORMAT"),
    (re.compile(r"""owner=['"]?(ID|acme)['"]?"""), "--owner ID"),
    (re.compile(r"""tenant_id=['"]?(ID|acme)['"]?"""), "--tenant ID"),
)


def cli_error_text(exc: BaseException) -> str:
    """An exception's message in the command line's words (``--errors quarantine``,
    ``--owner ID``, ``--tenant ID``), without Python call syntax or the quotes ``KeyError`` adds.

    >>> cli_error_text(KeyError("no run 'r1'"))
    "no run 'r1'"
    """
    if isinstance(exc, LoadError) and exc.reason == "missing_tenant":
        return (f"{exc.source}: this format records no tenant, so its owner must be named: "
                "pass --owner ID (a tenant id is never guessed; --tenant only filters)")
    if isinstance(exc, TypeError) and "tenant_id" in str(exc) and "required" in str(exc):
        return "a tenant is required here and none was given: pass --tenant ID"
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    for pattern, repl in _REWRITES:
        text = pattern.sub(repl, text)
    return text


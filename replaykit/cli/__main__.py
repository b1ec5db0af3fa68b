"""``python -m replaykit.cli``: the ``replaykit`` command."""

from .app import console_main

if __name__ == "__main__":  # not when a tool imports every module
    console_main()

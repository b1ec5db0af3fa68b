"""Start JupyterLab on notebooks/ for `make lab`: as root too (--allow-root is added then),
with the options of LAB_ARGS (e.g. --no-browser --port 8899), and print the URL to open first.

Usage: python tools/lab.py JUPYTER [LAB OPTION...]
The token is made here (so the printed URL is the one that opens); the port is the one given
with --port (default 8888) and is not silently moved to another when taken; the address is
127.0.0.1 unless --ip names another ("localhost" may resolve to IPv6 only).
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def lab_command(jupyter: str, args: list[str], *, is_root: bool) -> tuple[list[str], str]:
    """The ``jupyter lab`` command line and the URL it will serve.

    >>> cmd, url = lab_command("jupyter", ["--no-browser", "--port", "9000"], is_root=True)
    >>> "--allow-root" in cmd and url.startswith("http://127.0.0.1:9000/lab?token=")
    True
    """
    port, ip, given, ip_given = "8888", "127.0.0.1", False, False
    for i, a in enumerate(args):
        for flag in ("--port", "--ServerApp.port"):
            if a == flag and i + 1 < len(args):
                port, given = args[i + 1], True
            elif a.startswith(flag + "="):
                port, given = a.split("=", 1)[1], True
        for flag in ("--ip", "--ServerApp.ip"):
            if a == flag and i + 1 < len(args):
                ip, ip_given = args[i + 1], True
            elif a.startswith(flag + "="):
                ip, ip_given = a.split("=", 1)[1], True
    token = secrets.token_hex(24)
    host = "127.0.0.1" if ip in ("", "0.0.0.0", "localhost", "*") else ip
    cmd = [jupyter, "lab", f"--config={ROOT / 'tools' / 'jupyter_lab_config.py'}",
           *([] if given else [f"--port={port}"]), *([] if ip_given else [f"--ip={ip}"]),
           "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
           *(["--allow-root"] if is_root else []), *args, str(ROOT / "notebooks")]
    return cmd, f"http://{host}:{port}/lab?token={token}"


def main() -> None:
    jupyter, *args = sys.argv[1:]
    is_root = hasattr(os, "geteuid") and os.geteuid() == 0
    cmd, url = lab_command(jupyter, args, is_root=is_root)
    print(f"JupyterLab on notebooks/: open {url}", flush=True)
    print("(stop it with Ctrl-C; `make lab LAB_ARGS=\"--no-browser --port N\"` for a "
          "headless start on another port)", flush=True)
    os.execv(cmd[0], cmd)


if __name__ == "__main__":
    main()

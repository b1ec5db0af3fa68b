"""Start JupyterLab on notebooks/ for `make lab`: as root too (--allow-root is added then),
with the options of LAB_ARGS (e.g. --no-browser --port 8899), and print the URL to open once
the server answers on it.

Usage: python tools/lab.py JUPYTER [LAB OPTION...]
The token is made here (so the printed URL is the one that opens); the port is the one given
with --port (default 8888) and is not silently moved to another when taken; the address is
127.0.0.1 unless --ip names another ("localhost" may resolve to IPv6 only).

The URL is printed when the server answers ``/api/status`` with the token, not before: Lab
takes seconds to start (20 s on a loaded 2-core machine), and a URL printed at launch was
refused ("connection refused") by anything that opened it at once, a script or a test. The
server runs as a child: Ctrl-C reaches it from the terminal as before (it asks to confirm),
SIGTERM or SIGHUP to this process is passed on to it, and its exit code is this one's.

Before it starts, the checkout's git clean filter for notebooks (tools/setup_git_filters.sh:
outputs and kernel metadata never reach git) is registered when it is not yet, so that saving
a notebook in Lab changes nothing git sees whether or not `make test` ever ran; Lab's
post-save hook (tools/jupyter_lab_config.py) relies on it.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
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
           # no "Jupyter news" toast over the outputs on first open, no news or update fetch:
           # the settings of tools/lab_settings/overrides.json, and no news URL to ask
           f"--LabApp.app_settings_dir={ROOT / 'tools' / 'lab_settings'}",
           "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
           *([] if given else [f"--port={port}"]), *([] if ip_given else [f"--ip={ip}"]),
           "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
           *(["--allow-root"] if is_root else []), *args, str(ROOT / "notebooks")]
    return cmd, f"http://{host}:{port}/lab?token={token}"


def ensure_git_filter(jupyter: str) -> bool:
    """Register the notebooks' clean filter (tools/setup_git_filters.sh, with the nbstripout
    beside ``jupyter``) in this checkout when its git config names another or none; True when
    it was registered now. Outside a git checkout, or without git or nbstripout: nothing."""
    nbstripout = Path(jupyter).with_name("nbstripout")
    if shutil.which("git") is None or not nbstripout.exists():
        return False
    current = subprocess.run(["git", "-C", str(ROOT), "config", "filter.nbstripout.clean"],
                             capture_output=True, text=True, check=False)
    if "tools/nbclean.py" in current.stdout:
        return False
    done = subprocess.run(["bash", str(ROOT / "tools" / "setup_git_filters.sh"),
                           str(nbstripout)], cwd=ROOT, capture_output=True, text=True,
                          check=False)
    return done.returncode == 0 and "nbstripout" in done.stderr


def answers(url: str, timeout: float = 2.0) -> bool:
    """Whether the Jupyter server of ``url`` (the printed ``.../lab?token=...``) answers its
    status API with that token (no proxy: the server is on this machine or the named host)."""
    base, _, token = url.partition("/lab?token=")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"{base}/api/status?token={token}", timeout=timeout) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def serve(cmd: list[str], url: str, *, poll: float = 0.25) -> int:
    """Run the server ``cmd`` as a child, print ``url`` once it answers there, and wait for it;
    the child's exit code."""
    proc = subprocess.Popen(cmd)

    def pass_on(signum: int, _frame: object) -> None:
        if proc.poll() is None:
            proc.send_signal(signum)

    signal.signal(signal.SIGTERM, pass_on)
    signal.signal(signal.SIGHUP, pass_on)
    # Ctrl-C on the terminal reaches the server too (one process group): nothing to pass on.
    signal.signal(signal.SIGINT, lambda _s, _f: None)
    print("starting JupyterLab on notebooks/ (the URL follows once it answers) ...", flush=True)
    while proc.poll() is None:
        if answers(url):
            print(f"JupyterLab on notebooks/: open {url}", flush=True)
            print("(stop it with Ctrl-C; `make lab LAB_ARGS=\"--no-browser --port N\"` for a "
                  "headless start on another port)", flush=True)
            break
        time.sleep(poll)
    return proc.wait()


def trust_notebooks(folder: Path = ROOT / "notebooks") -> int:
    """Sign the notebooks of ``folder`` as ``jupyter trust`` does (in the notary's database;
    the files are not changed), so that the server does not warn they are not trusted when
    they open. Returns how many were signed now (0 without nbformat)."""
    try:
        import nbformat
        from nbformat.sign import NotebookNotary
    except ImportError:
        return 0
    notary, signed = NotebookNotary(), 0
    for path in sorted(folder.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        if not notary.check_signature(nb):
            notary.sign(nb)
            signed += 1
    return signed


def main() -> None:
    jupyter, *args = sys.argv[1:]
    if ensure_git_filter(jupyter):
        print("registered the git filter that keeps notebook outputs out of git "
              "(tools/setup_git_filters.sh)", flush=True)
    is_root = hasattr(os, "geteuid") and os.geteuid() == 0
    trust_notebooks()
    cmd, url = lab_command(jupyter, args, is_root=is_root)
    code = serve(cmd, url)
    if code:
        print(f"JupyterLab exited with code {code} before or while serving {url.split('?')[0]}"
              if code > 0 else f"JupyterLab ended by signal {-code}", file=sys.stderr)
    sys.exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":
    main()

"""The code stays typed and lint-clean: ``make lint`` (ruff + mypy) runs as part of the suite."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> list[str]:
    exe = Path(sys.executable).with_name(name)
    if exe.exists():
        return [str(exe)]
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[dev]'")
    return [found]


def test_ruff_is_clean() -> None:
    proc = subprocess.run([*_tool("ruff"), "check", "replaykit", "tests", "benchmarks"],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_is_clean() -> None:
    proc = subprocess.run([*_tool("mypy"), "replaykit"], cwd=ROOT, capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _cargo() -> str:
    cargo = shutil.which("cargo")
    if cargo is None:
        pytest.fail("cargo is not installed: the native core needs the Rust toolchain")
    # cargo's build output where the Makefile puts it (outside the clone), also when pytest
    # runs on its own: in the clone's native/target a fresh clone compiles every dependency
    # again (33 s of the suite's time, measured)
    os.environ.setdefault("CARGO_TARGET_DIR",
                          str(Path.home() / ".cache" / "replaykit" / "cargo-target"))
    return cargo


def test_native_crate_tests_pass() -> None:
    """The Rust crate's own tests (``cargo test``; ``make lint`` runs them too)."""
    # the scanners' tests need no Python binding: without it, no second build of pyo3; the
    # dev profile (opt-level 1, no LTO) compiles in half the CPU time of --release (measured
    # 14 s against 27 s of CPU on a cold target) and runs the tests as fast
    proc = subprocess.run([_cargo(), "test", "--quiet", "--no-default-features",
                           "--manifest-path", "native/Cargo.toml"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert " passed; 0 failed" in proc.stdout


def test_native_crate_is_clippy_clean() -> None:
    proc = subprocess.run([_cargo(), "clippy", "--quiet", "--release", "--manifest-path",
                           "native/Cargo.toml", "--all-targets", "--", "-D", "warnings"],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


def test_native_crate_is_rustfmt_formatted() -> None:
    for manifest in ("native/Cargo.toml", "native/fuzz/Cargo.toml"):
        proc = subprocess.run([_cargo(), "fmt", "--check", "--manifest-path", manifest],
                              cwd=ROOT, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, manifest + "\n" + proc.stdout[-4000:] + proc.stderr[-2000:]

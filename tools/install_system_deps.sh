#!/usr/bin/env bash
# System packages the test suite needs beyond Python: a PostgreSQL server (database tests)
# and headless Chromium (browser tests of the HTML reports). Used by `make test` and .ci/run.
#
# Installs what is missing with apt-get when it can (as root, or with password-less sudo).
# Otherwise it stops (exit 1) and prints the exact command to run; set
# REPLAYKIT_SKIP_SYSTEM_DEPS=1 to go on without them (those tests then skip locally; in CI,
# CI=true, they fail instead).
set -euo pipefail

missing=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 \
  || missing+=(postgresql)
[ -x "${REPLAYKIT_CHROMIUM:-/usr/bin/chromium}" ] || command -v chromium >/dev/null 2>&1 \
  || missing+=(chromium)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "${REPLAYKIT_SKIP_SYSTEM_DEPS:-}" = "1" ]; then
  echo "install_system_deps: skipping ${missing[*]} (REPLAYKIT_SKIP_SYSTEM_DEPS=1): their tests skip" >&2
  exit 0
fi
sudo=""
if [ "$(id -u)" != "0" ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo"; fi
fi
if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" = "0" ] || [ -n "$sudo" ]; }; then
  echo "install_system_deps: installing ${missing[*]} with apt-get" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  exit 0
fi
{
  echo "The test suite needs: ${missing[*]}. Install with:"
  if command -v apt-get >/dev/null 2>&1; then
    echo "    sudo apt-get install -y ${missing[*]}"
  elif command -v brew >/dev/null 2>&1; then
    echo "    brew install ${missing[*]/chromium/--cask chromium}"
  else
    echo "    (your system's package manager) install ${missing[*]}"
  fi
  echo "or run 'REPLAYKIT_SKIP_SYSTEM_DEPS=1 make test' to skip the tests that need them."
} >&2
exit 1

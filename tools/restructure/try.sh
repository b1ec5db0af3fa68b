#!/bin/bash
# a fresh throwaway worktree from main (or $1) at /tmp/rs-try, then the script
set -e
BASE=${1:-main}
cd /work/main
git worktree remove --force /tmp/rs-try 2>/dev/null || true
git branch -D rs-try 2>/dev/null || true
git worktree add -q /tmp/rs-try -b rs-try $BASE
cp /work/main/replaykit/_core*.so /tmp/rs-try/replaykit/
cd /tmp/rs-try
shift || true
/work/main/.venv/bin/python tools/restructure/apply.py "$@"

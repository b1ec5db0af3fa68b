#!/bin/sh
exec /work/main/.venv/bin/ruff check --fix --quiet --select I001,F401 "$@"

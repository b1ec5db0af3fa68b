#!/usr/bin/env bash
# Keep notebook outputs out of git: register nbstripout as the git filter of *.ipynb in this
# checkout (`make` runs it with the dev install). Outside a git checkout it does nothing.
# Usage: tools/setup_git_filters.sh [NBSTRIPOUT]   (default: .venv/bin/nbstripout)
set -euo pipefail
nbstripout="${1:-.venv/bin/nbstripout}"
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || exit 0
"$nbstripout" --install --attributes .gitattributes
# keep the cell ids tools/make_notebooks.py gives (nbstripout renumbers them by default)
clean="$(git config filter.nbstripout.clean)"
case "$clean" in *--keep-id*) ;; *) git config filter.nbstripout.clean "$clean --keep-id" ;; esac
echo "nbstripout: notebook outputs are stripped when notebooks are committed" >&2

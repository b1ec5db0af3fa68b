#!/usr/bin/env bash
# Keep notebook outputs out of git: register nbstripout as the git filter of *.ipynb in this
# checkout (`make` runs it with the dev install). Outside a git checkout it does nothing.
# Usage: tools/setup_git_filters.sh [NBSTRIPOUT]   (default: .venv/bin/nbstripout)
set -euo pipefail
nbstripout="${1:-.venv/bin/nbstripout}"
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || exit 0
"$nbstripout" --install --attributes .gitattributes
# Git runs filters from the top of the working tree, and every `git worktree` of a clone
# shares its config: a checkout's own .venv is named relative to that top (nbstripout
# --install writes an absolute path, so the last worktree to install would serve them all).
# The clean filter is tools/nbclean.py: nbstripout (keeping the cell ids tools/make_notebooks.py
# gives; nbstripout renumbers them by default), then the metadata a kernel or JupyterLab writes
# on save (language_info, the kernel's kernelspec) reset to the committed kernelspec, so that
# running and saving a notebook in Lab leaves `git status` clean.
top="$(git rev-parse --show-toplevel)"
python="$(cd "$(dirname "$nbstripout")" && pwd)/python"
case "$python" in
  "$top"/*) python="${python#"$top"/}" ;;
esac
git config filter.nbstripout.clean "$python tools/nbclean.py"
git config diff.ipynb.textconv "$python -m nbstripout -t"
echo "nbstripout: notebook outputs are stripped when notebooks are committed" >&2

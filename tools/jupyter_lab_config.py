# JupyterLab settings of `make lab` (passed with --config): saving a notebook changes nothing
# git sees. The git clean filter (tools/nbclean.py, installed by tools/setup_git_filters.sh)
# keeps outputs and kernel metadata out of commits; this hook refreshes the index entry of a
# notebook saved with only outputs changed, which `git status` would otherwise list.
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nbclean import post_save  # noqa: E402

c = get_config()  # noqa: F821
c.FileContentsManager.post_save_hook = post_save

# JupyterLab settings of `make lab` (tools/lab.py passes --config): saving a notebook changes
# nothing git sees. The git clean filter (tools/nbclean.py, installed by
# tools/setup_git_filters.sh) keeps outputs and kernel metadata out of commits; the post-save
# hook refreshes the index entry of a notebook saved with only outputs changed, which
# `git status` would otherwise list (git compares file sizes before asking the filter).
import sys
from pathlib import Path

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nbclean import post_save  # noqa: E402


class GitQuietContentsManager(AsyncLargeFileManager):
    """Jupyter Server's default contents manager, with :func:`nbclean.post_save` after
    every save (registered once, not through the post_save_hook trait, which warns when the
    config is applied twice)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.register_post_save_hook(post_save)


c = get_config()  # noqa: F821
c.ServerApp.contents_manager_class = GitQuietContentsManager

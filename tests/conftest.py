"""Shared fixtures.

Tests that need the real session-log corpus use ``corpus_dir`` (or ``toh_corpus``): it reads
``REPLAYKIT_CORPUS``. Locally, without it, those tests skip; in CI (``CI=true``) a missing corpus
is a failure, never a skip.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data"

# Test modules import helpers from test modules of other package folders by module name
# (`from test_report_browser import ARGS`): every folder of tests/ is importable, whichever
# files pytest was asked to run (pytest itself only puts the folders it collects from on
# sys.path). Test module names are unique across the folders, so none shadows another.
for _folder in sorted(Path(__file__).resolve().parent.iterdir()):
    if _folder.is_dir() and _folder.name not in ("data", "__pycache__") \
            and str(_folder) not in sys.path:
        sys.path.append(str(_folder))


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The corpus root (the folder holding ``toh/``)."""
    value = os.environ.get("REPLAYKIT_CORPUS")
    if not value:
        if _in_ci():
            pytest.fail("REPLAYKIT_CORPUS is not set, and CI=true: corpus tests must run in CI")
        pytest.skip("REPLAYKIT_CORPUS not set")
    path = Path(value)
    if not (path / "toh").is_dir():
        msg = f"REPLAYKIT_CORPUS={value} does not hold a toh/ folder"
        if _in_ci():
            pytest.fail(msg)
        pytest.skip(msg)
    return path


@pytest.fixture(scope="session")
def toh_corpus(corpus_dir: Path) -> Path:
    return corpus_dir / "toh"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA


# ------------------------------------------------------------------ the suite on several cores
# `make test` / `make check` run pytest-xdist with --dist loadscope: each test module, and each
# notebook (nbval runs its cells in order in one kernel), stays on one worker, so a module's
# browser or JupyterLab server, or a notebook's kernel, is never split or started twice.
#: Modules left out of `make check` (marker "slow"): browsers, JupyterLab, the benchmark smoke
#: run and the benchmark harness's timing tests, the seeded loader fuzzing (about 100 s), the
#: real corpus, Dask clusters, the instrumented-SDK OTel traces, the report's scaling
#: measurement, `make lab` run for real.
_SLOW_MODULES = {"test_report_browser", "test_notebook_lab", "test_benchmarks_smoke",
                 "test_fuzz_loaders", "test_corpus_toh", "test_corpus_toh_scripts",
                 "test_dask_engine", "test_otel_instrumentations", "test_lab_live",
                 "test_bench_harness", "test_report_scaling", "test_ingest_processes",
                 "test_lab_save_git", "test_ingest_dask"}
#: Single tests left out of `make check`, by module and name (every parameter): whole-tool
#: runs (mypy over the package, cargo's test build and clippy), the README run end to end with
#: the console script, JupyterLab's contents manager, a dev install into a scratch checkout,
#: seeded fuzz inputs through both loader paths, a 60-seed statistical calibration, an
#: exhaustive sweep of every leaf edge value; and the properties and shell workflows whose
#: every example costs seconds (a console-script process per case, a whole-view byte scan, an
#: OTLP round trip per format). Each takes 5-35 s idle; `make test` runs them. What they
#: cover keeps a quicker test in `make check` (the CLI's own tests, tenancy views, OTel input).
_SLOW_TESTS = {
    ("test_lint", "test_mypy_is_clean"), ("test_lint", "test_native_crate_tests_pass"),
    ("test_lint", "test_native_crate_is_clippy_clean"),
    ("test_docs", "test_readme_quickstart_runs"),
    ("test_dataset_engine", "test_the_scaling_doc_semester_story_runs"),
    ("test_dataset_engine", "test_a_view_runs_on_a_cluster_with_client"),
    ("test_setup", "test_dev_install_sets_up_the_nbstripout_filter"),
    ("test_native", "test_seeded_fuzz_inputs"),
    ("test_datasets", "test_no_drift_sample_reads_as_no_drift_over_many_seeds"),
    ("test_toh_columnwise", "test_every_leaf_edge_value_reads_the_same"),
    ("test_attacks_tenancy", "test_results_of_a_one_tenant_view_hold_no_other_tenant_bytes"),
    ("test_cli_dx", "test_branch_and_generate_writers_refuse_links_inputs_and_existing_paths"),
    ("test_cli_dx", "test_a_glob_of_folders_and_a_folder_walk_read_and_skip_the_same"),
    ("test_cli_branch_replay", "test_the_shell_workflow_through_the_console_script"),
    ("test_cli_newcomer", "test_generate_cohorts_feeds_the_cohort_report_from_the_shell_alone"),
    ("test_replay_complete_diff", "test_any_payload_edit_shows_in_every_view"),
    ("test_run_access", "test_iter_runs_grain_tables_of_random_multi_tenant_logs"),
    ("test_report_paths", "test_report_stamp_and_saved_result_name_no_absolute_path"),
    ("test_otel_roundtrip", "test_pleach_roundtrip"), ("test_otel_roundtrip", "test_toh_roundtrip"),
    ("test_otel_roundtrip", "test_isplay_roundtrip"),
}
#: Fixtures of components `make check` does without (PostgreSQL, the corpus).
_SLOW_FIXTURES = {"pg_server", "pg_uri", "corpus_dir", "toh_corpus"}
#: Fixture parameters that start one of them through request.getfixturevalue (the uri
#: fixture of tests/sql/test_sql.py: "sqlite" runs in `make check`, "postgresql" does not).
_SLOW_PARAMS = {"postgresql"}

# Hypothesis under `make check` (--hypothesis-profile=check): each property runs at most
# CHECK_EXAMPLES examples, its own max_examples included (a profile alone does not lower an
# explicit @settings). `make test` and a plain pytest run use the default profile, and every
# property its full count.
CHECK_EXAMPLES = 10
settings.register_profile("check", max_examples=CHECK_EXAMPLES)


def _cap_examples(item: pytest.Item, cap: int) -> None:
    """Lower the max_examples of ``item``'s Hypothesis test to ``cap`` (read when it runs)."""
    fn = getattr(item, "obj", None)
    own = getattr(fn, "_hypothesis_internal_use_settings", None)
    if getattr(fn, "is_hypothesis_test", False) and own is not None \
            and own.max_examples > cap:
        fn._hypothesis_internal_use_settings = settings(own, max_examples=cap)  # type: ignore[union-attr]


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under ``-m "not slow"`` (`make check`) the slow modules are not even imported: every
    test in them would be deselected, and importing them (Playwright, OpenTelemetry SDKs and
    the instrumented clients, Dask) costs each pytest-xdist worker CPU before any test runs."""
    if config.getoption("markexpr", "") == "not slow" and collection_path.suffix == ".py" \
            and collection_path.stem in _SLOW_MODULES:
        return True
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark what `make check` skips as ``slow``: the modules and tests above, tests using
    PostgreSQL or the corpus, and notebooks; under the ``check`` Hypothesis profile, cap each
    property's examples."""
    capped = settings._current_profile == "check"
    for item in items:
        path = Path(str(getattr(item, "path", item.fspath)))
        name = getattr(item, "originalname", item.name)
        if (path.suffix == ".ipynb" or path.stem in _SLOW_MODULES
                or (path.stem, name) in _SLOW_TESTS
                or _SLOW_FIXTURES & set(getattr(item, "fixturenames", ()))
                or _SLOW_PARAMS & {str(v) for v in getattr(
                    getattr(item, "callspec", None), "params", {}).values()}):
            item.add_marker(pytest.mark.slow)
        if capped:
            _cap_examples(item, CHECK_EXAMPLES)
    items[:] = longest_first(items)


# ------------------------------------------------------------------ the order files run in
#: Each test file's (or notebook's) summed test time, measured (tools/test_durations.py). Used
#: only to order: `--dist loadscope` keeps a file on one pytest-xdist worker and hands files out
#: in collection order (`--no-loadscope-reorder` in the Makefile: xdist's own order, most tests
#: first, ran the one-test files that take a minute -- the benchmark smoke run, the JupyterLab
#: save -- last, one worker busy while the other idled). Costliest first, the short files fill
#: the end. A file not listed counts as UNLISTED_SECONDS per test.
DURATIONS = REPO / "tests" / "durations.json"
UNLISTED_SECONDS = 0.3


def longest_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """``items`` with whole files ordered by their measured cost, costliest first; each file's
    tests keep their order (nbval runs a notebook's cells in order in one kernel), and files of
    equal cost keep collection order, so every worker collects the same sequence."""
    import json

    known: dict[str, float] = json.loads(DURATIONS.read_text()) if DURATIONS.is_file() else {}
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        path = Path(str(getattr(item, "path", item.fspath)))
        try:
            rel = path.resolve().relative_to(REPO).as_posix()
        except ValueError:
            rel = path.as_posix()
        files.setdefault(rel, []).append(item)
    cost = {rel: known.get(rel, UNLISTED_SECONDS * len(group)) for rel, group in files.items()}
    order = sorted(files, key=lambda rel: -cost[rel])  # stable: ties keep collection order
    return [item for rel in order for item in files[rel]]


# ------------------------------------------------------------------ notebooks as after `make demo`
# nbval's kernels run the notebooks with only what `make demo` installs importable (issue 42,
# item 1): each starts with IPYTHONDIR set to a folder whose IPython start-up file blocks every
# other installed module (tools/demo_env.py, kernel_ipythondir), before the first cell. So the
# one nbval pass checks both that each notebook runs and that it runs after `make demo` alone.
# A kernel that did not block fails its notebook's first cell (the start-up file's marker is
# checked); tests/test_demo_env.py checks the mechanism itself and that it can fail.
sys.path.insert(0, str(REPO / "tools"))
import demo_env  # noqa: E402

sys.path.remove(str(REPO / "tools"))


class _DemoEnvKernels:
    """Registered as a plugin (not a conftest hook, which pytest would apply only to items
    under tests/): sets IPYTHONDIR while an nbval notebook's first cell is set up, when nbval
    starts the notebook's kernel, and checks that the kernel blocked the modules."""

    def __init__(self) -> None:
        self.folder: Path | None = None
        self.started: set[str] = set()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Iterator[None]:
        path = Path(str(getattr(item, "path", item.fspath)))
        notebook = str(path)
        if path.suffix != ".ipynb" or notebook in self.started:
            return (yield)
        self.started.add(notebook)
        if self.folder is None:
            self.folder = demo_env.kernel_ipythondir(
                Path(tempfile.mkdtemp(prefix="replaykit-demo-ipython-")))
        before = set(demo_env.kernel_markers(self.folder))
        old = os.environ.get("IPYTHONDIR")
        os.environ["IPYTHONDIR"] = str(self.folder)
        try:
            result = yield
        finally:
            if old is None:
                del os.environ["IPYTHONDIR"]
            else:
                os.environ["IPYTHONDIR"] = old
        new = set(demo_env.kernel_markers(self.folder)) - before
        assert new, (f"{path.name}: its kernel did not block what `make demo` does not install "
                     f"(no marker from {self.folder}/profile_default/startup)")
        return result

    def pytest_unconfigure(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.has_plugin("replaykit-demo-env-kernels"):
        config.pluginmanager.register(_DemoEnvKernels(), "replaykit-demo-env-kernels")

"""No old path is kept: replaykit was never released, so the module paths and names that moved
in issue 32's restructure (and the isplay loader's branch vocabulary before it) are gone, not
forwarded with a warning (issues 42 and 45). Each old path fails as any missing module or name
does, and its replacement is where the table says."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

import replaykit as rk

ROOT = Path(__file__).resolve().parents[1]

#: old module -> (its replacement, a name the replacement holds)
OLD_MODULES = {
    'replaykit._cli_files': ('replaykit.cli.files', 'MAX_OPTION_FILE_BYTES'),
    'replaykit._cli_messages': ('replaykit.cli.messages', 'CliParser'),
    'replaykit._cli_verify': ('replaykit.cli.verify', 'verify_chain_command'),
    'replaykit._integrity_dask': ('replaykit.integrity._dask', 'dask_verify_chain'),
    'replaykit._toh_api': ('replaykit.toh', 'CHUNK_TYPES'),
    'replaykit.cachekey': ('replaykit.provenance.cachekey', 'KEY_PREFIX'),
    'replaykit.report.cli': ('replaykit.cli.report', 'EXIT_FAILED'),
    'replaykit.script_player': ('replaykit.toh.player', 'ScriptCallsExhaustedError'),
    'replaykit.stamps': ('replaykit.provenance', 'STAMP_FIELDS'),
    'replaykit.toh_scripts': ('replaykit.toh.scripts', 'CHUNK_TYPES'),
    # issue 45's top floor: the base layer's helpers in one package, grain tables in eventlog,
    # the OTel writer beside its reader
    'replaykit._align': ('replaykit._base.align', 'align'),
    'replaykit._delegates': ('replaykit._base.delegates', 'provide'),
    'replaykit._display': ('replaykit._base.display', 'for_people'),
    'replaykit._envelope': ('replaykit._base.envelope', 'content_first'),
    'replaykit._files': ('replaykit._base.files', 'temp_file_beside'),
    'replaykit._json': ('replaykit._base.json', 'canonical_json'),
    'replaykit._native': ('replaykit._base.native', 'enabled'),
    'replaykit.grain': ('replaykit.eventlog.grain', 'calls_df'),
    'replaykit.otel_export': ('replaykit.io.otel.export', 'to_otel'),
}

#: names that moved out of a module that stays: (module, name, where it is now)
MOVED_NAMES = {
    ('replaykit.branch.replay', '_CONTENT_COLUMNS', 'replaykit.branch._recorded'),
    ('replaykit.branch.replay', '_MODEL_KINDS', 'replaykit.branch._selectors'),
    ('replaykit.branch.replay', '_REF_SELECTORS', 'replaykit.branch._selectors'),
    ('replaykit.branch.replay', '_call_block', 'replaykit.branch._selectors'),
    ('replaykit.branch.replay', '_find', 'replaykit.branch._selectors'),
    ('replaykit.branch.replay', '_refs_match', 'replaykit.branch._selectors'),
    ('replaykit.cli', '_DEFAULT_LIMIT', 'replaykit.cli._output'),
    ('replaykit.cli', '_DROPPED_ALL', 'replaykit.cli._inputs'),
    ('replaykit.cli', '_EmptyAnswer', 'replaykit.cli._output'),
    ('replaykit.cli', '_FORMATS', 'replaykit.cli._output'),
    ('replaykit.cli', '_Formatter', 'replaykit.cli.app'),
    ('replaykit.cli', '_LIGHT_COMMANDS', 'replaykit.cli.app'),
    ('replaykit.cli', '_RESULT_VIEWS', 'replaykit.cli._output'),
    ('replaykit.cli', '_SELECTOR_FLAGS', 'replaykit.cli.branch'),
    ('replaykit.cli', '_Ticker', 'replaykit.cli.generate'),
    ('replaykit.cli', '_UsageError', 'replaykit.cli._output'),
    ('replaykit.cli', '_all_tenanted', 'replaykit.cli._inputs'),
    ('replaykit.cli', '_branch_create', 'replaykit.cli.branch'),
    ('replaykit.cli', '_branch_file', 'replaykit.cli.branch'),
    ('replaykit.cli', '_branch_intervene', 'replaykit.cli.branch'),
    ('replaykit.cli', '_dispatch', 'replaykit.cli.app'),
    ('replaykit.cli', '_emit_mapping', 'replaykit.cli._output'),
    ('replaykit.cli', '_emit_summary', 'replaykit.cli._output'),
    ('replaykit.cli', '_emit_table', 'replaykit.cli._output'),
    ('replaykit.cli', '_exit_now', 'replaykit.cli.app'),
    ('replaykit.cli', '_expand_inputs', 'replaykit.cli._inputs'),
    ('replaykit.cli', '_generate', 'replaykit.cli.generate'),
    ('replaykit.cli', '_has_event_ids', 'replaykit.cli.branch'),
    ('replaykit.cli', '_help_formatter', 'replaykit.cli.app'),
    ('replaykit.cli', '_info', 'replaykit.cli._output'),
    ('replaykit.cli', '_input_files', 'replaykit.cli._inputs'),
    ('replaykit.cli', '_limit', 'replaykit.cli._output'),
    ('replaykit.cli', '_load', 'replaykit.cli._inputs'),
    ('replaykit.cli', '_load_options', 'replaykit.cli.app'),
    ('replaykit.cli', '_main', 'replaykit.cli.app'),
    ('replaykit.cli', '_more', 'replaykit.cli._output'),
    ('replaykit.cli', '_note', 'replaykit.cli._inputs'),
    ('replaykit.cli', '_one_line_warning', 'replaykit.cli.app'),
    ('replaykit.cli', '_parser', 'replaykit.cli.app'),
    ('replaykit.cli', '_pick_tenant', 'replaykit.cli.branch'),
    ('replaykit.cli', '_progress', 'replaykit.cli._output'),
    ('replaykit.cli', '_read', 'replaykit.cli._inputs'),
    ('replaykit.cli', '_replace_path', 'replaykit.cli._output'),
    ('replaykit.cli', '_replay', 'replaykit.cli.branch'),
    ('replaykit.cli', '_replay_view_parser', 'replaykit.cli.app'),
    ('replaykit.cli', '_result_view', 'replaykit.cli.branch'),
    ('replaykit.cli', '_run', 'replaykit.cli.app'),
    ('replaykit.cli', '_safe_frame', 'replaykit.cli._output'),
    ('replaykit.cli', '_save_result', 'replaykit.cli.branch'),
    ('replaykit.cli', '_say', 'replaykit.cli._output'),
    ('replaykit.cli', '_summary', 'replaykit.cli.summary'),
    ('replaykit.cli', '_summary_columns', 'replaykit.cli._output'),
    ('replaykit.cli', '_summary_table', 'replaykit.cli._output'),
    ('replaykit.cli', '_table_options', 'replaykit.cli.app'),
    ('replaykit.cli', '_tenant_hint', 'replaykit.cli._inputs'),
    ('replaykit.cli', '_text_table', 'replaykit.cli._output'),
    ('replaykit.cli', '_view_options', 'replaykit.cli.app'),
    ('replaykit.cli', '_write_quarantine', 'replaykit.cli._inputs'),
    ('replaykit.eventlog', 'LegacyDatasetWarning', 'replaykit.eventlog.dataset'),
    ('replaykit.eventlog', 'NO_TENANT_QUARANTINE_FILE', 'replaykit.eventlog.dataset'),
    ('replaykit.eventlog', 'QUARANTINE_FILE', 'replaykit.eventlog.dataset'),
    ('replaykit.eventlog', 'RUNS_FILE', 'replaykit.eventlog.dataset'),
    ('replaykit.eventlog', 'RUN_STAT_COLUMNS', 'replaykit.eventlog.log'),
    ('replaykit.eventlog', 'TENANT_KEY', 'replaykit.eventlog.log'),
    ('replaykit.eventlog', '_CAMEL', 'replaykit.eventlog.log'),
    ('replaykit.eventlog', '_DICT', 'replaykit.eventlog.log'),
    ('replaykit.eventlog', '_GrainCache', 'replaykit.eventlog.log'),
    ('replaykit.eventlog', '_NULLABLE_PANDAS', 'replaykit.eventlog.log'),
    ('replaykit.eventlog', '_RunIndex', 'replaykit.eventlog._runs'),
    ('replaykit.eventlog', '_as_quarantine', 'replaykit.eventlog.log'),
    ('replaykit.eventlog', '_detached', 'replaykit.eventlog.log'),
    ('replaykit.eventlog', '_distinct_strings', 'replaykit.eventlog._runs'),
    ('replaykit.eventlog', '_empty_runs', 'replaykit.eventlog.log'),
    ('replaykit.eventlog', '_expand_attrs', 'replaykit.eventlog.log'),
    ('replaykit.eventlog', '_grain_rows', 'replaykit.eventlog._runs'),
    ('replaykit.eventlog', '_key_positions', 'replaykit.eventlog._runs'),
    ('replaykit.eventlog', '_partition_dirs', 'replaykit.eventlog.dataset'),
    ('replaykit.eventlog', '_partition_error', 'replaykit.eventlog.dataset'),
    ('replaykit.eventlog', '_read_dataset', 'replaykit.eventlog.dataset'),
    ('replaykit.eventlog', '_run_start_rows', 'replaykit.eventlog._runs'),
    ('replaykit.eventlog', '_segment_sums', 'replaykit.eventlog._runs'),
    ('replaykit.eventlog', '_side_file', 'replaykit.eventlog.dataset'),
    ('replaykit.eventlog', '_snake', 'replaykit.eventlog.log'),
    ('replaykit.eventlog', '_str_values', 'replaykit.eventlog._runs'),
    ('replaykit.eventlog', '_value_codes', 'replaykit.eventlog._runs'),
    ('replaykit.eventlog', '_warn_absent', 'replaykit.eventlog.log'),
    ('replaykit.eventlog', 'partition_files', 'replaykit.eventlog.dataset'),
    ('replaykit.eventlog', 'read_partition_files', 'replaykit.eventlog.dataset'),
    ('replaykit.eventlog', 'to_pandas', 'replaykit.eventlog.log'),
    ('replaykit.integrity', '_ARGS_COLUMNS', 'replaykit.integrity.derived'),
    ('replaykit.integrity', '_CONTROL_BYTES', 'replaykit.integrity.content'),
    ('replaykit.integrity', '_ESCAPED_BYTES', 'replaykit.integrity.content'),
    ('replaykit.integrity', '_ESCAPES', 'replaykit.integrity.content'),
    ('replaykit.integrity', '_HASH_BLOCK_ROWS', 'replaykit.integrity.chain'),
    ('replaykit.integrity', '_HEX64', 'replaykit.integrity.manifest'),
    ('replaykit.integrity', '_LS', 'replaykit.integrity.content'),
    ('replaykit.integrity', '_MANIFEST_KEY', 'replaykit.integrity.manifest'),
    ('replaykit.integrity', '_MANIFEST_VERSION', 'replaykit.integrity.manifest'),
    ('replaykit.integrity', '_MAX_SAFE_INT', 'replaykit.integrity.content'),
    ('replaykit.integrity', '_PROBLEM_SCHEMA', 'replaykit.integrity.problems'),
    ('replaykit.integrity', '_PROOF_VERSION', 'replaykit.integrity.proofs'),
    ('replaykit.integrity', '_PROOF_VERSIONS', 'replaykit.integrity.proofs'),
    ('replaykit.integrity', '_Pieces', 'replaykit.integrity.content'),
    ('replaykit.integrity', '_SWITCH_INTERVAL_S', 'replaykit.integrity.verify'),
    ('replaykit.integrity', '_TS_TYPE', 'replaykit.integrity.content'),
    ('replaykit.integrity', '_as_manifest', 'replaykit.integrity.verify'),
    ('replaykit.integrity', '_as_table', 'replaykit.integrity.chain'),
    ('replaykit.integrity', '_blocks_ahead', 'replaykit.integrity.chain'),
    ('replaykit.integrity', '_chain_problems', 'replaykit.integrity.verify'),
    ('replaykit.integrity', '_chain_spec', 'replaykit.integrity.content'),
    ('replaykit.integrity', '_compare_derived', 'replaykit.integrity.derived'),
    ('replaykit.integrity', '_content_column', 'replaykit.integrity.content'),
    ('replaykit.integrity', '_derived_member', 'replaykit.integrity.content'),
    ('replaykit.integrity', '_derived_member_pieces', 'replaykit.integrity.content'),
    ('replaykit.integrity', '_derived_rest', 'replaykit.integrity.derived'),
    ('replaykit.integrity', '_derived_scalar', 'replaykit.integrity.content'),
    ('replaykit.integrity', '_derived_side', 'replaykit.integrity.derived'),
    ('replaykit.integrity', '_digests', 'replaykit.integrity.chain'),
    ('replaykit.integrity', '_escape_strings', 'replaykit.integrity.content'),
    ('replaykit.integrity', '_formats', 'replaykit.integrity.content'),
    ('replaykit.integrity', '_hashable_ranges', 'replaykit.integrity.content'),
    ('replaykit.integrity', '_head_problems', 'replaykit.integrity.verify'),
    ('replaykit.integrity', '_hex_column', 'replaykit.integrity.chain'),
    ('replaykit.integrity', '_holds_any', 'replaykit.integrity.content'),
    ('replaykit.integrity', '_json_number', 'replaykit.integrity.content'),
    ('replaykit.integrity', '_json_string', 'replaykit.integrity.content'),
    ('replaykit.integrity', '_json_string_column', 'replaykit.integrity.content'),
    ('replaykit.integrity', '_json_value_column', 'replaykit.integrity.content'),
    ('replaykit.integrity', '_manifest_body', 'replaykit.integrity.manifest'),
    ('replaykit.integrity', '_manifest_digest', 'replaykit.integrity.manifest'),
    ('replaykit.integrity', '_manifest_problems', 'replaykit.integrity.verify'),
    ('replaykit.integrity', '_normalise_heads', 'replaykit.integrity.verify'),
    ('replaykit.integrity', '_offsets', 'replaykit.integrity.content'),
    ('replaykit.integrity', '_parsed_of', 'replaykit.integrity.derived'),
    ('replaykit.integrity', '_plain', 'replaykit.integrity.content'),
    ('replaykit.integrity', '_pleach_rows', 'replaykit.integrity.derived'),
    ('replaykit.integrity', '_problem_frame', 'replaykit.integrity.problems'),
    ('replaykit.integrity', '_problems', 'replaykit.integrity.problems'),
    ('replaykit.integrity', '_proof_content', 'replaykit.integrity.proofs'),
    ('replaykit.integrity', '_quoted', 'replaykit.integrity.content'),
    ('replaykit.integrity', '_row_hash', 'replaykit.integrity.chain'),
    ('replaykit.integrity', '_sealed_rows', 'replaykit.integrity.content'),
    ('replaykit.integrity', '_short_switches', 'replaykit.integrity.verify'),
    ('replaykit.integrity', '_switch_lock', 'replaykit.integrity.verify'),
    ('replaykit.integrity', '_switch_saved', 'replaykit.integrity.verify'),
    ('replaykit.integrity', '_switch_users', 'replaykit.integrity.verify'),
    ('replaykit.integrity', '_text_mismatch', 'replaykit.integrity.derived'),
    ('replaykit.integrity', '_ts_micros', 'replaykit.integrity.content'),
    ('replaykit.integrity', '_typed_of', 'replaykit.integrity.derived'),
    ('replaykit.integrity', '_verify_hashes', 'replaykit.integrity.chain'),
    ('replaykit.report._core', 'TREND_MIN_SPAN', 'replaykit.report._cohort_page'),
    ('replaykit.report._core', '_CATEGORY_KEYS', 'replaykit.report._parts'),
    ('replaykit.report._core', '_DEPENDENCIES', 'replaykit.report._parts'),
    ('replaykit.report._core', '_cohort_table', 'replaykit.report._cohort_page'),
    ('replaykit.report._core', '_escape_categories', 'replaykit.report._parts'),
    ('replaykit.report._core', '_forest', 'replaykit.report._cohort_page'),
    ('replaykit.report._core', '_go_scatter', 'replaykit.report._cohort_page'),
    ('replaykit.report._core', '_panel_title', 'replaykit.report._cohort_page'),
    ('replaykit.report._core', '_sha256', 'replaykit.report._parts'),
    ('replaykit.report._core', '_trends', 'replaykit.report._cohort_page'),
    ('replaykit.report._core', '_version', 'replaykit.report._parts'),
    ('replaykit.report._core', 'cohort', 'replaykit.report._cohort_page'),
    ('replaykit.report._core', 'trend_range', 'replaykit.report._cohort_page'),
    ('replaykit.sql', '_AUDIT_CHECKS', 'replaykit.sql.rls'),
    ('replaykit.sql', '_BATCH_ROWS', 'replaykit.sql.connection'),
    ('replaykit.sql', '_CANON_TO_DB', 'replaykit.sql.connection'),
    ('replaykit.sql', '_COLUMNS', 'replaykit.sql.connection'),
    ('replaykit.sql', '_Check', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_DB_TO_CANON', 'replaykit.sql.connection'),
    ('replaykit.sql', '_FIXES', 'replaykit.sql.connection'),
    ('replaykit.sql', '_Fetched', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_IDENT', 'replaykit.sql.connection'),
    ('replaykit.sql', '_INSTALL_FEATURE', 'replaykit.sql.connection'),
    ('replaykit.sql', '_MALFORMED_FIX', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_PARALLEL_MIN_PAGES', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_PARALLEL_MIN_ROWS', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_PLAIN_REQUIRED', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_canonical_payloads', 'replaykit.sql.read'),
    ('replaykit.sql', '_connect', 'replaykit.sql.connection'),
    ('replaykit.sql', '_ctid_ranges', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_db_batch', 'replaykit.sql.write'),
    ('replaykit.sql', '_db_errors', 'replaykit.sql.connection'),
    ('replaykit.sql', '_dialect_of', 'replaykit.sql.connection'),
    ('replaykit.sql', '_dollar', 'replaykit.sql.rls'),
    ('replaykit.sql', '_driver_errors', 'replaykit.sql.connection'),
    ('replaykit.sql', '_drop_sentinel', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_failing_rows', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_fetch_pg_filtered', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_fetch_postgresql', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_fetch_rows', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_fetch_sqlite', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_fetch_sqlite_guarded', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_has_rowid', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_ident', 'replaykit.sql.rls'),
    ('replaykit.sql', '_iso', 'replaykit.sql.connection'),
    ('replaykit.sql', '_layout', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_literal', 'replaykit.sql.rls'),
    ('replaykit.sql', '_numeric_affinity', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_pg_exact', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_plain_select', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_plain_to_log', 'replaykit.sql.read'),
    ('replaykit.sql', '_quote_table', 'replaykit.sql.connection'),
    ('replaykit.sql', '_read_log', 'replaykit.sql.read'),
    ('replaykit.sql', '_read_table', 'replaykit.sql.read'),
    ('replaykit.sql', '_reason_of', 'replaykit.sql.connection'),
    ('replaykit.sql', '_recheck', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_require_sqlite_file', 'replaykit.sql.connection'),
    ('replaykit.sql', '_rls_check_block', 'replaykit.sql.rls'),
    ('replaykit.sql', '_rls_grant_statements', 'replaykit.sql.rls'),
    ('replaykit.sql', '_rls_names', 'replaykit.sql.rls'),
    ('replaykit.sql', '_rls_setup_statements', 'replaykit.sql.rls'),
    ('replaykit.sql', '_rowid_ranges', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_run_statements', 'replaykit.sql.rls'),
    ('replaykit.sql', '_script', 'replaykit.sql.rls'),
    ('replaykit.sql', '_select_sql', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_short', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_shown_keys', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_snapshot_sql', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_sql_error', 'replaykit.sql.connection'),
    ('replaykit.sql', '_sqlite_checks', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_sqlite_literals', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_sqlite_target', 'replaykit.sql.connection'),
    ('replaykit.sql', '_sqlite_tenant_collisions', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_sqlite_times', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_sqlite_ts_kind', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_sqlite_where', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_str_list', 'replaykit.sql.connection'),
    ('replaykit.sql', '_table_columns', 'replaykit.sql._fetch'),
    ('replaykit.sql', '_tenant_list', 'replaykit.sql.connection'),
    ('replaykit.sql', '_to_canonical', 'replaykit.sql.read'),
    ('replaykit.sql', '_to_log', 'replaykit.sql.read'),
    ('replaykit.sql', '_under_rls', 'replaykit.sql.write'),
    ('replaykit.sql', '_utc', 'replaykit.sql.connection'),
    ('replaykit.sql', '_well_typed', 'replaykit.sql.read'),
    ('replaykit.sql', '_write', 'replaykit.sql.write'),
    ('replaykit.sql', 'malformed_problems', 'replaykit.sql._fetch'),
}


MOVED_NAMES |= {
    ("replaykit.integrity", "verify_chain_command", "replaykit.cli.verify"),
    ("replaykit.io.isplay", "IsplayBranch", "replaykit.branch.types"),
    ("replaykit.io.isplay", "MODEL_POLICIES", "replaykit.branch.vocab"),
    ("replaykit.io.isplay", "read_isplay_fixtures", "replaykit.branch.fixtures"),
    ("replaykit.provenance", "_FLOATS", "replaykit.provenance.rules"),
}


@pytest.mark.parametrize("old", sorted(OLD_MODULES))
def test_an_old_module_path_is_gone(old: str) -> None:
    new, name = OLD_MODULES[old]
    sys.modules.pop(old, None)
    with pytest.raises(ModuleNotFoundError, match=re.escape(repr(old))):
        importlib.import_module(old)
    rel = old.replace(".", "/") + ".py"
    assert not (ROOT / rel).exists()
    assert hasattr(importlib.import_module(new), name)  # the replacement is there


@pytest.mark.parametrize(("module", "name", "new"), sorted(MOVED_NAMES))
def test_a_moved_name_is_gone_from_its_old_module(module: str, name: str, new: str) -> None:
    mod = importlib.import_module(module)
    with pytest.raises(AttributeError, match=f"has no attribute {name!r}"):
        getattr(mod, name)
    assert hasattr(importlib.import_module(new), name)  # the new home holds it


def test_no_deprecation_machinery_is_left() -> None:
    """No module warns about an old name or meaning, and the warning class went with them."""
    assert not hasattr(rk, "ReplayKitDeprecationWarning")
    assert "ReplayKitDeprecationWarning" not in rk.__all__
    with pytest.raises(ImportError):
        from replaykit.errors import ReplayKitDeprecationWarning  # noqa: F401
    words = re.compile(r"DeprecationWarning|deprecat|next release|moved to|_MOVED", re.I)
    hits = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
            for p in sorted((ROOT / "replaykit").rglob("*.py"))
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if words.search(line)]
    assert hits == []
    assert words.search("x moved to y") and words.search("warnings.warn(DeprecationWarning)")


def test_the_top_level_holds_no_forwarding_module() -> None:
    top = {p.stem for p in (ROOT / "replaykit").glob("*.py")}
    assert not top & {"stamps", "cachekey", "toh_scripts", "script_player", "_toh_api",
                      "_cli_files", "_cli_messages", "_cli_verify", "_integrity_dask"}

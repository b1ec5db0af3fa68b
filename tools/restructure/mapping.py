"""The restructure of issue 32 as data: which file moves where, and how split files are cut.

Extend this file when apply.py fails on a later main:

* "not assigned a target: replaykit/x.py: new_function" -> add ``new_function`` to the list of
  the target module it belongs with in SPLITS["replaykit/x.py"]["targets"].
* a new whole file that belongs in a package -> add it to MOVES.
* "module would have N lines" -> move some names to another (or a new) target.

Anonymous top-level statements (a ``for`` loop filling a table, ``del _code``, a subscript
assignment) follow the definition right above them; the script lists each such attachment.
"""

from __future__ import annotations

#: whole files: old path -> new path (git mv; imports inside are re-based).
MOVES: dict[str, str] = {
    "replaykit/cli/verify.py": "replaykit/cli/verify.py",
    "replaykit/cli/messages.py": "replaykit/cli/messages.py",
    "replaykit/cli/files.py": "replaykit/cli/files.py",
    "replaykit/cli/report.py": "replaykit/cli/report.py",
    "replaykit/toh/scripts.py": "replaykit/toh/scripts.py",
    "replaykit/toh/player.py": "replaykit/toh/player.py",
    "replaykit/toh/__init__.py": "replaykit/toh/__init__.py",  # already the rk.toh face
    "replaykit/integrity/_dask.py": "replaykit/integrity/_dask.py",
    "replaykit/provenance/cachekey.py": "replaykit/provenance/cachekey.py",
}

#: split files. "targets": new module path -> names (top-level definitions, in any order).
#: "face": the package __init__ generated for the old path when the old module becomes a
#: package of the same name (or None when the old file stays, holding part of its names).
#: "docfrom": the target that keeps the old module docstring. "bare": what the old dotted
#: module path means in code strings (e.g. ``"replaykit.provenance"`` in a registry).
SPLITS: dict[str, dict] = {
    "replaykit/integrity/": {
        "face": "replaykit/integrity/__init__.py",
        "docfrom": "replaykit/integrity/chain.py",
        "targets": {
            "replaykit/integrity/content.py": [
                "CONTENT_COLUMNS", "_MAX_SAFE_INT", "_TS_TYPE", "_LS", "_ESCAPES",
                "_json_string", "_json_number", "canonical_json", "_ts_micros",
                "source_format", "REDERIVED_FORMAT", "SEALED_MEMBERS", "_derived_scalar",
                "row_content", "_plain", "_ESCAPED_BYTES", "_CONTROL_BYTES",
                "_holds_any", "_escape_strings", "_quoted", "_json_string_column", "_formats",
                "_sealed_rows", "_json_value_column", "_Pieces", "_derived_member_pieces",
                "_derived_member", "_hashable_ranges", "_content_column", "_chain_spec", "_offsets",
            ],
            "replaykit/integrity/chain.py": [
                "GENESIS", "_row_hash", "_digests", "_HASH_BLOCK_ROWS", "_blocks_ahead",
                "_verify_hashes", "_hex_column", "_as_table", "stamp_chain", "chain_heads",
            ],
            "replaykit/integrity/manifest.py": [
                "_MANIFEST_VERSION", "_HEX64", "_MANIFEST_KEY", "ManifestError", "RunHead",
                "_manifest_body", "_manifest_digest", "ChainManifest", "chain_manifest",
            ],
            "replaykit/integrity/derived.py": [
                "_pleach_rows", "_typed_of", "_parsed_of", "_text_mismatch", "_ARGS_COLUMNS",
                "_derived_side", "_derived_rest", "_compare_derived",
            ],
            "replaykit/integrity/problems.py": [
                "PROBLEM_KINDS", "_PROBLEM_SCHEMA", "_problem_frame", "_problems",
            ],
            "replaykit/integrity/verify.py": [
                "_as_manifest", "_normalise_heads", "_head_problems", "_manifest_problems",
                "_SWITCH_INTERVAL_S", "_switch_lock", "_switch_users", "_switch_saved",
                "_short_switches", "verify_chain", "_chain_problems",
            ],
            "replaykit/integrity/proofs.py": [
                "_PROOF_VERSION", "_PROOF_VERSIONS", "_proof_content", "chain_proof",
                "verify_proof",
            ],
            "replaykit/integrity/__init__.py": ["__getattr__"],
        },
    },
    "replaykit/cli/": {
        "face": "replaykit/cli/__init__.py",
        "docfrom": "replaykit/cli/app.py",
        "targets": {
            "replaykit/cli/app.py": [
                "version_text", "_LIGHT_COMMANDS", "_Formatter", "_help_formatter", "_parser",
                "_load_options", "_table_options", "_view_options", "_replay_view_parser",
                "_run", "_exit_now", "_one_line_warning", "main", "console_main", "_main",
                "_dispatch", "<if __name__ == '__main__'>",
            ],
            "replaykit/cli/_output.py": [
                "EXIT_OK", "EXIT_EMPTY", "EXIT_USAGE", "EXIT_PAUSED", "EXIT_INTERRUPTED",
                "_replace_path", "_summary_columns", "_FORMATS", "_RESULT_VIEWS", "_DEFAULT_LIMIT",
                "_UsageError", "_EmptyAnswer", "_emit_table", "_safe_frame", "_limit",
                "_more", "_text_table", "_summary_table", "_emit_summary", "_info",
                "_progress", "_emit_mapping", "_say",
            ],
            "replaykit/cli/_inputs.py": [
                "_tenant_hint", "_expand_inputs", "_DROPPED_ALL", "_NAMED_OWNER", "_read",
                "_note", "_load", "_input_files", "_all_tenanted", "_write_quarantine",
            ],
            "replaykit/cli/summary.py": ["_summary"],
            "replaykit/cli/generate.py": ["_Ticker", "_generate"],
            "replaykit/cli/branch.py": [
                "_pick_tenant", "_branch_create", "_SELECTOR_FLAGS", "_branch_intervene",
                "_branch_file", "_has_event_ids", "_replay", "_save_result", "_result_view",
            ],
        },
    },
    "replaykit/sql/": {
        "face": "replaykit/sql/__init__.py",
        "docfrom": "replaykit/sql/connection.py",
        "targets": {
            "replaykit/sql/connection.py": [
                "DEFAULT_TABLE", "DEFAULT_MAPPING_TABLE", "_COLUMNS", "_DB_TO_CANON",
                "_CANON_TO_DB", "_IDENT", "_INSTALL_FEATURE", "_BATCH_ROWS",
                "_quote_table", "ddl",
                "_dialect_of", "_sqlite_target", "_require_sqlite_file", "_connect",
                "_tenant_list", "_FIXES", "_reason_of", "_driver_errors", "_sql_error",
                "_db_errors", "_str_list", "_utc", "_iso",
            ],
            "replaykit/sql/_fetch.py": [
                "_PARALLEL_MIN_ROWS", "_PARALLEL_MIN_PAGES", "_select_sql", "_fetch_sqlite", "_sqlite_where", "_numeric_affinity",
                "_sqlite_tenant_collisions", "_drop_sentinel", "_rowid_ranges",
                "_fetch_postgresql", "_fetch_pg_filtered", "_pg_exact", "_snapshot_sql",
                "_ctid_ranges", "EXPORT_COLUMNS", "_PLAIN_REQUIRED", "_table_columns",
                "TableSchemaError", "_layout", "_plain_select", "_sqlite_ts_kind", "_Fetched",
                "_fetch_rows", "_recheck",
                # the malformed-row checks (SQLite), which the fetch runs
                "_Check", "_sqlite_checks", "_failing_rows", "_has_rowid",
                "_shown_keys", "_sqlite_literals", "_MALFORMED_FIX", "_fetch_sqlite_guarded",
                "_short", "malformed_problems", "_sqlite_times",
            ],
            "replaykit/sql/read.py": [
                "_well_typed", "_canonical_payloads", "_plain_to_log", "_to_log", "_read_log", "_read_table",
                "_to_canonical", "read_sql",
            ],
            "replaykit/sql/write.py": ["_db_batch", "write_sql", "_under_rls", "_write"],
            "replaykit/sql/rls.py": [
                "_ident", "_literal", "_dollar", "RLS_MARKER", "_rls_names", "_rls_check_block",
                "_rls_setup_statements", "_rls_grant_statements", "_script", "rls_setup_sql",
                "rls_grant_sql", "_run_statements", "rls_setup", "rls_grant", "_AUDIT_CHECKS",
                "rls_audit",
            ],
        },
    },
    "replaykit/provenance/stamps.py": {
        "face": None,  # the old module goes; replaykit/provenance/__init__.py is NEW_FACES'
        "docfrom": "replaykit/provenance/stamps.py",
        "bare": "replaykit.provenance.stamps",
        "targets": {
            "replaykit/provenance/rules.py": [
                "STAMP_FIELDS", "_FLOATS", "_RESPONSE_FIELDS", "_INTS", "_OBJECT_FIELDS",
                "_BAD_JSON", "_Getter", "_hash16", "_placeholder", "_at", "_p",
                "_system_of_messages", "_content_text", "_maybe_json", "_inspect_provider",
                "_instructions", "_versioned", "_sdk_version", "_json_param", "_otel_stamp",
                "_oi_param", "_either", "_OTEL_GETTERS", "_LS", "_PX_PARAMS", "_Rule", "_CFG",
                "_RULES", "_RUN_RULES", "_name_version", "_prefixed",
            ],
            "replaykit/provenance/stamps.py": [
                "_SET_RULES", "_set_fields", "_finish", "_extract", "_fmt_of", "_s",
                "_source_format", "_event_stamps",
                "_SCALAR_TYPES", "_OBJECT_VALUED", "_fast_getters", "_rule_values",
                "_distinct_objects", "_map_distinct_objects", "_run_level",
                "_assemble_objects", "_typed", "_fill_runs", "_STAMPS_MEMO",
                "_STAMPS_MEMO_SIZE", "_log_digest", "_DIGESTS", "_DIGESTS_SIZE",
                "_table_digest", "stamps_df", "_stamps_df", "run_stamps", "stamps_changed",
                "_side", "_summary", "stamp_diff", "stamp_drift",
            ],
        },
    },
    "replaykit/eventlog/": {
        "face": "replaykit/eventlog/__init__.py",
        "docfrom": "replaykit/eventlog/log.py",
        "targets": {
            "replaykit/eventlog/log.py": [
                "_DICT", "TENANT_KEY", "RUNS_SCHEMA", "RUN_STAT_COLUMNS", "_NULLABLE_PANDAS",
                "to_pandas", "_empty_runs", "_detached", "_GrainCache", "EventLog",
                "_warn_absent", "_CAMEL", "_snake", "_expand_attrs", "concat", "_as_quarantine",
            ],
            "replaykit/eventlog/_runs.py": [
                "_str_values", "RunKey", "_key_positions", "_value_codes", "_run_start_rows",
                "_RunIndex", "_grain_rows", "_distinct_strings",
                "_segment_sums",
            ],
            "replaykit/eventlog/dataset.py": [
                "RUNS_FILE", "QUARANTINE_FILE", "NO_TENANT_QUARANTINE_FILE",
                "LegacyDatasetWarning", "_partition_error",
                "partition_files", "_partition_dirs", "_side_file", "read_partition_files",
                "_scan", "read_parquet", "_read_dataset",
            ],
        },
    },
    "replaykit/report/_core.py": {
        "face": None,
        "docfrom": "replaykit/report/_core.py",
        "targets": {
            # the bounds tests set on _core stay with the code that reads them
            "replaykit/report/_core.py": [
                "MAX_SCRUB_EVENTS", "FIGURE_POINTS", "CONTEXT_EVENTS",
                "TRANSCRIPT_EVENTS", "TRANSCRIPT_HEAD", "TRANSCRIPT_CHARS", "TREE_CALLS",
                "MAX_DESCENDANTS", "MAX_CHANGE_ROWS", "MAX_TOOL_ROWS",
                "scrubber_data", "_field_change_rows", "_field_at", "_deltas",
                "_scrubber_data", "_seq_map", "_transcript_steps", "_window_bounds",
                "_window_table", "_sampling_caption", "_value_text", "_values_by_row",
                "_inline_diff", "_value_cells", "_change_rows", "_changes_html",
                "_scrubber_html",
                "_claim", "_first_divergence", "_tool_seq_diff", "_integrity", "_CachedDiff",
                "rca",
            ],
            "replaykit/report/_parts.py": [
                "TEXT_CHARS", "_DEPENDENCIES", "Report", "_table", "_cut", "_kv", "_version", "_versions",
                "_sha256", "_source_paths", "_inputs", "_model_ids", "_CATEGORY_KEYS",
                "_escape_categories", "_figure_json", "_event_rows", "_pretty",
            ],
            "replaykit/report/_cohort_page.py": [
                "cohort", "_cohort_table", "_forest", "_trends", "TREND_MIN_SPAN",
                "trend_range", "_panel_title", "_go_scatter",
            ],
        },
    },
    "replaykit/branch/replay.py": {
        "face": None,
        "docfrom": "replaykit/branch/replay.py",
        "targets": {
            "replaykit/branch/replay.py": [
                "ModelExecutor", "ToolExecutor", "ReplayResult", "replay", "_",
            ],
            "replaykit/branch/_selectors.py": [
                "_MODEL_KINDS", "_ARGS_KEYS", "_TOOL_KEYS", "_str", "_CODEX_CALLS", "_call_block", "_selector_mask", "_REF_SELECTORS", "_refs_match", "_find", "_slot",
                "_decoded_args",
            ],
            "replaykit/branch/_recorded.py": [
                "_shared_sources", "_content_status", "_CONTENT_COLUMNS", "_tool_output",
                "_live_tool_calls", "_Recorded", "_CONVO_ROLES", "_chunk_row", "_text_of",
            ],
        },
    },
}

#: docstrings of the modules a split creates (the "docfrom" target keeps the old one).
DOCS: dict[str, str] = {
    "replaykit/integrity/content.py":
        "The canonical content bytes of a row: canonical JSON, the content members, the "
        "column-wise\nbuilder of every row's bytes (see :mod:`replaykit.integrity.chain`).",
    "replaykit/integrity/manifest.py":
        "Chain manifests: the anchored record of a log (every run of every tenant with its "
        "head),\nsealed by one digest.",
    "replaykit/integrity/derived.py":
        "The derived check: pleach rows' derived columns re-derived from ``type`` + "
        "``payload`` and\ncompared with the stored ones (they are not hashed).",
    "replaykit/integrity/verify.py":
        ":func:`verify_chain`: the link, sequence, head and manifest checks, one problem row "
        "each.",
    "replaykit/integrity/proofs.py":
        "Portable proofs: one run's chain as a self-contained document, and its check.",
    "replaykit/cli/_output.py":
        "What the command line prints: tables, summaries and messages, in text, CSV or "
        "JSON.",
    "replaykit/cli/_inputs.py":
        "The command line's inputs: paths and globs expanded, logs read with the "
        "tenant options,\nquarantined rows written.",
    "replaykit/cli/summary.py": "``replaykit summary``: one row per run of the given logs.",
    "replaykit/cli/generate.py": "``replaykit generate``: write a realistic synthetic log.",
    "replaykit/cli/branch.py":
        "``replaykit branch`` and ``replaykit replay``: create and edit branches, replay "
        "them, look at\nthe saved result.",
    "replaykit/sql/_fetch.py":
        "Reading rows out of SQLite and PostgreSQL: the SELECTs, the parallel page ranges, "
        "the\ntable layouts (canonical or plain export), the malformed-row checks.",
    "replaykit/sql/read.py": ":func:`read_sql`: a table of events as an EventLog.",
    "replaykit/sql/write.py": ":func:`write_sql`: an EventLog into a table, in batches.",
    "replaykit/sql/rls.py":
        "The row-level-security recipe for PostgreSQL: setup and grant SQL, applying "
        "them, the audit.",
    "replaykit/provenance/rules.py":
        "The stamp rules: which field of which format's events records each reproducibility "
        "stamp.",
    "replaykit/eventlog/_runs.py":
        "The run index of a log: run keys, the rows each run starts at, per-run sums "
        "(cached per\ngrain).",
    "replaykit/eventlog/dataset.py":
        "Parquet datasets of event logs: the partition files of a tenant/run layout,\n"
        ":func:`read_parquet`.",
    "replaykit/report/_parts.py":
        "The pieces every report is made of: the :class:`Report` object, tables, versions "
        "and inputs,\nfigures and event rows.",
    "replaykit/report/_cohort_page.py":
        "``rk.report.cohort``: the cohort report (tables, forest plot, trends).",
    "replaykit/branch/_selectors.py":
        "Which recorded events an intervention or a policy selects: selectors, refs, "
        "slots.",
    "replaykit/branch/_recorded.py":
        "What the recording holds for a replay: shared sources, content status, recorded "
        "tool output\nand model chunks.",
    "replaykit/integrity/problems.py":
        "The problem table of :func:`~replaykit.integrity.verify_chain`: its kinds and "
        "schema.",
}

#: docstrings of the package faces (the generated ``__init__``).
FACE_DOCS: dict[str, str] = {
    "replaykit/integrity/__init__.py":
        "Tamper-evident logs (``rk.stamp_chain``, ``rk.verify_chain``, ...).\n\n"
        "This package owns the per-run hash chain (full definition in "
        "``docs/integrity.md``):\n\n"
        "* :mod:`.content` -- the canonical content bytes of a row;\n"
        "* :mod:`.chain` -- ``stamp_chain`` and ``chain_heads``: the chain itself;\n"
        "* :mod:`.manifest` -- ``ChainManifest``: the anchored record of a log;\n"
        "* :mod:`.derived` -- the derived check of pleach rows;\n"
        "* :mod:`.verify` -- ``verify_chain``: every check, one problem row each;\n"
        "* :mod:`.proofs` -- ``chain_proof`` / ``verify_proof``: portable proofs;\n"
        "* :mod:`._dask` -- ``verify_chain(engine=\"dask\")``'s kernel.\n",
    "replaykit/cli/__init__.py":
        "The ``replaykit`` command line (console script ``replaykit``, "
        "``python -m replaykit.cli``).\n\n"
        "One module per command group: :mod:`.summary`, :mod:`.generate`, :mod:`.branch` "
        "(branch and\nreplay), :mod:`.verify` (``verify-chain``), :mod:`.report`; "
        ":mod:`.app` parses and dispatches;\n:mod:`._inputs` / :mod:`._output` read and print, "
        ":mod:`.messages` words errors, :mod:`.files`\nchecks the files and terminal.\n",
    "replaykit/sql/__init__.py":
        "Event logs in SQL databases (SQLite, PostgreSQL) through ADBC: ``rk.read_sql``, "
        "``rk.write_sql``.\n\n"
        ":mod:`.connection` (URIs, dialects, errors), :mod:`.read` (with :mod:`._fetch`: "
        "the SELECTs and\nthe malformed-row checks), :mod:`.write`, :mod:`.rls` (the "
        "row-level-security recipe).\n",
    "replaykit/eventlog/__init__.py":
        "The canonical table: :class:`EventLog` (:mod:`.log`) and its Parquet datasets "
        "(:mod:`.dataset`).\n",
    "replaykit/provenance/__init__.py":
        "Provenance of a log: reproducibility stamps (:mod:`.stamps`, rules in "
        ":mod:`.rules`) and\ncontent-hash cache keys (:mod:`.cachekey`).\n",
}

#: packages whose ``__init__`` is new (not from a split file): path -> modules re-exported.
NEW_FACES: dict[str, list[str]] = {
    "replaykit/provenance/__init__.py": ["replaykit/provenance/stamps.py",
                                         "replaykit/provenance/rules.py",
                                         "replaykit/provenance/cachekey.py"],
}

#: names a face exports beyond the old module's __all__ (the console script's entry point).
FACE_EXTRA: dict[str, list[str]] = {
    "replaykit/cli/__init__.py": ["console_main"],
}

#: files whose imports of public names go through the package faces (rk.* itself).
FACE_IMPORTERS: list[str] = ["replaykit/__init__.py"]

#: ``python -m <new module>`` entry points to create: path -> text.
MAINS: dict[str, str] = {
    "replaykit/cli/__main__.py":
        '"""``python -m replaykit.cli``: the ``replaykit`` command."""\n\n'
        "from .app import console_main\n\nif __name__ == \"__main__\":  # not when a tool "
        "imports every module\n    console_main()\n",
}

#: exact text edits (file, old, new) applied after the moves; each old text must be found.
#: pyproject's contracts are rewritten here, and tests that read a source file by path.
TEXT_EDITS: list[tuple[str, str, str]] = [
    ("pyproject.toml",
     '''    "cli",  # the console command (dispatches `report` and `verify-chain`)
    "_cli_verify",  # the `verify-chain` command: reads inputs through io/sql, runs integrity
    "_cli_messages",  # error messages in the command line's words (cli and _cli_verify)
''',
     '''    # shims of the old module paths (one release; each warns and names the new path)
    "_cli_files | _cli_messages | _cli_verify | _integrity_dask | _toh_api | cachekey | script_player | stamps | toh_scripts",
    "cli",  # the console command: one module per command group (cli/)
'''),
    ("pyproject.toml",
     '''    "_integrity_dask | _toh_api",  # verify_chain(engine="dask"); the rk.toh façade
    "branch | integrity | script_player",  # branch+replay / hash chain / script player
    "fold | toh_scripts",  # folds, replay cache / recorded model scripts
''',
     '''    "branch | integrity | toh",  # branch+replay / hash chain (integrity/) / toh scripts (toh/)
    "fold",  # folds, replay cache
'''),
    ("pyproject.toml",
     '''    "io | grain | cachekey",  # loaders / grain tables / cache keys
    "stamps",  # reproducibility stamps of a log
''',
     '''    "io | grain",  # loaders / grain tables
    "provenance",  # reproducibility stamps of a log, cache keys (provenance/)
'''),
    ("pyproject.toml",
     '''    # base (_native: the Rust core's face; _cli_files: the command line's file checks,
    # atomic writes, terminal escapes)
    "_delegates | schema | tenancy | _json | _display | _align | _native | _cli_files",
''',
     '''    # base (_native: the Rust core's face)
    "_delegates | schema | tenancy | _json | _display | _align | _native",
'''),
    ("pyproject.toml",
     '''    "replaykit._align", "replaykit.cli.files", "replaykit.cli.messages",
    "replaykit.cli.verify", "replaykit._delegates",
    "replaykit._display", "replaykit.integrity._dask", "replaykit._json", "replaykit._native",
    "replaykit.toh", "replaykit.branch", "replaykit.provenance.cachekey", "replaykit.cohorts",
    "replaykit.datasets", "replaykit.engine", "replaykit.errors", "replaykit.eventlog",
    "replaykit.fold", "replaykit.grain", "replaykit.integrity", "replaykit.io",
    "replaykit.schema", "replaykit.toh.player", "replaykit.sql", "replaykit.provenance.stamps",
    "replaykit.tenancy", "replaykit.toh.scripts",
''',
     '''    "replaykit._align", "replaykit.cli.files", "replaykit.cli.messages",
    "replaykit.cli.verify", "replaykit._delegates",
    "replaykit._display", "replaykit._json", "replaykit._native",
    "replaykit.branch", "replaykit.cohorts",
    "replaykit.datasets", "replaykit.engine", "replaykit.errors", "replaykit.eventlog",
    "replaykit.fold", "replaykit.grain", "replaykit.integrity", "replaykit.io",
    "replaykit.provenance", "replaykit.schema", "replaykit.sql",
    "replaykit.tenancy", "replaykit.toh",
'''),
    ("pyproject.toml",
     '''    "replaykit.report._cohort", "replaykit.report._core", "replaykit.report._embed",
    "replaykit.report._fmt", "replaykit.report._template", "replaykit.report._transcript",
''',
     '''    "replaykit.report._cohort", "replaykit.report._cohort_page", "replaykit.report._core",
    "replaykit.report._embed", "replaykit.report._fmt", "replaykit.report._parts",
    "replaykit.report._template", "replaykit.report._transcript",
'''),
]

#: contracts appended to pyproject.toml (layers inside the new packages).
NEW_CONTRACTS = '''
[[tool.importlinter.contracts]]
name = "Inside integrity: checks above the chain above the content bytes"
type = "layers"
containers = ["replaykit.integrity"]
exhaustive = true
layers = [
    "_dask",  # verify_chain(engine="dask")'s kernel
    "proofs",  # portable proofs of one run
    "verify",  # verify_chain: every check
    "derived | manifest",  # the derived check of pleach rows / chain manifests
    "problems",  # the problem table
    "chain",  # stamp_chain, chain_heads
    "content",  # canonical content bytes
]

[[tool.importlinter.contracts]]
name = "Inside cli: the dispatcher above the commands above the shared plumbing"
type = "layers"
containers = ["replaykit.cli"]
exhaustive = true
layers = [
    "__main__",  # python -m replaykit.cli
    "app",  # the parser and the dispatcher
    "summary | generate | branch | verify | report",  # one module per command group
    "_inputs",  # reading the command's inputs
    "_output",  # printing tables and summaries
    "messages",  # error messages in the command line's words
    "files",  # option files, output paths, atomic writes, terminal escapes
]

[[tool.importlinter.contracts]]
name = "Inside sql: reading, writing and the RLS recipe above the connection"
type = "layers"
containers = ["replaykit.sql"]
exhaustive = true
layers = [
    "read | write | rls",  # read_sql / write_sql / the row-level-security recipe
    "_fetch",  # SELECTs, page ranges, malformed-row checks
    "connection",  # URIs, dialects, driver errors
]

[[tool.importlinter.contracts]]
name = "Inside eventlog: the dataset above the log above its run index"
type = "layers"
containers = ["replaykit.eventlog"]
exhaustive = true
layers = ["dataset", "log", "_runs"]

[[tool.importlinter.contracts]]
name = "Inside toh: the face above the player above the script rules"
type = "layers"
containers = ["replaykit.toh"]
exhaustive = true
layers = ["player", "scripts"]

[[tool.importlinter.contracts]]
name = "Inside provenance: stamps and cache keys above the stamp rules"
type = "layers"
containers = ["replaykit.provenance"]
exhaustive = true
layers = ["stamps | cachekey", "rules"]
'''

#: exact edits applied after the rewrite (lines the longer paths pushed over 100 columns;
#: tests that read a source file by its path or match an old path in a message).
POST_EDITS: list[tuple[str, str, str]] = [
    ("tests/test_layers.py", '"6 kept, 0 broken"', '"12 kept, 0 broken"'),
    ("tests/sql/test_sql.py", '''    for path in [root / "README.md", *root.glob("docs/*.md"), root / "replaykit" / "sql.py",''',
     '''    for path in [root / "README.md", *root.glob("docs/*.md"),
                 *(root / "replaykit" / "sql").glob("*.py"),'''),
    ("tests/test_layers.py",
     '''    ("eventlog.py", "\\ndef _calls(log):\\n    from .grain import calls_df  # noqa\\n", LAYERS),''',
     '''    ("eventlog/log.py", "\\ndef _calls(log):\\n    from ..grain import calls_df  # noqa\\n",
     LAYERS),'''),
    ("tests/integrity/test_integrity.py",
     '''    got = {(m, n) for m, n in imports_of(ROOT / "replaykit" / "integrity.py")
           if m.startswith(("replaykit.io", "replaykit.sql", "replaykit.cli", "replaykit._cli"))
           or n.startswith("read_") or n == "cli"}
    assert all(m == "replaykit.sql" or m.startswith("replaykit.io.pleach") for m, _ in got), got
    assert not [n for _, n in got if n.startswith("read_")], got
    assert {n for m, n in got if m == "replaykit.sql"} == {"malformed_problems"}
    cli_side = {m for m, _ in imports_of(ROOT / "replaykit" / "_cli_verify.py")}
    assert {"replaykit.io", "replaykit.eventlog", "replaykit.integrity"} <= cli_side
    assert "replaykit.cli" not in cli_side  # the entry point dispatches to it, not back''',
     '''    from _imports import replaykit_files

    got = {(m, n) for f in replaykit_files("integrity") for m, n in imports_of(f)
           if m.startswith(("replaykit.io", "replaykit.sql", "replaykit.cli", "replaykit._cli"))
           or n.startswith("read_") or n == "cli"}
    assert all(m.startswith(("replaykit.sql", "replaykit.io.pleach")) for m, _ in got), got
    assert not [n for _, n in got if n.startswith("read_")], got
    assert {n for m, n in got if m.startswith("replaykit.sql")} == {"malformed_problems"}
    cli_side = {m for m, _ in imports_of(ROOT / "replaykit" / "cli" / "verify.py")}
    top = {".".join(m.split(".")[:2]) for m in cli_side}
    assert {"replaykit.io", "replaykit.eventlog", "replaykit.integrity"} <= top
    # the entry point dispatches to it, not back
    assert not cli_side & {"replaykit.cli", "replaykit.cli.app"}'''),
    ("tests/integrity/test_integrity.py", '''match=r"moved to replaykit\\._cli_verify"''',
     '''match=r"moved to replaykit\\.cli\\.verify"'''),
    ("replaykit/_delegates.py",
     '''"EventLog.turns_df": "replaykit.grain", "EventLog.stamps_df": "replaykit.provenance.stamps",''',
     '''"EventLog.turns_df": "replaykit.grain",
          "EventLog.stamps_df": "replaykit.provenance.stamps",'''),
    ("tests/test_imports.py",
     '''"before = 'replaykit.grain' in sys.modules or 'replaykit.provenance.stamps' in sys.modules\\n"''',
     '''"before = ('replaykit.grain' in sys.modules\\n"
                 "          or 'replaykit.provenance.stamps' in sys.modules)\\n"'''),
    ("tests/cli/test_cli_newcomer.py",
     '''    assert cli_messages.cli_error_text(m).startswith("s.jsonl:") and "--owner ID" in cli_messages.cli_error_text(m)''',
     '''    assert cli_messages.cli_error_text(m).startswith("s.jsonl:") and \\
        "--owner ID" in cli_messages.cli_error_text(m)'''),
]

#: tests/ mirrors the packages: folder -> test files moved into it (commit 2). A test file at
#: tests/ top level that is in neither TESTS nor TESTS_TOP fails the run (say where it goes).
TESTS: dict[str, list[str]] = {
    "tests/cli": ["test_cli.py", "test_cli_branch_replay.py", "test_cli_dx.py",
                  "test_cli_newcomer.py", "test_cli_summary.py"],
    "tests/integrity": ["test_integrity.py", "test_integrity_derived_fast.py",
                        "test_integrity_formats.py", "test_integrity_sealed.py",
                        "test_attacks_integrity.py", "test_verify_pipeline.py"],
    "tests/sql": ["test_sql.py"],
    "tests/provenance": ["test_stamps.py", "test_stamps_fast.py"],
    "tests/toh": ["test_toh_scripts.py", "test_script_player.py", "test_corpus_toh_scripts.py",
                  "test_toh_input.py"],
    "tests/eventlog": ["test_eventlog.py", "test_eventlog_views.py", "test_run_access.py"],
    "tests/report": ["test_report.py", "test_report_browser.py", "test_report_build_fast.py",
                     "test_report_fast.py", "test_report_paths.py", "test_report_scaling.py"],
    "tests/branch": ["test_branch_patches.py", "test_compare.py",
                     "test_replay_complete_diff.py", "test_replay_policies.py",
                     "test_replay_transcripts.py"],
    "tests/fold": ["test_fold.py", "test_fold_formats.py", "test_fold_hash.py",
                   "test_fold_lazy.py", "test_fold_threads.py", "test_replay_handle.py",
                   "test_replay_roots.py", "test_determinism.py"],
    "tests/io": ["test_agent_formats.py", "test_corpus_toh.py", "test_inspect.py",
                 "test_io_packages.py", "test_isplay.py", "test_messy_input.py", "test_otel.py",
                 "test_otel_forms.py", "test_otel_input.py", "test_otel_instrumentations.py",
                 "test_pleach.py", "test_read_events.py", "test_read_events_owner.py",
                 "test_toh.py", "test_toh_columnwise.py", "test_toh_strings.py",
                 "test_fuzz_loaders.py", "test_otel_older_instrumentations.py",
                 "test_platform_real_exports.py"],
    "tests/cohorts": ["test_cohorts.py"],
    "tests/engine": ["test_engine_runner.py", "test_dask_engine.py"],
    "tests/datasets": ["test_datasets.py"],
}
#: tests of top-level modules and of the whole house stay at tests/.
TESTS_TOP: list[str] = [
    "test_api.py", "test_align.py", "test_attacks_tenancy.py", "test_bench_harness.py",
    "test_benchmarks_loaders.py", "test_benchmarks_smoke.py", "test_display.py", "test_docs.py",
    "test_errors.py", "test_grain.py", "test_imports.py", "test_json.py", "test_layers.py",
    "test_lint.py", "test_native.py", "test_notebook_cells.py", "test_notebook_lab.py",
    "test_otel_evaluations.py", "test_otel_roundtrip.py", "test_plots.py", "test_schema.py",
    "test_setup.py", "test_tenancy.py", "test_widgets.py", "test_deprecated_paths.py",
    "test_check_profile.py", "test_lab_live.py",
]
#: how a moved test file's own location is re-based (one folder deeper); any other use of
#: __file__ in a moved file fails the run.
TEST_PATH_FIXES: list[tuple[str, str]] = [
    (r"Path\(__file__\)\.resolve\(\)\.parents\[1\]", "Path(__file__).resolve().parents[2]"),
    (r"Path\(__file__\)\.resolve\(\)\.parent\.parent(?!\.)",
     "Path(__file__).resolve().parents[2]"),
    (r"Path\(__file__\)\.resolve\(\)\.parent(?= / \"data\")",
     "Path(__file__).resolve().parents[1]"),
    (r"sys\.path\.insert\(0, str\(Path\(__file__\)\.resolve\(\)\.parent\)\)",
     "sys.path.insert(0, str(Path(__file__).resolve().parents[1]))"),
]
#: uses of __file__ that stay right after the move (same folder, or the file itself).
TEST_FILE_OK: list[str] = [
    r"here = Path\(__file__\)\.resolve\(\)\.parent\n",
]

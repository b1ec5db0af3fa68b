"""``replaykit branch`` and ``replaykit replay``: create and edit branches, replay them, look at
the saved result."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ._inputs import _input_files, _load
from ._output import (
    EXIT_EMPTY,
    EXIT_OK,
    EXIT_PAUSED,
    _emit_mapping,
    _emit_table,
    _EmptyAnswer,
    _replace_path,
    _UsageError,
)
from .files import (
    CliFileError,
    atomic_write_text,
    check_output,
    check_parent,
    load_json_option,
    parse_json_text,
    terminal_safe,
)

__all__ = []

def _pick_tenant(log: Any, tenant: str | None, run_id: str) -> str:
    if tenant is not None:
        return tenant
    owners = sorted(set(log.filter(run_ids=run_id).tenants)) if len(log) else []
    if len(owners) == 1:
        return str(owners[0])
    if not owners:
        raise _EmptyAnswer(f"no run {run_id!r} in the logs; runs present: "
                           + ", ".join(log.run_ids[:20]))
    raise _UsageError(f"run {run_id!r} exists for several tenants ({', '.join(owners)}): "
                      "pass --tenant ID")


def _branch_create(args: argparse.Namespace) -> int:
    from ..branch.branch import _default_id
    from ..branch.types import IsplayBranch, ReplayPolicy

    out = check_output(args.output, "-o", overwrite=args.overwrite,
                       inputs=_input_files(args.log or []))
    checkpoint: str | int = args.checkpoint
    if args.log:
        from ..branch import Branch
        from ..errors import ReplayError

        log, _ = _load(args, args.log)
        tenant = _pick_tenant(log, args.tenant, args.run_id)
        if not len(log.filter(tenant_id=tenant, run_ids=args.run_id)):
            raise _EmptyAnswer(f"tenant {tenant!r} has no run {args.run_id!r} in the logs; "
                               "runs present: " + ", ".join(log.filter(tenant_id=tenant)
                                                            .run_ids[:20]))
        probe = Branch(base=log, run_id=args.run_id, tenant_id=tenant,
                       checkpoint=checkpoint, name=args.name)
        try:
            seq = probe.checkpoint_seq()
        except ReplayError:
            if not args.checkpoint.isdigit():
                raise
            checkpoint = int(args.checkpoint)
            seq = Branch(base=log, run_id=args.run_id, tenant_id=tenant,
                         checkpoint=checkpoint, name=args.name).checkpoint_seq()
        where = f" (seq {seq})"
    else:
        where = " (not checked: pass --log to check run and checkpoint)"
    policy = None
    if args.model_policy or args.tool_policy:
        policy = ReplayPolicy(model=args.model_policy or "recorded-only",
                              tool=args.tool_policy or "pause-for-fixture")
    branch_id = args.branch_id or _default_id(args.run_id, checkpoint, args.name, args.parent)
    ib = IsplayBranch(branch_id=branch_id, base_run_id=args.run_id,
                      checkpoint_id=str(checkpoint), name=args.name,
                      parent_branch_id=args.parent, project_id=args.project,
                      replay_policy=policy,
                      extra={"checkpointSeq": checkpoint} if isinstance(checkpoint, int) else {})
    IsplayBranch.from_dict(ib.to_dict(), source=str(out))  # the file we write must read back
    atomic_write_text(out, json.dumps(ib.to_dict(), indent=2) + "\n")
    print(f"wrote {out}: branch {branch_id} of run {args.run_id} from checkpoint "
          f"{checkpoint}{where}, no interventions yet (add them with 'replaykit branch "
          f"intervene {out} ...')")
    return EXIT_OK


_SELECTOR_FLAGS = ("target_ref", "target", "target_event", "target_type", "target_tool",
                   "target_model_call", "target_artifact", "target_context",
                   "target_context_path", "json_pointer")


def _branch_intervene(args: argparse.Namespace) -> int:
    from ..branch.types import IsplayBranch

    ib = _branch_file(args.branch, "BRANCH.json")
    selector: dict[str, Any] = {}
    for key in _SELECTOR_FLAGS:
        value = getattr(args, key)
        if value is None:
            continue
        if key == "target_event" and value.isdigit() and not _has_event_ids(ib):
            value = int(value)
        selector[key] = value
    if not selector:
        raise _UsageError("name what to change with at least one of --target-ref, "
                          "--target-event, --target-type, --target-tool, --target-model-call, "
                          "--target-artifact, --target-context, --target-context-path, "
                          "--json-pointer")
    if args.patch is not None:
        patch = load_json_option(args.patch, "--patch")
    else:
        patch = parse_json_text(args.patch_json, "--patch-json")
    if not isinstance(patch, dict):
        raise _UsageError("the patch must be a JSON object (operations, or toolName/args)")
    if getattr(args, "merge", False):
        if args.kind != "tool_args_patch" or not isinstance(patch.get("args"), dict):
            raise _UsageError("--merge applies to --kind tool_args_patch with an 'args' object "
                              "(the members to change; null removes one)")
        patch = {**patch, "mode": "merge"}
    doc = ib.to_dict()
    ids = {iv.intervention_id for iv in ib.interventions}
    iid = args.intervention_id or next(f"iv-{k}" for k in range(len(ids) + 1, len(ids) + 999)
                                       if f"iv-{k}" not in ids)
    doc["interventions"].append({"interventionId": iid, "kind": args.kind,
                                 "selector": selector, "patch": patch,
                                 "description": args.description})
    if args.output is None:  # in place: the branch file is this command's target
        out = Path(args.branch)
        if out.is_symlink():
            raise CliFileError(f"{out}: is a symbolic link; replaykit never writes through "
                               "one (pass -o FILE)")
    else:
        out = check_output(args.output, "-o", overwrite=args.overwrite,
                           inputs=[args.branch, *([args.patch] if args.patch else [])])
    checked = IsplayBranch.from_dict(doc, source=str(out))
    atomic_write_text(out, json.dumps(checked.to_dict(), indent=2) + "\n")
    print(f"wrote {out}: intervention {iid} ({args.kind}) added; the branch has "
          f"{len(checked.interventions)} intervention(s)")
    return EXIT_OK


def _branch_file(path: str, option: str) -> Any:
    """The branch in the file ``path`` named by ``option``: a regular JSON file of bounded size
    holding an object (else a one-line usage error), validated by ``IsplayBranch``."""
    from ..branch.types import IsplayBranch

    doc = load_json_option(path, option)
    if not isinstance(doc, dict):
        raise CliFileError(f"{option} {path}: not a branch file (a JSON object with "
                           "\"format\": \"isplay.branch/v1\")")
    return IsplayBranch.from_dict(doc, source=str(path))


def _has_event_ids(ib: Any) -> bool:
    # a seq checkpoint marks a log without event ids (a number then names a seq)
    return "checkpointSeq" not in ib.extra


def _replay(args: argparse.Namespace) -> int:
    from ..branch import Branch, FixtureRegistry, replay

    out = Path(args.output)
    check_parent(out, "-o")
    if out.is_symlink():
        raise CliFileError(f"-o {out}: is a symbolic link; replaykit never writes through one")
    if out.exists() and not out.is_dir():
        raise CliFileError(f"-o {out}: is a file; name a folder for the replay result")
    if (out / "manifest.json").exists() and not args.overwrite:
        raise _UsageError(f"{out} already holds a replay result; pass --overwrite or name "
                          "another folder")
    given = [args.branch, *(args.fixtures or [])]
    if out.is_dir() and any(out.iterdir()) and not (out / "manifest.json").exists():
        raise CliFileError(f"-o {out}: a folder holding other files, not a replay result; "
                           "name a new or empty folder")
    if out.exists():  # the folder is replaced whole: it may not hold an input
        whole = out.resolve()
        for f in _input_files([*args.log, *given]):
            if f.resolve() == whole or whole in f.resolve().parents:
                raise CliFileError(f"-o {out}: holds an input of this command ({f}); name "
                                   "another folder")
    ib = _branch_file(args.branch, "--branch")
    for f in args.fixtures or []:
        load_json_option(f, "--fixtures")  # a JSON file (the registry then checks its content)
    log, _ = _load(args, args.log)
    tenant = _pick_tenant(log, args.tenant or args.owner, ib.base_run_id)
    branch = Branch.from_dict(ib, base=log, tenant_id=tenant)
    fixtures = FixtureRegistry.from_file(args.fixtures) if args.fixtures else None
    res = replay(branch, model_policy=args.model_policy, tool_policy=args.tool_policy,
                 fixtures=fixtures)
    _save_result(res, out)
    m = res.metrics
    head = (f"replay {res.status}: {len(res.events):,} events of run {res.run_id} under "
            f"{res.model_policy}/{res.tool_policy}")
    if res.status == "completed":
        print(f"{head}; {m['comparability']}, first divergence step "
              f"{m['first_divergence_step']}, {m['fixture_dependency_count']} fixture-served "
              f"call(s); wrote {out}")
        return EXIT_OK
    if res.status == "paused":
        open_reqs = [r for r in res.requirements if r.get("status") == "open"]
        tools = ", ".join(sorted({str(r.get("tool_name")) for r in open_reqs}))
        print(f"{head}; paused for {len(open_reqs)} fixture(s) ({tools}); wrote {out}. See "
              f"'replaykit replay requirements {out}', then rerun with --fixtures FILE")
        return EXIT_PAUSED
    print(terminal_safe(f"{head}: {res.error}; wrote {out}", one_line=False), file=sys.stderr)
    return EXIT_EMPTY


def _save_result(res: Any, out: Path) -> None:
    """Write the result folder whole into a temporary folder beside ``out``, then move it in
    place (an interrupted replay leaves the old result, or none)."""
    import os
    import shutil

    out.parent.mkdir(parents=True, exist_ok=True)
    from .._base.files import temp_dir_beside  # the mode Python gives a new folder (umask)

    tmp = temp_dir_beside(out)
    try:
        res.save(tmp)
        for name, value in (("metrics", res.metrics), ("requirements", res.requirements),
                            ("effects", res.effects)):
            (tmp / f"{name}.json").write_text(json.dumps(value, indent=2, default=str) + "\n",
                                              encoding="utf-8")
        if out.is_dir() and any(out.iterdir()):
            _replace_path(tmp, out)
        else:
            if out.is_dir():
                out.rmdir()
            os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _result_view(view: str, args: argparse.Namespace) -> int:
    from ..branch import ReplayResult

    if not (Path(args.result) / "manifest.json").exists():
        raise _UsageError(f"{args.result}: not a replay result folder (no manifest.json); "
                          "write one with 'replaykit replay LOG --branch FILE -o DIR'")
    res = ReplayResult.load(args.result)
    if view == "get":
        m = res.metrics
        b = getattr(res, "branch_dict", None) or {}
        info = {"replay_id": res.replay_id, "status": res.status, "error": res.error,
                "run_id": res.run_id, "base_run_id": b.get("baseRunId"),
                "branch_id": b.get("branchId"), "branch_name": b.get("name"),
                "interventions": len(b.get("interventions", [])),
                "model_policy": res.model_policy, "tool_policy": res.tool_policy,
                "events": len(res.events), "comparability": m.get("comparability"),
                "first_divergence_step": m.get("first_divergence_step"),
                "open_requirements": sum(r.get("status") == "open" for r in res.requirements),
                "fixture_dependency_count": m.get("fixture_dependency_count")}
        _emit_mapping(info, args)
        return EXIT_OK
    if view == "metrics":
        _emit_mapping(res.metrics, args)
        return EXIT_OK
    frames = {"events": lambda: res.events.events_df(), "diff": res.diff_df,
              "effects": res.effects_df, "requirements": res.requirements_df}
    _emit_table(frames[view](), args, noun="rows")
    return EXIT_OK

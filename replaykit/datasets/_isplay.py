"""Deterministic generator of isplay run exports (``isplay.run/v1``): claims-triage agent runs."""

from __future__ import annotations

import os
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .._base.json import args_hash, canonical_json

__all__ = ["generate_isplay"]

_EPOCH = datetime(2025, 1, 6, 8, 0, 0, tzinfo=UTC)
_TOOLS = ("claim-lookup", "risk-signals", "policy-rules", "request-documents", "escalate-to-siu",
          "approve-claim")
_MERCHANTS = ("City Travel Desk", "Glass Express", "Müller Autohaus", "Café Léon", "北京 Hotel",
              "Harbor Dental", "QuickFix Plumbing")
_KINDS = ("travel", "windscreen", "dental", "water damage", "theft", "hotel")
_SYSTEM = ("You are the claims triage assistant. Look the claim up, check risk signals and the "
           "policy rules, then approve, request documents or escalate. Escalate suspected fraud. "
           "Never promise a payout amount.")
_SETTINGS = {"model": "gpt-4.1-mini", "provider": "openai", "temperature": 0.2, "maxTokens": 800}
_TOOL_SPECS = [{"name": t, "inputSchema": {"type": "object"}} for t in _TOOLS]


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def _args(rng: random.Random, tool: str, claim: str, amount: int, merchant: str) -> dict[str, Any]:
    if tool == "risk-signals":
        return {"claimId": claim, "claimedAmount": amount, "merchant": merchant}
    if tool == "policy-rules":
        return {"claimId": claim, "ruleSet": rng.choice(("standard", "premium", "fleet"))}
    if tool == "request-documents":
        return {"claimId": claim, "documents": rng.sample(["receipt", "photo", "police report",
                                                           "invoice"], rng.randint(1, 2))}
    if tool == "escalate-to-siu":
        return {"claimId": claim, "reason": rng.choice(("duplicate receipt", "amount mismatch",
                                                        "new policy, high amount"))}
    return {"claimId": claim}


def _output(rng: random.Random, tool: str, claim: str, amount: int, merchant: str) -> Any:
    if tool == "claim-lookup":
        return {"claimId": claim, "claimedAmount": amount, "currency": "EUR", "merchant": merchant,
                "receipts": [f"rcpt-{rng.randint(100, 999)}" for _ in range(rng.randint(1, 3))]}
    if tool == "risk-signals":
        return {"score": round(rng.random(), 2),
                "signals": rng.sample(["duplicate_receipt", "amount_doubled", "new_policy",
                                       "merchant_watchlist"], rng.randint(0, 2))}
    if tool == "policy-rules":
        return [{"type": "text", "text": f"Limit {rng.choice((500, 1000, 5000))} EUR; "},
                {"type": "text", "text": "receipt required."}]
    return f"{tool} done for {claim}: ref {rng.randint(10_000, 99_999)}"


def _run(index: int, events: int, seed: int) -> dict[str, Any]:
    rng = random.Random(f"isplay:{seed}:{index}")
    run_id = f"run-{seed}-{index:06d}"
    claim = f"C-{rng.randint(100, 99_999)}"
    amount = rng.randint(40, 5000)
    merchant = rng.choice(_MERCHANTS)
    t = _EPOCH + timedelta(minutes=7 * index)
    created = t
    evs: list[dict[str, Any]] = []
    checkpoints: list[dict[str, Any]] = []
    user = f"Please triage claim {claim}: {rng.choice(_KINDS)}, {amount} EUR, {merchant}."
    messages = [{"role": "user", "content": user}]
    tokens = 500 + rng.randint(0, 200)
    calls = 0

    def add(typ: str, **fields: Any) -> dict[str, Any]:
        nonlocal t
        t += timedelta(milliseconds=rng.randint(5, 2500))
        ev = {"eventId": f"{run_id}.e{len(evs):05d}", "type": typ, "ts": _iso(t), **fields}
        evs.append(ev)
        return ev

    def checkpoint() -> None:
        cid = f"cp-{len(checkpoints)}"
        ev = add("checkpoint", checkpointId=cid)
        checkpoints.append({"checkpointId": cid, "eventId": ev["eventId"],
                            "label": f"checkpoint {len(checkpoints)}"})

    def model(finish: str, text: str, tool_calls: list[dict[str, Any]]) -> str:
        nonlocal tokens, calls
        calls += 1
        mc = f"mc-{calls}"
        add("model.call", modelCallId=mc, prompt=_SYSTEM, messages=messages, settings=_SETTINGS,
            tools=_TOOL_SPECS)
        out: dict[str, Any] = {"text": text}
        if tool_calls:
            out["toolCalls"] = tool_calls
        extra = {"cacheKey": f"ck-{rng.randint(0, 1 << 30):08x}"} if rng.random() < 0.2 else {}
        add("model.result", modelCallId=mc, finish=finish, output=out,
            usage={"inputTokens": tokens, "outputTokens": rng.randint(10, 120)}, **extra)
        tokens += rng.randint(50, 400)
        return mc

    if events < 6:
        raise ValueError(f"events_per_run must be >= 6 (start, message, checkpoint, final call "
                         f"and result, completion), got {events}")
    add("run.started", agent={"name": "claims-triage", "version": "2.3.0"})
    add("message.user", text=user)
    checkpoint()
    budget = events - 6
    cycle = 0
    while budget >= 4:
        if cycle % 3 == 2 and budget >= 5:
            checkpoint()
            budget -= 1
        tool = rng.choice(_TOOLS)
        args = _args(rng, tool, claim, amount, merchant)
        tc = f"tc-{cycle + 1}"
        mc = model("tool-calls", rng.choice(("Checking.", "Next step.", "")),
                   [{"toolCallId": tc, "toolName": tool, "args": args}])
        extra = {"argsArtifactId": f"art-args-{tc}"} if rng.random() < 0.1 else {}
        add("tool.call", refId=tc, toolName=tool, modelCallId=mc, args=args,
            argsHash=args_hash(args), **extra)
        failed = rng.random() < 0.05
        if failed:
            add("tool.result", refId=tc, toolName=tool, isError=True,
                output={"error": {"code": "UPSTREAM_TIMEOUT", "message": f"{tool} timed out"}})
        else:
            add("tool.result", refId=tc, toolName=tool,
                output=_output(rng, tool, claim, amount, merchant))
        budget -= 4
        cycle += 1
    for _ in range(budget):  # 0..3 left over: analyst notes (an unknown type, loads as other)
        add("log.note", note=f"reviewed step {cycle}")
    model("stop", f"Claim {claim} triaged.", [])
    add("run.completed", outcome=rng.choice(("approved", "escalated", "documents-requested")))
    return {
        "format": "isplay.run/v1",
        "run": {"runId": run_id, "projectId": f"proj-{seed}", "createdAt": _iso(created),
                "agent": {"name": "claims-triage", "version": "2.3.0"},
                "metadata": {"claimId": claim, "channel": rng.choice(("web", "phone", "app"))}},
        "checkpoints": checkpoints,
        "events": evs,
    }


def generate_isplay(
    path: str | os.PathLike[str],
    *,
    runs: int,
    events_per_run: int,
    seed: int = 0,
) -> Path:
    """Write ``runs`` claims-triage runs of exactly ``events_per_run`` events as isplay exports.

    A ``path`` ending in ``.jsonl``/``.ndjson`` gets one run document per line; any other path
    is a folder that gets one ``run-NNNNNN.json`` per run (one event per line). The output is
    the same for the same arguments. Runs have checkpoints, model calls (prompt, messages,
    settings, tools, usage), tool calls with args and argsHash (some with an argsArtifactId),
    tool results (about 5 % errors) and, when the event budget does not divide evenly, a few
    ``log.note`` events.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        ValueError: ``runs < 0`` or ``events_per_run < 6``.

    Example:
        >>> p = generate_isplay("/tmp/claims.jsonl", runs=3, events_per_run=20)  # doctest: +SKIP
        >>> len(rk.read_isplay(p, owner="demo"))  # doctest: +SKIP
        60
    """
    if runs < 0:
        raise ValueError(f"runs must be >= 0, got {runs}")
    if events_per_run < 6:
        _run(0, events_per_run, seed)  # raises with the explanation
    out = Path(path)
    if out.suffix.lower() in (".jsonl", ".ndjson"):
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "w", encoding="utf-8", newline="\n") as fh:
            for i in range(runs):
                fh.write(canonical_json(_run(i, events_per_run, seed)) + "\n")
        return out
    out.mkdir(parents=True, exist_ok=True)
    for i in range(runs):
        doc = _run(i, events_per_run, seed)
        events = doc.pop("events")
        head = canonical_json(doc)[:-1]
        body = ",\n".join(canonical_json(e) for e in events)
        (out / f"run-{i:06d}.json").write_text(f'{head},"events":[\n{body}\n]}}\n',
                                               encoding="utf-8")
    return out

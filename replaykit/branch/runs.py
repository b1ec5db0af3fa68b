"""compare_runs(): two recorded runs (or two sets of them, paired by a key) compared directly.

The runs people have are recordings: two Claude Code sessions of the same task, two traces of
one agent. :func:`compare_runs` aligns them as a replay is aligned with its base run and
returns a :class:`RunComparison`, which answers to the same interface as a
:class:`~replaykit.ReplayResult` (see :class:`Comparison`): ``diff_df()``, ``changes_df()``,
``metrics``, ``summary()`` and the widgets and report that read them
(``rk.report.rca``, ``rk.widgets.DiffExplorer``, ``rk.widgets.Scrubber.for_replay``).

Nothing was intervened on and nothing re-run, so a difference between two recorded runs is an
association, not a cause: the findings, the answer line and the report say so.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeAlias, overload, runtime_checkable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..eventlog.log import EventLog
from .fixtures import FixtureRegistry
from .replay import ReplayResult

__all__ = ["RECORDED_CAVEAT", "Comparison", "RunComparison", "RunComparisons", "compare_runs",
           "pair_runs", "summarize_runs"]

#: What a comparison of two recorded runs can and cannot show (a finding of every one).
RECORDED_CAVEAT = (
    "What this comparison can show: where two recorded runs part, which tool calls, "
    "arguments and values differ, and how each ends. What it cannot show: why. Nothing was "
    "intervened on and nothing was re-run, so every difference here is an association "
    "between the runs, not a cause of the other's outcome; the task wording, the state of "
    "the files, the model's sampling or the time each ran may explain it. To test a cause, "
    "branch one run before the first divergence, change one thing and replay it "
    "(rk.Branch, rk.replay).")

#: The ``by=`` keys :func:`compare_runs` and :func:`pair_runs` know besides a runs_df column.
PAIR_KEYS = ("prompt", "task")


@runtime_checkable
class Comparison(Protocol):
    """What ``rk.report.rca``, the findings (``summary()``), ``DiffExplorer`` and
    ``Scrubber.for_replay`` read from a comparison of two runs: a
    :class:`~replaykit.ReplayResult` (a run and its replay) or a :class:`RunComparison`
    (two recorded runs).

    ``base`` holds the first run (for a replay, the base log and ``branch`` names the run),
    ``events`` the second; ``intervened`` says whether the second run was produced by an
    intervention (a replay: differences follow from it under the policies) or not (two
    recordings: differences are associations); ``labels`` names the two sides for a reader.
    """

    base: EventLog
    events: EventLog
    branch: Any
    status: str
    intervened: bool
    labels: tuple[str, str]
    model_policy: str
    tool_policy: str

    @property
    def metrics(self) -> dict[str, Any]: ...

    def diff_df(self) -> pd.DataFrame: ...

    def annotations_df(self) -> pd.DataFrame: ...

    def changes_df(self) -> pd.DataFrame: ...

    def summary(self) -> Any: ...


def _one_run(log: EventLog, run_id: str | None, tenant_id: str | None, what: str) -> EventLog:
    """One run of ``log`` (``run_id``, or the only run it holds)."""
    tenants = log.tenants
    if tenant_id is None:
        if len(tenants) > 1:
            raise TypeError(f"tenant_id is required: {what} holds runs of {len(tenants)} "
                            f"tenants ({', '.join(map(repr, tenants[:5]))})")
        tenant_id = tenants[0] if tenants else ""
    ids = log.run_ids
    if run_id is None:
        if len(ids) != 1:
            raise ValueError(f"{what} holds {len(ids)} runs; name the two to compare: "
                             "rk.compare_runs(log, runs=(RUN_A, RUN_B)), or pair two sets "
                             "with rk.compare_runs(log_a, log_b, by='prompt')")
        run_id = ids[0]
    if run_id not in ids:
        raise KeyError(f"run {run_id!r} is not in {what}; its runs: "
                       + ", ".join(map(repr, ids[:20])) + (" ..." if len(ids) > 20 else ""))
    return log.run(run_id, tenant_id=tenant_id)


class RunComparison:
    """Two recorded runs aligned event by event: run A (``base``) and run B (``events``).

    The same interface as a :class:`~replaykit.ReplayResult` (the :class:`Comparison`
    protocol): ``diff_df()`` (events aligned by signature, every field counts),
    ``changes_df()`` (one row per changed JSON path), ``metrics`` (every metric of
    docs/metrics.md: ``first_divergence_step``, ``tool_sequence_distance``, ...),
    ``summary()`` (the findings and the answer line) -- so ``rk.report.rca(cmp)``,
    ``rk.widgets.DiffExplorer(cmp)`` and ``rk.widgets.Scrubber.for_replay(cmp)`` accept it as
    they accept a replay. ``intervened`` is False: the findings say that the differences
    are associations, not causes.

    Build one with :func:`compare_runs`.

    Example:
        >>> cmp = rk.compare_runs(log, runs=("session-a", "session-b"))  # doctest: +SKIP
        >>> cmp.first_divergence, cmp.tool_sequence_distance  # doctest: +SKIP
        (5, 4)
        >>> print(cmp.summary().answer)  # doctest: +SKIP
    """

    intervened = False
    model_policy = "recorded"
    tool_policy = "recorded"

    # the alignment and the frames a replay computes from (base, events): the same code
    diff_df = ReplayResult.diff_df
    _compute_diff = ReplayResult._compute_diff
    effects_df = ReplayResult.effects_df
    requirements_df = ReplayResult.requirements_df
    probes_df = ReplayResult.probes_df

    def __init__(self, a: EventLog, b: EventLog, *, key: Any = None,
                 rule: str | None = None) -> None:
        if len(a.run_ids) != 1 or len(b.run_ids) != 1:
            raise ValueError("a RunComparison compares one run with one run; use "
                             "rk.compare_runs to pick them")
        self.base = a
        self.events = b
        self.branch = None
        self.status = "completed"
        self.error: str | None = None
        self.fixtures = FixtureRegistry()
        self.requirements: list[dict[str, Any]] = []
        self.effects: list[dict[str, Any]] = []
        self.probes: list[dict[str, Any]] = []
        self.a_run_id = a.run_ids[0]
        self.b_run_id = b.run_ids[0]
        self.tenant_id = b.tenants[0] if b.tenants else ""
        self.key = key
        self.rule = rule or "the two runs named"
        self.replay_id = f"{self.a_run_id} vs {self.b_run_id}"
        self.labels = ("run A", "run B")
        self._metrics: dict[str, Any] | None = None
        self._diff: pd.DataFrame | None = None
        self._pair_changes: dict[tuple[int, int], list[dict[str, Any]]] = {}

    def __repr__(self) -> str:
        m = self.metrics
        return (f"RunComparison(A={self.a_run_id!r}, B={self.b_run_id!r}, first divergence "
                f"{m['first_divergence_step']}, tool-sequence distance "
                f"{m['tool_sequence_distance']})")

    def _repr_html_(self) -> str:
        import html

        m = self.metrics
        head = (f"<p><b>Run A</b> <code>{html.escape(self.a_run_id)}</code> vs <b>run B</b> "
                f"<code>{html.escape(self.b_run_id)}</code>: first divergence at step "
                f"{m['first_divergence_step']}, tool-sequence distance "
                f"{m['tool_sequence_distance']}</p>")
        return head + str(self.summary()._repr_html_())

    @property
    def run_id(self) -> str:
        """Run B's id (the side a replay's ``run_id`` names)."""
        return self.b_run_id

    @property
    def first_divergence(self) -> int:
        """The first position (0-based, in both runs) whose event signatures differ; -1
        when the runs are identical (``metrics["first_divergence_step"]``)."""
        return int(self.metrics["first_divergence_step"])

    @property
    def tool_sequence_distance(self) -> int:
        """Edit distance between the two runs' tool-name sequences
        (``metrics["tool_sequence_distance"]``)."""
        return int(self.metrics["tool_sequence_distance"])

    @property
    def metrics(self) -> dict[str, Any]:
        """Every metric of docs/metrics.md for run B against run A (a dict)."""
        if self._metrics is None:
            from .compare import compare

            pairs = pd.DataFrame({"tenant_id": [self.tenant_id],
                                  "base_run_id": [self.a_run_id],
                                  "replay_run_id": [self.b_run_id],
                                  "status": ["completed"], "exact_policies": [True]})
            row = compare(self.base, self.events, pairs).iloc[0].to_dict()
            self._metrics = {k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}
        return self._metrics

    @property
    def comparability(self) -> str:
        """``exact``, ``aligned``, ``diverged_but_comparable`` or ``non_comparable``."""
        return str(self.metrics["comparability"])

    def annotations_df(self) -> pd.DataFrame:
        """One row per event of run B: seq, base_seq (null: nothing is copied), origin and
        provenance (``recorded``: both runs are recordings). Column-wise."""
        seqs = self.events.table.column("seq").to_numpy(zero_copy_only=False)
        n = len(seqs)
        return pd.DataFrame({
            "seq": pd.array(seqs, dtype="Int64"),
            "base_seq": pd.array([pd.NA] * n, dtype="Int64"),
            "origin": pd.array(np.full(n, "recorded", dtype=object), dtype="string"),
            "provenance": pd.array(np.full(n, "recorded", dtype=object), dtype="string")})

    def changes_df(self) -> pd.DataFrame:
        """One row per changed JSON path of every changed aligned event (path, before in
        run A, after in run B): :func:`replaykit.branch.findings.changes_df`."""
        from .findings import changes_df

        return changes_df(self)

    def tools_df(self) -> pd.DataFrame:
        """The tool calls of both runs side by side, aligned by (tool, arguments hash): one
        row per aligned call with ``status`` (same / changed / added / removed), the seqs
        and tool names of both sides (A = ``base_*``, B = ``replay_*``) and ``note``."""
        from .compare import tool_seq_diff

        return tool_seq_diff(self.base.table, self.events.table)

    def summary(self, *, changes: pd.DataFrame | None = None) -> Any:
        """The findings (a :class:`~replaykit.branch.findings.Summary`): the answer line,
        where the runs part, the tool activity of each, the key changed values, how each
        ends, and what a recorded-vs-recorded comparison can and cannot show."""
        return summarize_runs(self, changes=changes)

    def resume(self, fixtures: Any = None) -> RunComparison:
        """Not available: nothing was replayed, so nothing can be resumed.

        Raises:
            TypeError: always.
        """
        raise TypeError("a comparison of two recorded runs has nothing to resume; to test a "
                        "change, branch a run (rk.Branch) and replay it (rk.replay)")


class RunComparisons(Sequence[RunComparison]):
    """Pairs of recorded runs from two sets, each a :class:`RunComparison`.

    ``pairs`` (a DataFrame: ``key``, ``a_run_id``, ``b_run_id``) says which run of set A
    was paired with which of set B and by what; :meth:`metrics_df` is one row per pair with
    every metric (``rk.compare`` on the pairs); ``comparisons[i]`` is one pair's
    :class:`RunComparison`.

    Example:
        >>> cs = rk.compare_runs(log_a, log_b, by="prompt")  # doctest: +SKIP
        >>> cs.metrics_df()[["key", "first_divergence_step"]]  # doctest: +SKIP
    """

    def __init__(self, a: EventLog, b: EventLog, pairs: pd.DataFrame, *, by: str,
                 tenant_id: str | None) -> None:
        self.a, self.b, self.by, self.tenant_id = a, b, by, tenant_id
        self.pairs = pairs.reset_index(drop=True)
        self._items: dict[int, RunComparison] = {}

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, i: int) -> RunComparison:  # type: ignore[override]
        i = range(len(self))[i]
        if i not in self._items:
            r = self.pairs.iloc[i]
            # the pair's own tenant when the pairing recorded one (by=: same tenant)
            tenant = r["tenant_id"] if "tenant_id" in r.index and isinstance(
                r["tenant_id"], str) else self.tenant_id
            self._items[i] = RunComparison(
                _one_run(self.a, str(r["a_run_id"]), tenant, "the first log"),
                _one_run(self.b, str(r["b_run_id"]), tenant, "the second log"),
                key=r["key"], rule=f"paired by {self.by}")
        return self._items[i]

    def __iter__(self) -> Iterator[RunComparison]:
        return (self[i] for i in range(len(self)))

    def __repr__(self) -> str:
        return f"RunComparisons({len(self)} pair(s), by={self.by!r})"

    def metrics_df(self) -> pd.DataFrame:
        """One row per pair: ``key`` then every column of :func:`replaykit.compare`
        (base = set A, replay = set B), computed column-wise over all pairs at once."""
        from .compare import compare

        p = self.pairs.rename(columns={"a_run_id": "base_run_id", "b_run_id": "replay_run_id"})
        cols = ["tenant_id", "base_run_id", "replay_run_id"] if "tenant_id" in p \
            else ["base_run_id", "replay_run_id"]
        out = compare(self.a, self.b, p[cols])
        out.insert(0, "key", self.pairs["key"].to_numpy())
        return out


# ----------------------------------------------------------------------------- pairing
def _run_keys(log: EventLog, by: str) -> pd.DataFrame:
    """One row per run of ``log``: tenant_id, run_id, key (``by``), column-wise.

    ``prompt``: the text of the run's first ``user_message`` (whitespace collapsed);
    ``task``: the runs table's ``task`` column when there is one, else the prompt; any other
    name: that column of ``log.runs_df()``.
    """
    t = log.table
    runs = pd.DataFrame({"tenant_id": pc.cast(t.column("tenant_id"), pa.string()).to_numpy(
        zero_copy_only=False), "run_id": pc.cast(t.column("run_id"), pa.string()).to_numpy(
        zero_copy_only=False)}).drop_duplicates(ignore_index=True)
    if by == "task":
        rdf = log.runs_df()
        by = "task" if "task" in rdf.columns else "prompt"
    if by == "prompt":
        m = pc.fill_null(pc.equal(pc.cast(t.column("kind"), pa.string()), "user_message"),
                         False)
        u = t.filter(m).select(["tenant_id", "run_id", "text"])
        df = pd.DataFrame({
            "tenant_id": pc.cast(u.column("tenant_id"), pa.string()).to_numpy(
                zero_copy_only=False),
            "run_id": pc.cast(u.column("run_id"), pa.string()).to_numpy(zero_copy_only=False),
            "key": pc.utf8_trim_whitespace(pc.replace_substring_regex(
                pc.cast(u.column("text"), pa.string()), r"\s+", " ")).to_numpy(
                zero_copy_only=False)})
        df = df.dropna(subset=["key"])
        df = df[df["key"] != ""].drop_duplicates(["tenant_id", "run_id"])  # the first one
        return runs.merge(df, on=["tenant_id", "run_id"], how="left")
    rdf = log.runs_df()
    if by not in rdf.columns:
        raise KeyError(f"by={by!r}: the runs table has no such column; pair by "
                       f"{', '.join(map(repr, PAIR_KEYS))} or one of its columns: "
                       + ", ".join(map(repr, rdf.columns)))
    keys = rdf[["tenant_id", "run_id", by]].rename(columns={by: "key"})
    keys["key"] = keys["key"].astype("string")
    return runs.merge(keys.astype({"tenant_id": object, "run_id": object}),
                      on=["tenant_id", "run_id"], how="left")


def pair_runs(log_a: EventLog, log_b: EventLog, *, by: str = "prompt") -> pd.DataFrame:
    """Which run of ``log_a`` goes with which run of ``log_b``: one row per pair (``key``,
    ``tenant_id``, ``a_run_id``, ``b_run_id``).

    The rule: runs with equal keys (``by``: ``"prompt"`` -- the run's first user message,
    whitespace collapsed --, ``"task"`` -- the runs table's ``task`` column, else the
    prompt --, or any column of ``runs_df()``) and the same tenant are paired in the order
    they appear in their logs (the first A run of a key with the first B run of that key,
    and so on); a run with no partner, or no key, is left out and counted in a warning.

    Example:
        >>> pair_runs(monday, tuesday, by="prompt")  # doctest: +SKIP

    Raises:
        KeyError: ``by`` names no key the runs table has.
    """
    ka, kb = _run_keys(log_a, by), _run_keys(log_b, by)
    for k in (ka, kb):
        k["n"] = k.groupby(["tenant_id", "key"], dropna=False).cumcount()
    p = ka.dropna(subset=["key"]).merge(kb.dropna(subset=["key"]),
                                        on=["tenant_id", "key", "n"], suffixes=("_a", "_b"))
    out = pd.DataFrame({"key": p["key"].to_numpy(), "tenant_id": p["tenant_id"].to_numpy(),
                        "a_run_id": p["run_id_a"].to_numpy(),
                        "b_run_id": p["run_id_b"].to_numpy()})
    left_a, left_b = len(ka) - len(out), len(kb) - len(out)
    if left_a or left_b:
        warnings.warn(f"pairing by {by}: {len(out)} pair(s); {left_a} run(s) of the first "
                      f"log and {left_b} of the second have no partner with the same {by} "
                      "and are left out (pass pairs=DataFrame(a_run_id=..., b_run_id=...) to "
                      "choose them yourself)", UserWarning, stacklevel=3)
    return out


#: ``pairs=`` of :func:`compare_runs`: a frame with a_run_id / b_run_id, or (a, b) tuples.
PairsArg: TypeAlias = "pd.DataFrame | Sequence[tuple[str, str]]"


@overload
def compare_runs(log_a: EventLog, log_b: EventLog | None = None, *,
                 runs: tuple[str, str] | None = None, pairs: None = None, by: None = None,
                 tenant_id: str | None = None) -> RunComparison: ...


@overload
def compare_runs(log_a: EventLog, log_b: EventLog | None = None, *, runs: None = None,
                 pairs: None = None, by: str, tenant_id: str | None = None
                 ) -> RunComparisons: ...


@overload
def compare_runs(log_a: EventLog, log_b: EventLog | None = None, *, runs: None = None,
                 pairs: PairsArg, by: None = None, tenant_id: str | None = None
                 ) -> RunComparisons: ...


def compare_runs(log_a: EventLog, log_b: EventLog | None = None, *,
                 runs: tuple[str, str] | None = None, pairs: PairsArg | None = None,
                 by: str | None = None,
                 tenant_id: str | None = None) -> RunComparison | RunComparisons:
    """Compare recorded runs directly: one run with another, or two sets paired by a key.

    * ``compare_runs(log, runs=("A", "B"))``: runs A and B of one log;
    * ``compare_runs(log_a, log_b)``: the one run of each log (or ``runs=(a, b)``, A from
      ``log_a`` and B from ``log_b``);
    * ``compare_runs(log, runs=...)`` with ``log`` holding exactly two runs may leave out
      ``runs``: they are compared in the order of ``log.run_ids``;
    * ``compare_runs(log_a, log_b, by="prompt" | "task" | COLUMN)``: every run of ``log_a``
      with the run of ``log_b`` that has the same key (see :func:`pair_runs` for the rule);
      or ``pairs=`` (a DataFrame with ``a_run_id`` and ``b_run_id``, or a list of
      ``(a, b)`` tuples) to name the pairs yourself.

    Returns a :class:`RunComparison` for one pair (``runs=`` or one run each), a
    :class:`RunComparisons` for sets (``by=`` or ``pairs=``). Both runs are recordings:
    nothing was intervened on, so the findings say their differences are associations, not
    causes (:data:`RECORDED_CAVEAT`).

    Example:
        >>> cmp = rk.compare_runs(log, runs=("s-1", "s-2"))  # doctest: +SKIP
        >>> cmp.first_divergence, cmp.summary().answer  # doctest: +SKIP
        >>> rk.report.rca(cmp).save_html("runs.html")  # doctest: +SKIP

    Raises:
        KeyError: a run named is not in its log (the message lists the runs it holds), or
            ``by`` names no key of the runs table.
        ValueError: which runs to compare is ambiguous (a log with several runs and no
            ``runs=`` / ``by=`` / ``pairs=``), or both ``by`` and ``pairs`` are given.
        TypeError: a log holds several tenants and ``tenant_id`` is not given.
    """
    if by is not None and pairs is not None:
        raise ValueError("give by= or pairs=, not both")
    other = log_a if log_b is None else log_b
    if by is not None or pairs is not None:
        if runs is not None:
            raise ValueError("runs= names one pair; by= / pairs= pair two sets: give one")
        if pairs is None:
            assert by is not None
            frame = pair_runs(log_a, other, by=by)
            rule = by
        else:
            frame = pd.DataFrame(pairs, columns=["a_run_id", "b_run_id"]) \
                if not isinstance(pairs, pd.DataFrame) else pairs.copy()
            missing = {"a_run_id", "b_run_id"} - set(frame.columns)
            if missing:
                raise ValueError(f"pairs needs columns a_run_id and b_run_id; missing "
                                 f"{sorted(missing)}")
            if "key" not in frame:
                frame["key"] = [f"pair {i}" for i in range(len(frame))]
            for col, lg, what in (("a_run_id", log_a, "the first log"),
                                  ("b_run_id", other, "the second log")):
                bad = sorted(set(frame[col].astype(str)) - set(lg.run_ids))
                if bad:
                    raise KeyError(f"pairs name run(s) not in {what}: {bad[:5]}; its runs: "
                                   + ", ".join(map(repr, lg.run_ids[:20])))
            rule = "pairs given"
        keep = [c for c in ("key", "tenant_id", "a_run_id", "b_run_id") if c in frame]
        return RunComparisons(log_a, other, frame[keep], by=rule, tenant_id=tenant_id)
    if runs is not None:
        if isinstance(runs, str) or len(runs) != 2:
            raise ValueError(f"runs= names two runs (A, B), got {runs!r}")
        a_id, b_id = str(runs[0]), str(runs[1])
    elif log_b is None:
        ids = log_a.run_ids
        if len(ids) != 2:
            raise ValueError(f"the log holds {len(ids)} runs; name the two to compare: "
                             "rk.compare_runs(log, runs=(RUN_A, RUN_B)); its runs: "
                             + ", ".join(map(repr, ids[:20])))
        a_id, b_id = ids[0], ids[1]
    else:
        a_id = b_id = None  # type: ignore[assignment]
    a = _one_run(log_a, a_id, tenant_id, "the first log" if log_b is not None else "the log")
    b = _one_run(other, b_id, tenant_id, "the second log" if log_b is not None else "the log")
    return RunComparison(a, b, rule="the two runs named" if runs is not None else
                         "the one run of each log" if log_b is not None
                         else "the two runs of the log, in order")


# ----------------------------------------------------------------------------- findings
def _tool_counts(t: pa.Table) -> tuple[list[str], dict[str, int]]:
    """(tool names in call order, calls per tool) of one run, column-wise."""
    m = pc.fill_null(pc.equal(pc.cast(t.column("kind"), pa.string()), "tool_call"), False)
    names = pc.fill_null(pc.cast(t.filter(m).column("tool_name"), pa.string()), "?")
    seq = names.to_pylist()
    vc = pc.value_counts(names).to_pylist() if len(names) else []  # first-seen order
    counts = {d["values"]: int(d["counts"]) for d in vc}
    # most called first; equal counts in the order the run first called them
    return seq, dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def _counts_text(counts: Mapping[str, int], limit: int = 6) -> str:
    if not counts:
        return "no tool call"
    items = list(counts.items())
    parts = [f"{k} \u00d7{v}" if v > 1 else k for k, v in items[:limit]]
    if len(items) > limit:
        parts.append(f"{len(items) - limit} more tool(s)")
    return ", ".join(parts)


def _event_name(t: pa.Table, pos: int, other: pa.Table | None = None) -> str:
    """What the event at position ``pos`` is, in words a reviewer reads
    (:func:`replaykit._base.envelope.event_words`: ``a call to Bash``, ``a model answer``,
    ``a file-history-snapshot log entry``, never a bare kind such as ``other``); with the
    start of its text, or "with other arguments", when ``other`` has an event of the same
    kind and tool there."""
    from .._base.envelope import event_words

    if not 0 <= pos < t.num_rows:
        return "no event (the run has ended)"
    kind = t.column("kind")[pos].as_py()
    tool = t.column("tool_name")[pos].as_py()
    name = event_words(kind, tool_name=tool, type_=t.column("type")[pos].as_py(),
                       is_error=bool(t.column("is_error")[pos].as_py()))
    if other is not None and 0 <= pos < other.num_rows \
            and other.column("kind")[pos].as_py() == kind \
            and other.column("tool_name")[pos].as_py() == tool:
        text = t.column("text")[pos].as_py()
        if isinstance(text, str) and text.strip():
            words = " ".join(text.split())  # quoted whole: the sentence goes on after it
            name += ' "' + (words if len(words) <= 48 else words[:47] + "\u2026") + '"'

        elif t.column("args_hash")[pos].as_py() != other.column("args_hash")[pos].as_py():
            name += " with other arguments"
    return name


#: event kinds that are the agent's own (the last of them is how a run ends, for a reader).
_AGENT_KINDS = ("user_message", "model_request", "model_response", "model_chunk", "tool_call",
                "tool_result", "turn_end", "session_end", "error")

#: What each comparability class means for two recorded runs (docs/metrics.md's rules).
RECORDED_COMPARABILITY = {
    "exact": "every event signature is the same in both runs.",
    "aligned": "the tool calls (tool and arguments) and the last event match; some event "
               "content differs.",
    "diverged_but_comparable": "the runs part, yet their tool sequences stay within half "
                               "their length of each other: variants of one course of action.",
    "non_comparable": "the tool sequences are more than half their length apart (normalised "
                      "distance above 0.5): the runs took different courses; compare their "
                      "steps, not their outcomes as variants of one.",
}


def _ending(t: pa.Table) -> str:
    """How a run ends, for a reader: its last event of the agent's own (not bookkeeping
    lines), in the words every finding uses (:func:`replaykit._base.envelope.terminal_state`:
    ``stopped: end_turn``, ``error: tool failed (Bash)``, ``asked the user``)."""
    from .findings import _terminal

    words, _ = _terminal(t)
    return words or "no event"


def summarize_runs(result: Any, *, changes: pd.DataFrame | None = None) -> Any:
    """The findings of a comparison of two recorded runs (``result.intervened`` False): a
    :class:`~replaykit.branch.findings.Summary` whose answer line names where the runs part
    and their tool activity, then the key changed values, how each run ends, the strength of
    the evidence and what such a comparison can and cannot show (:data:`RECORDED_CAVEAT`).
    Rules: docs/report.md ("Two recorded runs")."""
    from .._base.envelope import event_words
    from .findings import (
        EVENTS_NAMED,
        Summary,
        _positions_of,
        _values_phrase,
        changes_df,
    )
    from .metrics import COMPARABILITY

    A, B = result.labels
    m = result.metrics
    a_t, b_t = result.base.table, result.events.table
    step = int(m.get("first_divergence_step", -1))
    ch = changes_df(result) if changes is None else changes
    key = ch[ch["key"]] if len(ch) else ch
    rows: list[dict[str, Any]] = []

    def add(kind: str, sentence: str, section: str, derived: str,
            at: int | None = None) -> None:
        rows.append({"kind": kind, "sentence": sentence, "section": section,
                     "derived_from": derived} | ({"step": at} if at is not None else {}))

    a_seq, a_counts = _tool_counts(a_t)
    b_seq, b_counts = _tool_counts(b_t)
    dist = int(m.get("tool_sequence_distance") or 0)
    diff = result.diff_df()
    n_changed = int((diff["status"] != "same").sum())

    # ---- outcome
    if step < 0 and n_changed == 0:
        add("outcome", f"{A} and {B} match event for event: every event's kind, tool, "
            "arguments and text, and every payload field, are the same.", "first-divergence",
            "diff_df() has no row other than 'same'")
    else:
        where = step if step >= 0 else 0
        add("outcome", f"The runs first differ at step {where:,}: {A} has "
            f"{_event_name(a_t, where, b_t)}, {B} has {_event_name(b_t, where, a_t)}; "
            f"{_count(m.get('changed_descendants'))} later position(s) differ in kind, tool, "
            f"arguments or text, and {n_changed:,} aligned event(s) differ in some field.",
            "first-divergence", "metrics.first_divergence_step, changed_descendants, "
            "diff_df()", at=where)
    add("outcome", f"Tool activity: {A} made {len(a_seq):,} tool call(s) "
        f"({_counts_text(a_counts)}), {B} made {len(b_seq):,} ({_counts_text(b_counts)}); "
        f"the tool sequences are {dist:,} edit(s) apart (normalised "
        f"{float(m.get('tool_sequence_distance_norm') or 0):.2f}), "
        f"{_count(m.get('tool_signature_distance'))} counting arguments.", "tool-diff",
        "kind == tool_call per run; metrics.tool_sequence_distance(_norm), "
        "tool_signature_distance")
    only_a = [k for k in a_counts if k not in b_counts]
    only_b = [k for k in b_counts if k not in a_counts]
    if only_a or only_b:
        parts = []
        if only_a:
            parts.append(f"only {A} called {', '.join(only_a[:6])}")
        if only_b:
            parts.append(f"only {B} called {', '.join(only_b[:6])}")
        text = "; ".join(parts)
        add("outcome", text[:1].upper() + text[1:] + ".", "tool-diff",
            "tool names present in one run's tool calls only")
    if len(key):
        events = key.drop_duplicates("row")
        # tool calls on one side only: one sentence per side (their results, and other
        # events, are counted by the sentences above)
        for status, side, other in (("removed", A, B), ("added", B, A)):
            one = events[(events["status"] == status) & (events["kind"] == "tool_call")]
            if len(one):
                calls = [f"{t} at step {int(st):,}" for t, st in
                         zip(one["tool_name"].fillna("?"), one["step"], strict=True)]
                add("outcome", f"Tool calls only in {side} (nothing aligns with them in "
                    f"{other}): " + ", ".join(calls[:8])
                    + (f" and {len(calls) - 8:,} more" if len(calls) > 8 else "") + ".",
                    "changes", "changes_df() whole-event rows of tool calls",
                    at=int(one["step"].iloc[0]))
        events = events[~events["status"].isin(["added", "removed"])]
        tools = events[events["kind"].isin(["tool_call", "tool_result"])]
        named = tools if len(tools) else events
        for ev in named.head(EVENTS_NAMED).itertuples(index=False):
            vals = key[key["row"] == ev.row]
            who = ev.tool_name if isinstance(ev.tool_name, str) and ev.tool_name else ev.kind
            d = diff.loc[ev.row]
            a_kind, a_tool = d["base_kind"], d["base_tool"]
            a_pos = _positions_of(a_t, [int(d["base_seq"])]) if pd.notna(d["base_seq"]) else {}
            a_at = a_pos.get(int(d["base_seq"])) if a_pos else None
            a_what = event_words(  # the source's own event type for one no category fits
                a_kind, tool_name=a_tool,
                type_=a_t.column("type")[a_at].as_py() if a_at is not None else None,
                is_error=bool(a_t.column("is_error")[a_at].as_py()) if a_at is not None
                else False)
            if a_kind != ev.kind or (isinstance(a_tool, str) and a_tool != ev.tool_name):
                # aligned, but not the same action: say what each run did there
                b_at = _positions_of(b_t, [int(ev.replay_seq)]).get(int(ev.replay_seq)) \
                    if pd.notna(ev.replay_seq) else None
                did = {"tool_call": f"calls {who}", "tool_result": f"gets {who}'s result"}.get(
                    str(ev.kind), "has " + event_words(
                        ev.kind, tool_name=ev.tool_name,
                        type_=b_t.column("type")[b_at].as_py() if b_at is not None else None))
                add("outcome", f"At step {int(ev.step):,} {B} {did} where {A} has {a_what}.",
                    "changes", "diff_df() kinds and tools of an aligned pair", at=int(ev.step))
                continue
            what = {"tool_call": "was called with", "tool_result": "returned"}.get(
                str(ev.kind), "differs:")
            add("outcome", f"{who} {what} {_values_phrase(vals)} at step {int(ev.step):,} "
                f"({A} \u2192 {B}).", "changes", "changes_df() rows with key=True",
                at=int(ev.step))
    a_end, b_end = _ending(a_t), _ending(b_t)
    same_end = a_end == b_end
    add("outcome", (f"Both runs end the same way ({a_end})." if same_end else
                    f"The runs end differently: {A} {a_end}, {B} {b_end}."), "descendants",
        "last event of each run that is the agent's own: kind, tool, finish or outcome")

    # ---- evidence
    cls = str(m.get("comparability"))
    adv = COMPARABILITY.get(cls, {"meaning": "unknown class", "advice": ""})
    add("evidence", f"Comparability {cls} (how far apart the two recordings are, by the "
        f"rules of docs/metrics.md): {RECORDED_COMPARABILITY.get(cls, adv['meaning'])}",
        "comparability", "metrics.comparability")
    try:
        from ..provenance.stamps import stamp_diff

        sd = stamp_diff(result.base, result.events)
    except Exception:  # noqa: BLE001 -- stamps are evidence, never a reason to fail
        sd = None
    if sd is not None and len(sd):
        from .findings import _stamp_value

        both = sd["a"].notna() & sd["b"].notna()
        differed = [f"{r.field} {_stamp_value(str(r.a))} in {A}, {_stamp_value(str(r.b))} "
                    f"in {B}" if max(len(str(r.a)), len(str(r.b))) <= 40
                    else f"{r.field} (text differs)"
                    for r in sd[both & sd["changed"]].itertuples()]
        pinned = sd.loc[both & ~sd["changed"], "field"].astype(str).tolist()
        parts = []
        if differed:
            parts.append("differ: " + "; ".join(differed))
        if pinned:
            parts.append("the same in both: " + ", ".join(pinned))
        if parts:
            add("evidence", "Recorded settings " + "; ".join(parts) + ".", "repro",
                "stamp_diff(run A, run B)")
    add("evidence", f"Paired: {result.rule}"
        + (f" (key {str(result.key)[:80]!r})" if getattr(result, "key", None) else "")
        + f"; {A} is {result.a_run_id}, {B} is {result.b_run_id}.", "interventions",
        "how compare_runs picked the runs")

    # ---- caveats: what a recorded-vs-recorded comparison can and cannot show
    add("caveat", RECORDED_CAVEAT, "question", "intervened is False: two recordings, no "
        "intervention")

    verdict = "Identical" if (step < 0 and n_changed == 0) else "Different"
    if verdict == "Identical":
        answer = (f"Identical: {A} and {B} match event for event ({len(a_seq):,} tool "
                  "call(s) each); recorded runs, no intervention.")
    else:
        where = step if step >= 0 else 0
        answer = (f"Different: the runs part at step {where:,} ({A} has "
                  f"{_event_name(a_t, where, b_t)}, {B} has {_event_name(b_t, where, a_t)}); "
                  f"tool calls "
                  f"{A} {len(a_seq):,} ({_counts_text(a_counts, 4)}) vs {B} {len(b_seq):,} "
                  f"({_counts_text(b_counts, 4)}), {dist:,} edit(s) apart; "
                  + (f"both end the same way ({a_end})" if same_end else
                     f"{A} ends: {a_end}; {B} ends: {b_end}")
                  + ". Recorded runs, no intervention: these are associations, not causes.")
    rows.insert(0, {"kind": "answer", "sentence": answer, "section": "findings",
                    "derived_from": "metrics, tool calls of each run, the terminal events"})
    return Summary(rows, key.reset_index(drop=True) if len(key) else key, [], None)


def _count(v: Any) -> str:
    try:
        return f"{int(v):,}"
    except (TypeError, ValueError):
        return str(v)

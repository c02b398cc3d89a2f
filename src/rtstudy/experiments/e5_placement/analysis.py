"""E5, Holoscan 5.0's placement promises provoked: loading, each cell's outcome, and H5b.

H5b: each failure E5 provokes ends as NVIDIA's 5.0 API reference says it will under each
probe failure policy and IRQ isolation value (:data:`published.SENTENCES`): rejected before
the lane starts (``fail_admission``, ``require_isolated``), or run with an explicit fallback
in its record (``warn_and_record_fallback``, ``prefer_isolated``). Each cell's *outcome* is
what Holoscan did (:func:`outcome`), its *promise* what the reference says it should have
done (:func:`promise`); a condition is as documented when every repetition's outcome is its
promise. 4.x has neither option: its cells are the contrast, with no promise to check.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import pandas as pd

from rtstudy.data.io import Dataset, read_cells, set_aside_drift, stack
from rtstudy.experiments.e5_placement import provoke
from rtstudy.experiments.e5_placement.provoke import NOT_IN_4X
from rtstudy.inference import criteria, judge
from rtstudy.inference.records import POLICIES, thread_mismatches
from rtstudy.inference.stats import DriftCheck
from rtstudy.policies import BY_NUMBER, SCHED_DEADLINE

# The columns and Arrow types of samples.parquet, as the apps write them (data/README.md).
SAMPLES = {"op": "string", "requested_policy": "string", "ran": "int64", "policy": "int64",
           "priority": "int64", "runtime_ns": "int64", "cpus": "string"}

# What Holoscan did with a cell's request (its outcome), one of these; the last two are
# followed by ", an error logged" or ", silently".
RAN = "ran as requested"
FALLBACK = "ran with a recorded fallback"
REJECTED = "rejected at compile"
FAILED = "failed at lane start"
RAISED = "raised an exception"
NOT_AS_REQUESTED = "ran, a thread not as requested"
NEVER_RAN = "ran, an operator never ran"
# A condition against its promise.
AS_DOCUMENTED, DIFFERS = "as documented", "differs"
NOT_PROVOKED, UNDOCUMENTED = "not provoked here", "no documented outcome"
# H5b's rule (rtstudy.inference.criteria): an equality, every condition in every repetition.
RULE = criteria.CRITERIA["h5b_promises"].rule
# A request's policy (SCHED_FIFO …) by the name 5.0's record gives it (``fifo`` …).
RECORD_POLICY = {BY_NUMBER[number]: name for name, number in POLICIES.items()}

_FACTORS = {
    "provocation": ("str", "", "what the cell asks for that the host cannot give "
                    "(`control`: the same request it can give)"),
    "probe_failure_policy": ("str", "", "5.0's `ProbeFailurePolicy` of every requested "
                             f"thread; `{NOT_IN_4X}` for 4.x"),
    "irq_isolation": ("str", "", f"5.0's `IRQIsolation` of every requested thread; "
                      f"`{NOT_IN_4X}` for 4.x"),
    "sdk_api": ("int", "", "the Holoscan API generation the cell ran (4 or 5)"),
}
SCHEMA = {
    "outcomes": ("one row per cell: what Holoscan did with its request", {
        **_FACTORS,
        "provoked": ("bool", "", "whether the provocation took on this host before Holoscan "
                     "ran (privilege dropped, reservations over the admitted bandwidth, CPU "
                     "absent); False for `control` and `irq_isolation`"),
        "irqs_on_cpu": ("int", "count", "device IRQs whose affinity includes the real-time CPU "
                        "(0: the CPU is IRQ-isolated)"),
        "stage": ("str", "", "how far Holoscan went: `rejected at compile`, `failed at lane "
                  "start`, `raised` or `ran`"),
        "diagnostics": ("str", "", "5.0's diagnostics (compile, else run), `; `-joined"),
        "logged": ("str", "", "the SDK's error and warning lines about threads, `; `-joined"),
        "fallback": ("bool", "", "5.0 accepted a placement other than the one requested"),
        "threads": ("int", "count", "threads requested"),
        "threads_ran": ("int", "count", "of them, those whose operator ran"),
        "outcome": ("str", "", "what Holoscan did (analysis.outcome)"),
        "promise": ("str", "", "what NVIDIA's 5.0 reference says it does (analysis.promise); "
                    "empty for 4.x"),
        "check": ("str", "", f"`{AS_DOCUMENTED}`, `{DIFFERS}`, `{NOT_PROVOKED}` or "
                  f"`{UNDOCUMENTED}`"),
    }),
    "threads": ("one row per requested thread of each cell", {
        **_FACTORS,
        "op": ("str", "", "the operator (`op0` …), one per requested thread"),
        "requested_policy": ("str", "", "the policy asked for"),
        "ran": ("int", "", "1 if the operator ran (and read its thread back), else 0"),
        "policy": ("int", "", "the kernel's policy number on its thread (−1: never ran)"),
        "priority": ("int", "", "its FIFO/RR priority (−1: never ran)"),
        "runtime_ns": ("int", "ns", "its SCHED_DEADLINE runtime (−1: never ran)"),
        "cpus": ("str", "", "the CPUs it may run on, `,`-joined (empty: never ran)"),
    }),
}
TABLES = tuple(SCHEMA)


class RequestedRecord(TypedDict):
    """A request in the shape of 5.0's placement record (its ``accepted``)."""

    affinity: list[int] | None
    scheduling: dict  # policy (the record's name), priority, deadline (its three ns or None)


class H5bVerdict(TypedDict, total=False):
    verdict: judge.Verdict
    why: str  # where not testable
    runs: int  # the fewest of any condition


def requested_record(request) -> RequestedRecord:
    """A request in the shape of 5.0's placement record
    (:func:`rtstudy.inference.records.expected`)."""
    deadline = ({"runtime_ns": request.runtime_ns, "deadline_ns": request.deadline_ns,
                 "period_ns": request.period_ns} if request.policy == SCHED_DEADLINE else None)
    return {"affinity": list(request.cpus) or None,
            "scheduling": {"policy": RECORD_POLICY[request.policy],
                           "priority": request.priority or None, "deadline": deadline}}


def outcome(sidecar: dict) -> tuple[str, bool]:
    """What Holoscan did with one cell's request, and whether it recorded a fallback.

    A run whose every thread got what 5.0 accepted (4.x: what was asked) ran as requested, or
    with a recorded fallback where 5.0 accepted other than the request; otherwise an operator
    never ran or a thread differs, with an error logged or silently.
    """
    s, config = sidecar["summary"], sidecar["requested"]["config"]
    if s["stage"] != "ran":
        return {"rejected at compile": REJECTED, "failed at lane start": FAILED,
                "raised": RAISED}[s["stage"]], False
    plan = {r.get("authored_name"): r for r in s["plan_records"]}
    fallback, never, wrong = False, 0, 0
    for request in provoke.requests(config):
        record = plan.get(request.operator) or {}
        accepted = record.get("accepted")
        fallback |= accepted is not None and accepted != record.get("requested")
        sched = (sidecar["operators"].get(request.operator) or {}).get("sched")
        if not sched:
            never += 1
        elif thread_mismatches(accepted or requested_record(request), sched):
            wrong += 1
    if not never and not wrong:
        return (FALLBACK if fallback else RAN), fallback
    said = "an error logged" if s["logged"] else "silently"
    return f"{NEVER_RAN if never else NOT_AS_REQUESTED}, {said}", fallback


def promise(config: dict, provoked: bool, irqs_on_cpu: int) -> str:
    """What NVIDIA's 5.0 reference says a cell ends as ("" for 4.x, which says nothing).

    An unprovoked request runs as requested. A provoked one is rejected under
    ``fail_admission`` and runs with a recorded fallback under ``warn_and_record_fallback``.
    IRQ isolation is provable only where no device IRQ may reach the CPU
    (``irqs_on_cpu`` 0); where it is not, ``require_isolated`` is rejected and
    ``prefer_isolated`` falls back, unless the probe policy rejects it first.
    """
    if config.get("sdk_api", 4) < 5:
        return RAN if config["provocation"] == "control" else ""
    fail = config["probe_failure_policy"] == "fail_admission"
    if config["provocation"] == "irq_isolation":
        if irqs_on_cpu == 0:
            return RAN
        return REJECTED if fail or config["irq_isolation"] == "require_isolated" else FALLBACK
    if not provoked:
        return RAN
    return REJECTED if fail else FALLBACK


def check(config: dict, provoked: bool, got: str, promised: str) -> str:
    """A cell's outcome against its promise (:data:`AS_DOCUMENTED` …)."""
    if not promised:
        return UNDOCUMENTED
    if config["provocation"] in ("no_privilege", "over_admission", "absent_cpu") \
            and not provoked:
        return NOT_PROVOKED
    return AS_DOCUMENTED if got == promised else DIFFERS


def load(directory: Path, cfg: dict) -> Dataset:
    """One row per cell (``outcomes``) and per requested thread (``threads``): :data:`SCHEMA`."""
    cells, missing = read_cells(directory, SAMPLES)
    rows, threads = [], []
    for cell in cells:
        c, s = cell.config, cell.sidecar["summary"]
        base = cell.columns(provocation=c["provocation"],
                            probe_failure_policy=c["probe_failure_policy"],
                            irq_isolation=c["irq_isolation"], sdk_api=int(c.get("sdk_api", 4)))
        got, fallback = outcome(cell.sidecar)
        promised = promise(c, s["provoked"], s["irqs_on_cpu"])
        samples = cell.samples()
        threads.append((samples, base))
        rows.append({**base, "provoked": bool(s["provoked"]), "irqs_on_cpu": int(s["irqs_on_cpu"]),
                     "stage": s["stage"],
                     "diagnostics": "; ".join(s["compile_diagnostics"] or s["run_diagnostics"]),
                     "logged": "; ".join(s["logged"]), "fallback": fallback,
                     "threads": len(samples), "threads_ran": int(samples["ran"].sum()),
                     "outcome": got, "promise": promised,
                     "check": check(c, s["provoked"], got, promised)})
    tables = {"outcomes": pd.DataFrame(rows, columns=[*rows[0]] if rows else None),
              "threads": stack(threads)}
    return Dataset(Path(directory), set_aside_drift(tables, "outcomes"), missing, {})


CONDITION = ["provocation", "probe_failure_policy", "irq_isolation"]
# The order conditions are shown in: provocations as listed, the lenient policy first.
ORDER = {word: i for i, word in enumerate(
    [*provoke.PROVOCATIONS, NOT_IN_4X, "warn_and_record_fallback", "fail_admission",
     "not_requested", "prefer_isolated", "require_isolated"])}


def conditions(outcomes: pd.DataFrame) -> pd.DataFrame:
    """One row per condition over its repetitions: its outcome (``varies: a / b`` where the
    repetitions disagree), promise and check (a condition is as documented only if every
    repetition is), with the first repetition's diagnostics and log lines."""
    rows = []
    for key, g in outcomes.groupby(CONDITION, sort=False):
        seen = list(dict.fromkeys(g["outcome"]))
        checks = set(g["check"])
        word = (DIFFERS if DIFFERS in checks else next(iter(checks)) if len(checks) == 1
                else AS_DOCUMENTED if checks <= {AS_DOCUMENTED, NOT_PROVOKED} else DIFFERS)
        rows.append({**dict(zip(CONDITION, key)), "runs": len(g),
                     "outcome": seen[0] if len(seen) == 1 else "varies: " + " / ".join(seen),
                     "promise": g["promise"].iloc[0], "check": word,
                     "diagnostics": g["diagnostics"].iloc[0], "logged": g["logged"].iloc[0]})
    out = pd.DataFrame(rows)
    return out.sort_values(CONDITION, key=lambda s: s.map(ORDER)).reset_index(drop=True) \
        if len(out) else out


@dataclass(frozen=True)
class E5Headline:
    """What E5's report words and summary row read (``h`` in ``report.md.j2``)."""

    conditions: list[dict]  # each condition's outcome and check (:func:`conditions` rows)
    sdk_api: int  # the newest Holoscan major version measured (0 without outcomes)
    n_conditions: int  # the conditions measured
    n_judged: int  # those whose check judges H5b (as documented, or differs)
    n_differs: int  # those that ended otherwise than documented
    differs: list[dict]  # their rows of ``conditions``
    not_provoked: int  # the conditions whose provocation did not take
    n_cells: int  # the cells measured
    # H5b: ``verdict``, ``why`` (where not testable), ``runs`` (the fewest of any condition).
    verdict: H5bVerdict


def headline(ds: Dataset) -> E5Headline:
    """What E5's words quote: the conditions (:func:`conditions`) and H5b's verdict.

    ``verdict``: ``holds`` where every 5.0 condition that was provoked (or is the control)
    ended as documented, ``fails`` where one did not (each named in ``differs``), not
    testable where no 5.0 condition was (4.x has no failure policy to check).
    """
    outcomes = ds.tables["outcomes"]
    table = conditions(outcomes) if len(outcomes) else pd.DataFrame()
    api = int(outcomes["sdk_api"].max()) if len(outcomes) else 0
    judged = table[table["check"].isin([AS_DOCUMENTED, DIFFERS])] if len(table) else table
    differs = judged[judged["check"] == DIFFERS] if len(judged) else judged
    if api < 5 or not len(judged):
        verdict = judge.NOT_TESTABLE
        why = ("Holoscan 4.x has no failure policy or IRQ isolation to check (5.0's verdict, "
               "where measured, is under \"SDK versions compared\")" if api and api < 5
               else "no condition was measured")
    else:
        verdict, why = (judge.FAILS if len(differs) else judge.HOLDS), ""
    runs = int(outcomes.groupby(CONDITION)["cell_id"].nunique().min()) if len(outcomes) else 0
    return E5Headline(
        conditions=table.to_dict("records"), sdk_api=api,
        n_conditions=len(table), n_judged=len(judged), n_differs=len(differs),
        differs=differs.to_dict("records") if len(differs) else [],
        not_provoked=int((table["check"] == NOT_PROVOKED).sum()) if len(table) else 0,
        n_cells=int(outcomes["cell_id"].nunique()) if len(outcomes) else 0,
        verdict={"verdict": verdict, "why": why, "runs": runs})


def condition_table(table: pd.DataFrame) -> pd.DataFrame:
    """The H5b table: each condition, the reference's words for its values, what it promised,
    what Holoscan did, and the check."""
    from rtstudy.experiments.e5_placement.published import SENTENCES

    def says(r) -> str:
        words = [SENTENCES.get(r["probe_failure_policy"], "")]
        if r["provocation"] == "irq_isolation":
            words.append(SENTENCES.get(r["irq_isolation"], ""))
        return " ".join(w for w in words if w) or "—"

    return pd.DataFrame([{
        "provocation": r["provocation"], "failure policy": r["probe_failure_policy"],
        "IRQ isolation": r["irq_isolation"], "the reference says": says(r),
        # 4.x has neither option, so nothing is promised: its rows are the contrast.
        "promise": r["promise"] or "none (Holoscan 4.x has no failure policy)",
        "what happened": r["outcome"],
        # The first of Holoscan's words: the diagnostic or log line that says why.
        "Holoscan's words": (r["diagnostics"] or r["logged"] or "—").split("; ")[0],
        "check": r["check"], "runs": r["runs"]} for _, r in table.iterrows()])


DRIFT_QUANTITY = ("", "")


def drift(ds: Dataset) -> DriftCheck | None:
    """None: E5's outcomes are admission decisions, not timings that drift."""
    return None


PLOT_FILE = "e5_outcomes.csv"


def plot_table(ds: Dataset) -> pd.DataFrame | None:
    """None: E5 has no quantity for ``dvc plots`` to draw (its table is in the report)."""
    return None

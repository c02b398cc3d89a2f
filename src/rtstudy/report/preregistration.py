"""The protocol's text: every question, its yardstick, its criterion, the words and the sizes,
as one document with a version and a hash (``rtstudy protocol``; ``docs/protocol.md``).

The text is built from the sources the code applies — the criteria
(:mod:`rtstudy.inference.criteria`), the words (:mod:`rtstudy.inference.rates`,
:class:`rtstudy.inference.judge.Verdict`), the sizes of the ``default`` profile (``params.yaml``)
and each experiment's claim — so it cannot say one thing while the code does another. Its
sha256 (:func:`digest`) is frozen with its version in :data:`rtstudy.protocol.FROZEN`;
``tests/test_protocol.py`` fails when the text no longer hashes to the frozen value: a criterion,
a word or a size changed without a new version.
"""
from __future__ import annotations

import hashlib

import yaml

from rtstudy import params, protocol, registry
from rtstudy.inference import criteria, rates
from rtstudy.inference.judge import Verdict

# The profile whose sizes the protocol fixes: the one `make study` measures.
PROFILE = "default"

# What each question's numbers are measured against (the yardsticks), in the protocol's words.
YARDSTICKS = {
    "H1": "E1: rx's latency from the message's t_start and its inter-arrival interval, per "
          "input, after the head and tail discards; the slope of the maximum over the other "
          "producer's period, one point per run",
    "H2": "E2: each frame's lateness, its compute start minus its release on the source clock: "
          "the fixed grid of one period for every Holoscan 4.x policy (SCHED_DEADLINE's "
          "included: the clock a pipeline's frames arrive on), the releases its clock recorded "
          "on Holoscan 5.0 (a skipped release one late frame); late when over the threshold. A "
          "4.x DEADLINE target's own releases (one period after its previous frame: the seeds' "
          "frame-period yardstick) are a second reading beside it, deciding nothing. The seeds' "
          "frame-period std is shown beside the verdict, deciding nothing",
    "H3": "E3: the seed's method, whole app time over N, at the seed's N (fitted over several "
          "N); Greedy and EventBased x1",
    "H4": "E4: the jitter probe's P99.99 / P50 per CPU and repetition, isolated over "
          "housekeeping, like with like; the share of time lost to gaps over "
          "h4_interruption_ns beside it, deciding nothing",
    "H5": "E5 and E2 on Holoscan 5.0: the placement each thread read back from the kernel; the "
          "outcome of each provocation; busy polling against sleeping wake-up on E2's yardstick",
}

CONFIRMATORY = (
    "A verdict is confirmatory when every session it pools was measured under this version "
    "(each cell's cell.json records `protocol.version`) — after its freeze — and exploratory "
    "otherwise; the report says which, with the number of sessions, and metrics.json the same. "
    "The host state the report shows is the one with the most confirmatory sessions (then the "
    "rule of rtstudy.report.study_hosts.report_host). Sessions are pooled, never required to "
    "agree: one confirmatory session decides what its sizes can; each further session of the "
    "host state narrows every interval. The reference measures each of its host states (untuned, "
    "and one CPU shielded at run time) in at least two confirmatory sessions, each a fresh "
    "clone's `make study` (shielded: `make study-tuned`), one after the other; a question two "
    "sessions leave not settled says, from the pooled data, about how many frames or sessions "
    "would settle it. A criterion, word or size changed after this freeze is a new version; "
    "only data measured after that version's freeze decides under it.")

RATE_WORDS = {
    rates.FEWER: "the whole CI at or below the margin's lower end (at least halved): a change "
                 "worth making (a 'Do')",
    rates.SOME_FEWER: "the whole CI from the margin's lower end to below 1: a decided cut, "
                      "decidedly smaller than the smallest worth making",
    rates.EQUIVALENT: "the whole CI inside the margin, across 1 (neither halved nor doubled)",
    rates.SOME_MORE: "the whole CI above 1 up to the margin's upper end",
    rates.MORE: "the whole CI at or above the margin's upper end (at least doubled): a change "
                "to avoid",
    rates.NOT_SETTLED: "the CI reaches past an end of the margin without lying wholly past it",
    rates.TOO_FEW: "fewer late frames than e2_min_late_events in both together: not settled, "
                   "with the change's upper bound",
    rates.NO_CI: "fewer than min_runs runs in a condition",
}


def _value(c: criteria.Criterion) -> str:
    if c.value is None:
        return "—"
    v = "–".join(f"{x:g}" for x in c.value) if isinstance(c.value, tuple) else f"{c.value:g}"
    return f"{v} {c.unit}".strip()


def _sizes() -> str:
    """The measuring groups of the ``default`` profile, resolved, as YAML."""
    configs = params.read(PROFILE)
    kept = {name: configs[name] for name in (params.CPUS, params.SDK, *registry.REGISTRY,
                                             params.REPORT)}
    return yaml.safe_dump(kept, sort_keys=True, default_flow_style=None, width=96).strip()


def body() -> str:
    """The protocol's text without its header (what :func:`digest` hashes)."""
    lines = ["## Questions", ""]
    for name in registry.REGISTRY:
        exp = registry.get(name)
        lines.append(f"- **{exp.section.HYPOTHESIS}** ({exp.section.LABEL}): "
                     f"{exp.section.CLAIM}")
    lines += ["- **H5a** (E2, E5 on Holoscan 5.0): the placement record 5.0 accepts is what "
              "every thread gets (criterion `h5a_record`)",
              "- **H5c** (E2 on Holoscan 5.0): when busy polling (`WakeMode.BUSY_POLL`) helps "
              "against sleeping wake-up (criterion `h5c_min_jitter_reduction`)"]
    lines += ["", "## Yardsticks", ""]
    lines += [f"- **{k}**: {v}" for k, v in YARDSTICKS.items()]
    lines += ["", "## Criteria (smallest effects, margins, rules)", "",
              "| criterion | claim | value | rule |", "|---|---|---|---|"]
    for c in criteria.CRITERIA.values():
        lines.append(f"| `{c.name}` | {c.claim} | {_value(c)} | {c.rule} |")
    lines += ["", "## Words", "", "A late-frame rate ratio's word (E2's changes, H2, H5c):", ""]
    lines += [f"- *{w}*: {meaning}" for w, meaning in RATE_WORDS.items()]
    lines += ["", "A claim's verdict: " + ", ".join(f"*{v.value}*" for v in Verdict) + " "
              "(criterion `verdict_words` says when each undecided word applies).", "",
              "## Confirmatory and exploratory", "", CONFIRMATORY, "",
              f"## Sizes (profile `{PROFILE}`, per session)", "", "```yaml", _sizes(), "```", ""]
    return "\n".join(lines)


def digest() -> str:
    """The sha256 of :func:`body` (hex): what :data:`rtstudy.protocol.FROZEN` freezes."""
    return hashlib.sha256(body().encode()).hexdigest()


def document() -> str:
    """The whole protocol: a header naming its version, freeze and hash, then :func:`body`."""
    frozen = protocol.FROZEN[protocol.VERSION]
    return (f"# rtstudy protocol v{protocol.VERSION}\n\n"
            f"Frozen {frozen.utc}; sha256 of the text below: `{frozen.sha256}`. Generated by "
            "`rtstudy protocol --write` from the criteria, the words and the sizes the code "
            "applies; a change to any of them is a new version, never an edit.\n\n" + body())

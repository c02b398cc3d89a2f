"""How a claim is judged: its parts, each an estimate against a written-down rule, the word
each part gets, and the claim's verdict from them, in one session or over several pooled.

A claim (H1 S1, H2, …) rests on parts: a slope against a minimum, a difference against an
equivalence margin, a cost against a band, a late-frame rate ratio against its margin. Each
part's word comes from its CI alone (:meth:`Rule.state`); the claim's verdict from its parts'
words (each experiment's ``combine``). Where a CI straddles a rule's edge the part is *not
settled*, and :meth:`Part.to_settle` says about how many runs (or sessions) would settle it at
the effect seen. Where the host cannot test the claim at all it is *not testable here*.

Over sessions a part is pooled, never required to agree (:func:`pool`): estimates by a
random-effects mean (:func:`rtstudy.inference.meta.random_effects`; sessions that differ more than
their runs widen it), late-frame counts into one rate ratio
(:func:`rtstudy.inference.rates.pooled_over_sessions`). So a new session can settle a part that
fewer sessions left open, where a verdict by unanimity could only unsettle one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from rtstudy.inference import rates
from rtstudy.inference.meta import random_effects
from rtstudy.inference.stats import MIN_RUNS

class Verdict(str, Enum):
    """A claim's verdict: every word the study may give one, in one type.

    A ``str`` (its value): the report, its templates and ``metrics.json`` show the word, and
    it equals the plain string, so data written before the type existed reads the same.
    """

    REPRODUCED = "reproduced"
    PARTLY = "partly reproduced"
    NOT_REPRODUCED = "not reproduced"
    # H3: a cost outside its band; the H2 control: a difference where none was expected.
    DIFFERS = "differs"
    NO_DIFFERENCE = "no difference"
    # The two ways a claim goes undecided (criteria: verdict_words).
    NOT_SETTLED = "not settled"
    NOT_TESTABLE = "not testable here"
    # A claim whose premise did not hold here (H2: no contention reached the target).
    NOT_APPLICABLE = "not applicable"
    # A claim decided by an equality, with no estimate (H5a, H5b): it holds or it fails.
    HOLDS = "holds"
    FAILS = "fails"
    # A change the study judges for a reader choosing it (H5c, busy polling): it helps, it hurts,
    # or neither by the criterion's margin.
    HELPS = "helps"
    HURTS = "hurts"
    NO_GAIN = "no clear gain"

    # The word itself wherever it is printed, on every Python the study supports.
    __str__ = str.__str__
    __format__ = str.__format__


NOT_TESTABLE, NOT_SETTLED = Verdict.NOT_TESTABLE, Verdict.NOT_SETTLED
NOT_APPLICABLE, HOLDS, FAILS = Verdict.NOT_APPLICABLE, Verdict.HOLDS, Verdict.FAILS

# The rules a part can be judged by; their words for each side of the edge.
AT_LEAST, WITHIN, BAND, RATE = "at least", "within", "band", "rate"
SHOWN, REFUTED, EQUIVALENT, DIFFERENT, CLOSE, FAR = (
    "shown", "refuted", "equivalent", "different", "close", "far")
WORDS = {AT_LEAST: (SHOWN, REFUTED), WITHIN: (EQUIVALENT, DIFFERENT), BAND: (CLOSE, FAR)}
# A rate ratio's words that decide a part (rtstudy.inference.rates); TOO_FEW is a part with no test.
RATE_DECIDED = rates.DECIDED
# Beyond this many runs (or sessions) a part is called practically unsettleable.
MAX_TO_SETTLE = 1000


@dataclass(frozen=True)
class Rule:
    """A written-down rule (:mod:`rtstudy.inference.criteria`) a part's CI is judged by.

    Attributes
    ----------
    kind : str
        :data:`AT_LEAST` (an effect at or above ``threshold``), :data:`WITHIN` (equivalent to 0
        within ±``threshold``), :data:`BAND` (inside the ``(low, high)`` band) or :data:`RATE`
        (a rate ratio against ``e2_late_ratio_margin``; ``threshold`` is that margin).
    threshold : float or tuple of float
        The minimum, the margin or the band, in the part's unit.
    """

    kind: str
    threshold: float | tuple

    def state(self, low: float, high: float) -> str:
        """The word the CI ``[low, high]`` earns; :data:`NOT_SETTLED` where it straddles the
        rule's edge or is missing (fewer than :data:`rtstudy.inference.stats.MIN_RUNS` runs)."""
        if self.kind == RATE:
            raise ValueError("a rate part's word needs its counts: Part.state")
        if not (np.isfinite(low) and np.isfinite(high)):
            return NOT_SETTLED
        yes, no = WORDS[self.kind]
        t = self.threshold
        if self.kind == AT_LEAST:
            return yes if low >= t else no if high < t else NOT_SETTLED
        if self.kind == WITHIN:
            if t <= 0:
                raise ValueError(f"an equivalence margin must be > 0, got {t}")
            return yes if -t < low and high < t else no if low >= t or high <= -t \
                else NOT_SETTLED
        return yes if t[0] <= low and high <= t[1] else no if high < t[0] or low > t[1] \
            else NOT_SETTLED

    def distance(self, value: float) -> float:
        """How far ``value`` lies from the nearest edge a CI around it must clear to decide."""
        t = self.threshold
        if self.kind == AT_LEAST:
            return abs(value - t)
        if self.kind == WITHIN:
            return abs(t - abs(value))
        return min(abs(value - t[0]), abs(value - t[1]))


@dataclass(frozen=True)
class Part:
    """One estimate a claim rests on, judged by its rule.

    Attributes
    ----------
    name : str
        What it is, e.g. ``default slope`` or ``SCHED_FIFO``; the same name in every session.
    rule : Rule
        How it is judged.
    value, low, high : float
        The estimate and its CI (NaN bounds: no CI).
    runs : int
        The independent units behind it: runs, or, pooled, sessions (``level``).
    level : str
        ``runs`` or ``sessions``.
    rate : RateRatio or None
        A rate part's rate ratio itself (its counts, φ, level and df, as
        :func:`rtstudy.inference.rates.pooled_over_sessions` pools them); None for other parts.
    frames_needed : float
        A rate part's frames per condition that would decide it (NaN where decided or not
        planned).
    state : str
        The part's word, computed once when the part is made (:meth:`Rule.state`; a rate
        part's, :func:`rtstudy.inference.rates.word`).
    """

    name: str
    rule: Rule
    value: float
    low: float
    high: float
    runs: int
    level: str = "runs"
    rate: rates.RateRatio | None = None
    frames_needed: float = np.nan
    state: str = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if self.rule.kind != RATE:
            word = self.rule.state(self.low, self.high)
        elif self.rate is None:
            raise ValueError(f"rate part {self.name!r} needs its rate ratio")
        else:
            word = rates.word(self.rate, self.rule.threshold)
        object.__setattr__(self, "state", word)

    def ratio(self) -> rates.RateRatio:
        """A rate part as the rate ratio it is."""
        return self.rate

    @property
    def decided(self) -> bool:
        """Whether its word decides it (a rate part with too few late frames does not)."""
        if self.rule.kind == RATE:
            return self.state in RATE_DECIDED
        return self.state != NOT_SETTLED

    def to_settle(self) -> float:
        """About how many runs (or sessions, at ``level``) in all would settle this part if
        the effect seen held: NaN where it is decided or there is nothing to plan from; inf
        past :data:`MAX_TO_SETTLE` or with the estimate on the edge.

        Without a CI, :data:`rtstudy.inference.stats.MIN_RUNS`. With one, its half-width shrinks as
        1/√n, so n' = n · (half-width / distance to the edge)²: optimistic by the t-quantile
        only, which falls as n grows. A rate part plans frames
        (:func:`rtstudy.inference.rates.frames_needed`) and counts them in runs of today's length.
        """
        if self.decided:
            return np.nan
        if self.rule.kind == RATE:
            per_run = self.rate.exposure_b / max(self.runs, 1)
            need = self.frames_needed
            return float(np.ceil(need / per_run)) if np.isfinite(need) and per_run > 0 \
                else np.nan
        if not (np.isfinite(self.low) and np.isfinite(self.high)):
            return float(MIN_RUNS) if self.level == "runs" else 2.0
        half, d = (self.high - self.low) / 2, self.rule.distance(self.value)
        if d <= 0:
            return np.inf
        n = float(np.ceil(max(self.runs, 1) * (half / d) ** 2))
        return n if n <= MAX_TO_SETTLE else np.inf

    def to_settle_text(self) -> str:
        """``about 12 runs in all`` / ``more than 1000 sessions`` / ``""`` (decided or
        unknown)."""
        n = self.to_settle()
        if not n == n:
            return ""
        return (f"more than {MAX_TO_SETTLE} {self.level}" if not np.isfinite(n) else
                f"about {n:.0f} {self.level} in all")


def pool(parts: list[Part], confidence: float) -> Part:
    """One part from the same part of several sessions: their estimates pooled with a random
    session effect (:func:`rtstudy.inference.meta.random_effects`), a rate part's counts into one
    rate ratio (:func:`rtstudy.inference.rates.pooled_over_sessions`); ``runs`` becomes the sessions
    pooled.

    Parameters
    ----------
    parts : list of Part
        The part as each session gave it (same name and rule), oldest first.
    confidence : float
        The pooled CI's level.
    """
    if not parts:
        raise ValueError("no session's part to pool")
    first = parts[0]
    if first.rule.kind == RATE:
        rr = rates.pooled_over_sessions([p.rate for p in parts], confidence)
        return Part(first.name, first.rule, rr.value, rr.low, rr.high, len(parts), "sessions",
                    rr, rates.frames_to_decide(rr, confidence))
    value, low, high = random_effects([p.value for p in parts], [p.low for p in parts],
                                      [p.high for p in parts], confidence,
                                      runs=[p.runs for p in parts])
    with_ci = sum(1 for p in parts if np.isfinite(p.low) and np.isfinite(p.high))
    return Part(first.name, first.rule, value, low, high, with_ci, "sessions")


def pool_by_name(per_session: list[list[Part]], confidence: float) -> list[Part]:
    """Every part named in any session, pooled over the sessions that have it (first-seen
    order)."""
    names: dict[str, list[Part]] = {}
    for parts in per_session:
        for p in parts:
            names.setdefault(p.name, []).append(p)
    return [pool(ps, confidence) for ps in names.values()]


def unsettled_why(parts: list[Part]) -> str:
    """``async slope's CI straddles its edge: about 9 runs in all would settle it``, for each
    part not settled."""
    out = []
    for p in parts:
        if p.decided:
            continue
        more = p.to_settle_text()
        out.append(f"{p.name}'s CI straddles its edge" + (f": {more} would settle it"
                                                           if more else ""))
    return "; ".join(out)

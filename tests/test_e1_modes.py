"""E1's bimodal runs: which runs of a point are slow, and whether their start-up said so."""
import numpy as np
import pandas as pd

from rtstudy.experiments.e1_async_buffer import analysis

RX_MS = 10


def cells(p50, first_wait, backlog, buffer="async", varied=60):
    n = len(p50)
    return pd.DataFrame({
        "cell_id": [f"{buffer}{varied}-r{i}" for i in range(n)], "scenario": "S2",
        "buffer": buffer, "policy": "deadline", "work_model": "native", "role": "fixed",
        "varied_period_ms": varied, "latency_p50_ms": p50,
        "latency_max_ms": np.asarray(p50, dtype=float) + 0.5, "first_wait_ms": first_wait,
        "backlog_at_first_read": backlog, "phase_switches": [0] * (n - 1) + [2]})


def test_the_start_up_phase_decides_the_async_modes():
    # Two runs caught rx's next tick (~10.5 ms), one missed it (~19.8): their first waits say so.
    table = analysis.modes(pd.concat([
        cells([10.5, 19.8, 10.6], [0.4, 9.7, 0.6], [0, 0, 0]),
        cells([10.5, 10.4, 10.6], [0.4, 0.3, 0.6], [0, 0, 0], varied=20)]), RX_MS)
    row = table.set_index("varied_period_ms").loc[60]
    assert (row["runs"], row["slow"], row["first_wait_agree"], row["backlog_agree"]) == (3, 1, 3, 2)
    assert row["fast_p50_ms"] == 10.55 and row["slow_p50_ms"] == 19.8
    assert table.set_index("varied_period_ms").loc[20, "slow"] == 0
    m = analysis.mode_summary(table)
    assert list(m) == list(analysis.ModeSummary.__annotations__)  # a key per rule, and no other
    assert (m["points"], m["all_points"], m["runs"], m["slow"]) == (1, 2, 3, 1)
    assert m["switched"] == 1  # the point's last run changed phase twice
    assert m["decides"] == "first_wait" and m["where"][0]["varied_period_ms"] == 60


def test_no_rule_decides_when_the_start_up_does_not_separate_the_modes():
    table = analysis.modes(cells([100.0, 200.0, 100.2, 300.0], [5.0, 5.0, 5.0, 5.0],
                                 [0, 1, 1, 2], buffer="default", varied=100), RX_MS)
    (row,) = table.to_dict("records")
    assert (row["slow"], row["first_wait_agree"], row["backlog_agree"]) == (2, 2, 3)
    m = analysis.mode_summary(table)
    assert m["decides"] == "" and m["backlog_agree"] == 3 and m["runs"] == 4


def test_one_mode_everywhere_is_said_so():
    m = analysis.mode_summary(analysis.modes(cells([10.5, 10.4, 10.6], [0.4, 0.3, 0.6],
                                                   [0, 0, 0]), RX_MS))
    assert m["points"] == 0 and m["decides"] == ""

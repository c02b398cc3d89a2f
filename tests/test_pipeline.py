"""The whole pipeline, as a user runs it, in a temporary copy of the project (smoke profile).

`dvc repro` measures every experiment and renders the report; a second repro
re-measures nothing; a DVC experiment changing one E3 parameter re-runs E3 and the
report only; a wrong parameter stops before anything is measured, naming the key.
The tests change, in turn, a copy of conftest.py's ``measured_project``, the smoke
study the whole run shares.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from helpers import BIN, copy_project, sh

from rtstudy import registry
from rtstudy.data.io import read_host
from rtstudy.inference import records
from rtstudy.machine.sysdeps import which
from rtstudy.sdks import sdkroot

pytestmark = [pytest.mark.pipeline, pytest.mark.exclusive]


def ran(output: str) -> set[str]:
    return set(re.findall(r"Running stage '([\w-]+)'", output))


def cells_on_disk(dest: Path, host_id: str = "*", experiment: str = "*") -> int:
    return len(list((dest / "data" / "raw").glob(f"{experiment}/{host_id}/smoke/*/cell.json")))


@pytest.fixture(scope="module")
def project(measured_project, tmp_path_factory):
    """A copy of the session's measured project, which this module's tests change in turn."""
    src, _, first_repro = measured_project
    dest = tmp_path_factory.mktemp("pipeline") / "project"
    return dest, copy_project(src, dest), first_repro


def test_repro_measures_then_renders_the_report(project):
    dest, env, first_repro = project
    assert ran(first_repro) == {"host", *registry.REGISTRY, "report"}
    html = (dest / "report" / "report.html").read_text()
    assert "E3 — What does the Holoscan scheduler cost per iteration?" in html
    assert "seed published" in html
    for section in ("E1 — Does the async lock-free buffer decouple producers",
                    "E2 — Does a real-time thread keep an operator on time",
                    "E4 — Is an isolated core's latency tail close to its median?"):
        assert section in html
    assert html.count("data:image/png;base64") >= 10, "figures must be embedded"
    host_id = json.loads((dest / "data" / "host" / "fingerprint.json").read_text())["host_id"]
    assert "Provenance" in html and host_id in html
    # PNG only here (conftest.py's measured_project); every format in .ci/smoke-study.
    assert (dest / "report" / "figures" / "e3_overhead.png").stat().st_size > 1000
    assert (dest / "executed" / "e3_overhead.ipynb").is_file()
    fp = json.loads((dest / "data" / "host" / "fingerprint.json").read_text())
    e4_cells = len(fp["cpu"]["online"]) + 2  # jitter per CPU + cyclictest + cyclicdeadline
    # E2 at smoke size: 4 policies x 2 load factors, the floor at both, the ladder's rungs the
    # grid lacks (the Python thread; the load outside, as threads, as operators pinned off the
    # target) and with perf one traced run of FIFO and of DEADLINE at the highest load factor.
    e2_cells = 8 + 2 + 4 + (2 if which("perf") else 0)
    # E5 at smoke size on 4.x: control and no_privilege (4.x cannot ask for IRQ isolation).
    e5_cells = 2
    # E3, E1, E2, E4, E5 at smoke size, on the venv's Holoscan (the host's own fingerprint)
    assert cells_on_disk(dest, host_id) == 6 + 8 + e2_cells + e4_cells + e5_cells
    # Holoscan 5.0 (params.yaml sdk) in its Debian 13 root: E2's policies without the
    # shared-pool `normal` at the top load factor, FIFO without loads (the target alone), and
    # busy-poll at the top (the ladder's loaded rungs and the unloaded grid are 4.x's: plan5),
    # and where the 4.x plan traces FIFO (perf on the host), busy-poll traced (H5c).
    if not sdkroot.problems():
        traced5 = 1 if which("perf") else 0
        assert cells_on_disk(dest, experiment="e2_rt_threads") - e2_cells == 3 + 1 + 1 + traced5
        five = [d for d in (dest / "data" / "raw" / "e2_rt_threads").iterdir() if d.name != host_id]
        assert len(five) == 1 and read_host(five[0] / "smoke")["sdk"]["version"] == "5.0.0"
        # H5a: the 5.0 host's placement records compared with its threads, and judged (which
        # word is measured, not asserted); the 4.x host has none.
        hosts = json.loads((dest / "report" / "metrics.json").read_text())["hosts"]
        audit = hosts[five[0].name]["H5"]
        assert audit["threads"] >= 5  # E2's five 5.0 cells, one target each (E1's add three a cell)
        assert audit["verdicts"]["H5a"]["verdict"] in (records.HOLDS, records.FAILS)
        assert "H5" not in hosts[host_id]
        assert "placement records against the kernel (H5a)" in html
        # H5b: E5's table for each SDK version of this machine state, in "SDK versions compared".
        assert html.count("E5 on Holoscan") == 2 and html.count(
            "Does Holoscan 5.0 keep its placement promises when provoked?") >= 2
    # The tables DVC plots (dvc.yaml plots:), one per experiment, and `dvc plots show` draws them.
    plots = sorted(p.name for p in (dest / "report" / "plots").glob("*.csv"))
    assert plots == ["e1_max_latency.csv", "e2_period_std.csv", "e3_whole_app.csv",
                     "e4_lost_share.csv"]
    head = (dest / "report" / "plots" / "e1_max_latency.csv").read_text().splitlines()[0]
    assert head.startswith("varied_period_ms,repetition,") and "S1_default" in head
    sh([str(BIN / "dvc"), "plots", "show", "-o", str(dest / "plots-html")], dest, env)
    assert (dest / "plots-html" / "index.html").stat().st_size > 1000


def test_second_repro_measures_nothing(project):
    dest, env, _ = project
    before = cells_on_disk(dest)
    out = sh([str(BIN / "dvc"), "repro"], dest, env)
    assert ran(out.stdout) <= {"host"}, out.stdout
    assert cells_on_disk(dest) == before


@pytest.mark.measures  # re-runs E3
def test_a_dvc_experiment_changing_one_e3_parameter_reruns_e3_and_the_report_only(project):
    """`dvc exp run -S`: one E3 parameter changed re-runs E3 and the report only, and
    `dvc exp show` lists the experiment with its metrics."""
    dest, env, _ = project
    key = "e3_overhead.profiles.smoke.warmup_iterations"
    out = sh([str(BIN / "dvc"), "exp", "run", "-S", f"{key}=21", "-n", "smoke-exp"], dest, env)
    assert ran(out.stdout) - {"host"} == {"e3_overhead", "report"}, out.stdout
    assert "      warmup_iterations: 21\n" in (dest / "params.yaml").read_text()
    shown = json.loads(sh([str(BIN / "dvc"), "exp", "show", "--json"], dest, env).stdout)
    experiments = [e for commit in shown for e in (commit.get("experiments") or [])]
    runs = [r for e in experiments for r in e.get("revs", [])]
    assert any(r.get("name") == "smoke-exp" for r in runs), shown
    metrics = next(r for r in runs if r.get("name") == "smoke-exp")["data"]["metrics"]
    values = metrics["report/metrics.json"]["data"]
    assert values["profile"] == "smoke" and values["E3"]["verdicts"]["H3"]


def test_editing_a_verdict_reruns_the_report_only(project):
    """Analysis and words are the report stage's; only app and plan decide what is measured."""
    dest, env, _ = project
    sh([str(BIN / "dvc"), "repro"], dest, env)  # whatever the tests before left to re-run
    for part in ("analysis.py", "report.md.j2"):
        edited = dest / "src" / "rtstudy" / "experiments" / "e1_async_buffer" / part
        original = edited.read_text()
        try:
            edited.write_text(original + "\n")
            status = sh([str(BIN / "dvc"), "status"], dest, env).stdout
            assert "report:" in status, status
            assert "e1_async_buffer:" not in status, f"{part} must not re-measure E1:\n{status}"
        finally:
            edited.write_text(original)
    edited = dest / "src" / "rtstudy" / "experiments" / "e1_async_buffer" / "plan.py"
    original = edited.read_text()
    try:
        edited.write_text(original + "\n")
        status = sh([str(BIN / "dvc"), "status"], dest, env).stdout
        assert "e1_async_buffer:" in status, "the plan decides what is measured"
    finally:
        edited.write_text(original)


def test_a_wrong_parameter_stops_before_measuring(project):
    dest, env, _ = project
    params = dest / "params.yaml"
    good = params.read_text()
    before = cells_on_disk(dest)
    try:
        # Through YAML: `dvc exp run -S` above rewrote the file in its own layout.
        values = yaml.safe_load(good)
        values["e3_overhead"]["profiles"]["smoke"]["iterations"] = [-5, 1000]
        params.write_text(yaml.safe_dump(values))
        check = sh([str(BIN / "rtstudy"), "params", "check"], dest, env, check=False)
        assert check.returncode == 2
        assert "e3_overhead.profiles.smoke.iterations" in check.stderr and "-5" in check.stderr
        out = sh([str(BIN / "dvc"), "repro"], dest, env, check=False)
        assert out.returncode != 0
        assert "e3_overhead.profiles.smoke.iterations" in out.stdout + out.stderr
        assert cells_on_disk(dest) == before
    finally:
        params.write_text(good)

"""A fresh clone on a machine that never pushed: ``make pull`` fetches the reference dataset
(data/reference/), ``make report`` renders it without measuring, and the report's metrics are
the committed ones.

A module of its own, apart from tests/test_sharing.py's smoke data: it needs none, so `make
test` runs it early, beside the smoke study (tests/conftest.py's order), not after it.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import BIN, MAKE, STAGES, make_env, sh

from rtstudy import paths
from rtstudy.machine import host

pytestmark = pytest.mark.pipeline

# The claim each experiment's section judges (its label in report/metrics.json → its verdict).
CLAIMS = {"E1": "H1 S1", "E2": "H2", "E3": "H3", "E4": "H4", "E5": "H5b"}


def first_screen_differs(a: Path, b: Path) -> float:
    """The share of pixels that differ between two screenshots (1 where their sizes do)."""
    from PIL import Image, ImageChops

    one, two = (Image.open(p).convert("RGB") for p in (a, b))
    if one.size != two.size:
        return 1.0
    diff = ImageChops.difference(one, two).convert("L").point(lambda v: 255 if v > 32 else 0)
    return sum(diff.histogram()[255:]) / (one.size[0] * one.size[1])


def test_a_fresh_clone_pulls_the_reference_dataset_when_the_default_remote_is_out_of_reach(
        tmp_path):
    """What a new user on a new machine gets: the committed dvc.lock's data, from data/reference/."""
    root = paths.checkout()
    dest = tmp_path / "clone"
    env = {k: v for k, v in os.environ.items() if k != "RTSTUDY_ROOT"}
    sh(["git", "clone", "-q", root, dest], tmp_path, env)
    # A machine that never pushed: the default remote's folder does not exist there.
    sh([BIN / "dvc", "remote", "modify", "--local", "localdisk", "url", tmp_path / "nowhere"],
       dest, env)
    out = sh([*MAKE, "pull"], dest, make_env(env))
    assert "pulling the reference dataset" in out.stdout
    lock = sh([BIN / "python", "-c", "import json, yaml, sys; "
               "print(json.dumps(yaml.safe_load(open('dvc.lock'))))"], dest, env).stdout
    stages = json.loads(lock)["stages"]
    for stage in STAGES:
        (raw,) = [o for o in stages[stage]["outs"] if o["path"].startswith("data/raw/")]
        assert (dest / raw["path"]).is_dir(), raw["path"]
        assert list((dest / raw["path"]).glob("*/default/*/cell.json")), f"{stage}: no cells"
    # Rendered there, measuring nothing: the committed metrics are the reference data's.
    committed = json.loads((dest / "report" / "metrics.json").read_text())
    (dest / "report" / "metrics.json").unlink()
    # Rendered as on a machine that is none of the data's hosts, even where this machine is
    # one of them: the host shown must not depend on the rendering machine.
    fp = host.current()
    fp["host_id"] = "vm-00000000"
    (dest / "data" / "host").mkdir(parents=True, exist_ok=True)
    (dest / "data" / "host" / "fingerprint.json").write_text(json.dumps(fp))
    sh([*MAKE, "report"], dest, make_env(env), timeout=900)
    assert sorted(p.name for p in (dest / "executed").glob("*.ipynb")) == ["report.ipynb"]
    rendered = json.loads((dest / "report" / "metrics.json").read_text())
    assert rendered == committed, "report/metrics.json no longer matches the reference data; " \
        "re-render it (make pull && make report) and commit it"
    status = sh(["git", "status", "--porcelain"], dest, env).stdout
    shot = "docs/report_first_screen.png"
    if shot in status:
        # make report redrew the docs' first screen (where Chromium is installed): the picture
        # committed is the one this render gives, to the pixel but for antialiasing.
        assert first_screen_differs(root / shot, dest / shot) < 0.02, (
            f"{shot} no longer shows the committed report's first screen: make report and "
            "commit it")
        status = "\n".join(x for x in status.splitlines() if shot not in x)
    assert status == "", f"make pull && make report changed the clone:\n{status}"
    # DVC reads them: the verdicts of every host state (the reference holds two), and the plots.
    shown = json.loads(sh([BIN / "dvc", "metrics", "show", "--json"], dest, env).stdout)
    (record,) = [r["data"]["report/metrics.json"]["data"] for r in shown.values()]
    states = record["hosts"]
    assert {v["state"].split(" ")[0] for v in states.values()} >= {"untuned", "shielded"}
    for host_id, values in states.items():
        # Each experiment's part (E1…E5) holds its verdicts; "evidence" says what they rest on.
        assert values["evidence"]["status"] in ("confirmatory", "exploratory"), host_id
        claims = {c for label, part in values.items() if label in CLAIMS
                  for c in part["verdicts"]}
        # Each experiment a host state measured gives its claim (E4 has no Holoscan: measured
        # once per machine state; E5 on a VM of its own, so its host states have only H5b).
        expected = {claim for label, claim in CLAIMS.items() if label in values}
        assert expected and expected <= claims, (host_id, claims)
    plots = sh([BIN / "dvc", "plots", "show", "-o", tmp_path / "plots"], dest, env)
    assert (tmp_path / "plots" / "index.html").is_file(), plots.stdout

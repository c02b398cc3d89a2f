"""How long E2's Holoscan 5.0 cells take at the default profile (docs/benchmarks.md).

Runs plan5's default-profile cells once, in the Debian 13 root, into the dataset folder of
the 5.0 environment (cells already there are skipped: delete that folder to measure again),
and prints the number of cells and the wall time. Usage: ``.venv/bin/python
benchmarks/sdk5_e2_default.py`` as root, on a quiet machine.
"""
from __future__ import annotations

import os
import time

from rtstudy import params, paths
from rtstudy.experiments.e2_rt_threads.measuring import plan
from rtstudy.machine import host, placement
from rtstudy.measure.harness import SweepContext, run_sweep
from rtstudy.sdks import sdk


def main() -> None:
    cfg = params.stage_config("e2_rt_threads", "default")
    env = sdk.environment("5.0.0", build=True)
    env.prepare()
    fp = env.fingerprint(host.current())
    configs = {"cpus": params.stage_config("cpus", "default")}
    cells = plan.plan(cfg, fp, configs)
    where = placement.resolve(configs["cpus"], fp)
    started = time.monotonic()
    with open(os.devnull, "w") as quiet:
        out = run_sweep(cells, paths.dataset_dir("e2_rt_threads", fp["host_id"], "default"),
                        SweepContext.from_fingerprint(fp, "default", where, env),
                        cfg["order_seed"], progress=quiet)
    failed = [o.reason[:80] for o in out if o.status != "ok"]
    print(f"{len(cells)} cells in {time.monotonic() - started:.1f} s; failed: {failed}")


if __name__ == "__main__":
    main()

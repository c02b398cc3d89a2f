"""Time to render the report from the data present, and a look at it (target: <= 60 s).

    .venv/bin/python benchmarks/report_time.py [--root DIR] [--repeat 3]
        [--screenshot docs/report_first_screen.png] [--formats all,png]

Runs ``rtstudy report`` (papermill executes notebooks/report.ipynb, then
nbconvert writes report/report.html) ``--repeat`` times in the project at
``--root`` (default: this checkout), measuring nothing, and prints each wall
time and the median. Then opens the report in headless Chromium and prints what
a reader's browser saw (images, broken images, console errors), saving a
screenshot of the first screen. ``--formats all,png`` alternates renders writing every
figure format with renders writing PNG only (``$RTSTUDY_FIGURE_FORMATS``), ``--repeat`` of
each, and prints each one's times.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the project holding the data")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--screenshot", type=Path, default=ROOT / "docs" / "report_first_screen.png")
    parser.add_argument("--formats", default="all",
                        help="the figures' format per render, alternating: `all` or one of "
                             "pdf, png, svg (e.g. `all,png`: every format, then PNG only)")
    args = parser.parse_args()

    root = args.root.resolve()
    rtstudy = Path(sys.executable).parent / "rtstudy"
    choices = args.formats.split(",")
    times: dict[str, list[float]] = {f: [] for f in choices}
    for _ in range(args.repeat):
        for formats in choices:
            env = dict(os.environ, RTSTUDY_ROOT=str(root))
            env.pop("RTSTUDY_FIGURE_FORMATS", None)
            if formats != "all":
                env["RTSTUDY_FIGURE_FORMATS"] = formats
            start = time.monotonic()
            subprocess.run([str(rtstudy), "report"], cwd=root, env=env, check=True,
                           stdout=subprocess.DEVNULL)
            times[formats].append(time.monotonic() - start)
    html = root / "report" / "report.html"
    print(f"project: {root}")
    for formats, wall in times.items():
        print(f"`rtstudy report` wall time (s), figures {formats}: "
              f"{', '.join(f'{t:.2f}' for t in wall)}; median {statistics.median(wall):.1f} "
              f"(target <= 60)")
    print(f"report.html: {html.stat().st_size / 1e6:.1f} MB, "
          f"{len(list((root / 'report' / 'figures').glob('*.png')))} figures")

    from rtstudy.report.browser import check_page

    page = check_page(html, args.screenshot)
    print(f"chromium: title {page.title!r}; {page.images} images, {len(page.broken_images)} "
          f"broken; {len(page.console_errors)} console errors; first screen: {args.screenshot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

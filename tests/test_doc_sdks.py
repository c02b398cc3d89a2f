"""docs/sdk-versions.md against the code that knows the same facts: the versions the study knows
(``rtstudy.sdks.sdk.KNOWN``: API, where each runs, its lock), the experiments each version runs
(each plan's ``SDK_APIS``, its ``app5.py``, 3.5.0's missing real-time dispatcher) and
params.yaml's ``sdk`` group. A change to either side that the other does not follow fails here."""
from __future__ import annotations

import re

import pytest
import yaml

from rtstudy import paths, registry
from rtstudy.sdks import sdk

def doc() -> str:
    return (paths.root() / "docs" / "sdk-versions.md").read_text()


def table(header: str) -> dict[str, list[str]]:
    """The Markdown table whose header row starts with ``header``: first cell → the row's cells."""
    lines = doc().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows[cells[0]] = cells
    return rows


def labels() -> dict[str, str]:
    """Each experiment's label (``E1`` …) → its registry name."""
    return {registry.get(name).section.LABEL: name for name in registry.REGISTRY}


def test_the_yaml_shown_is_params_yamls_sdk_group():
    shown = re.search(r"```yaml\n(sdk:.*?)```", doc(), re.S).group(1)
    params = yaml.safe_load((paths.root() / "params.yaml").read_text())
    assert yaml.safe_load(shown)["sdk"] == params["sdk"]


def test_the_version_table_is_what_the_code_knows():
    rows = {version.split()[0]: cells for version, cells in table("| version |").items()}
    assert list(rows) == list(sdk.KNOWN)
    for version, known in sdk.KNOWN.items():
        _, api, where, _ = rows[version]
        assert api.startswith(f"{known.api}.x"), version
        # Where it runs, as sdk.environment decides: its own venv, the study's, or the root.
        if known.python:
            assert f"Python {known.python} venv of its own" in where, version
        elif known.api == 4:
            assert "the study's venv" in where, version
        else:
            assert "Debian 13 root" in where, version
        # The row names the distribution and the lock that pins it at this version.
        lock = re.search(r"`requirements/([^`]+\.lock)`", where).group(1)
        assert f"`{known.distribution}`" in where, version
        locks = sorted((paths.root() / "requirements").glob(lock.replace("X", "*")))
        assert locks, lock
        for path in locks:
            assert f"\n{known.distribution}=={version} " in path.read_text(), path


@pytest.mark.parametrize("version,header", [("3.5.0", "| experiment | on 3.5.0 |"),
                                            ("5.0.0", "| experiment | on 5.0 |")])
def test_each_experiment_runs_on_a_version_as_its_plan_says(version, header):
    rows = table(header)
    assert sorted(rows) == sorted(labels())
    for label, name in labels().items():
        experiment, says = registry.get(name), rows[label][1]
        apis = experiment.plan.SDK_APIS
        if not apis:
            assert says.startswith("no Holoscan"), label
        elif sdk.KNOWN[version].api not in apis:
            assert "not ported" in says, label
        elif sdk.KNOWN[version].api == 5:
            app5 = experiment.file("app").with_name("app5.py")
            assert app5.is_file()
            app, app5 = (f.relative_to(experiment.folder.parent).as_posix()
                         for f in (experiment.file("app"), app5))
            assert f"`{app5}`" in says or f"`{app}`, `app5.py`" in says, label
        else:
            # 3.5.0 has no real-time dispatcher: the plans that ask for it say which cells go.
            drops = (not sdk.KNOWN[version].realtime_dispatcher
                     and "realtime_dispatcher(" in experiment.file("plan").read_text())
            assert ("but the `fifo` dispatcher's" in says) == drops, label
            assert "cell" in says and "not ported" not in says, label

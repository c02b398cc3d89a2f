"""Every bad parameter stops the study before measuring, with a message naming the key."""
from __future__ import annotations

import copy

import pytest
import yaml

from helpers import with_value
from rtstudy import params


@pytest.fixture()
def good() -> dict:
    return params.load()


def test_the_committed_params_are_valid_in_every_profile(good):
    params.validate(good)
    for profile in params.PROFILES:
        cfg = params.stage_config("e3_overhead", profile, good)
        assert cfg["profile"] == profile


def test_profiles_override_the_group(good):
    smoke = params.stage_config("e3_overhead", "smoke", good)
    default = params.stage_config("e3_overhead", "default", good)
    assert max(smoke["iterations"]) < max(default["iterations"])
    assert params.stage_config("e3_overhead", "seed", good)["iterations"][-1] == 100_000


BAD = [
    # (path, value, words the message must contain)
    (("e3_overhead", "iterations"), [-5, 100], ["e3_overhead.iterations", "-5", ">= 2"]),
    (("e3_overhead", "schedulers"), ["greedy", "round_robin"],
     ["e3_overhead.schedulers", "round_robin", "'event_based'"]),
    (("e3_overhead", "repetitions"), "three", ["e3_overhead.repetitions", "'three'", "integer"]),
    (("e3_overhead", "repetitions"), 0, ["e3_overhead.repetitions", ">= 1"]),
    (("e3_overhead", "repetitions"), True, ["e3_overhead.repetitions", "integer"]),
    (("e3_overhead", "event_based_workers"), [], ["e3_overhead.event_based_workers", "at least 1"]),
    (("e3_overhead", "event_based_workers"), [1, 1], ["e3_overhead.event_based_workers", "repeated"]),
    (("e3_overhead", "apps"), ["ops", "pong"], ["e3_overhead.apps", "pong"]),
    (("e3_overhead", "max_duration_ms"), 10, ["e3_overhead.max_duration_ms", ">= 1000"]),
    (("e3_overhead", "warmup_iterations"), -1, ["e3_overhead.warmup_iterations", ">= 0"]),
    (("e3_overhead", "timeout_margin_s"), "soon", ["e3_overhead.timeout_margin_s", "number"]),
    (("e3_overhead", "iterationz"), [10], ["e3_overhead.iterationz", "unknown key", "iterations"]),
    (("e3_overhead", "profiles", "smoke", "repetitions"), -2,
     ["e3_overhead.profiles.smoke.repetitions", "-2"]),
    (("e3_overhead", "profiles", "fast"), {"repetitions": 1}, ["e3_overhead.profiles.fast", "unknown profile"]),
    (("report", "confidence"), 1.5, ["report.confidence", "1.5"]),
    # The late threshold is the frozen protocol's, never params.yaml's (even the same value):
    # a different one is a new protocol version.
    (("e2_rt_threads", "late_threshold_ms"), 2,
     ["e2_rt_threads.late_threshold_ms", "not a parameter", "protocol v1's criterion (1)",
      "remove it"]),
    (("e2_rt_threads", "late_threshold_ms"), 1, ["e2_rt_threads.late_threshold_ms", "remove it"]),
    (("e2_rt_threads", "profiles", "smoke", "late_threshold_ms"), 1,
     ["e2_rt_threads.late_threshold_ms", "not a parameter"]),
    (("report", "bootstrap_resamples"), 2000, ["report.bootstrap_resamples", "unknown key"]),
    (("profile",), "quick", ["profile", "'quick'", "smoke"]),
    (("e4_mystery",), {}, ["e4_mystery", "unknown parameter group"]),
]



@pytest.mark.parametrize("path,value,words", BAD, ids=[".".join(b[0]) + "=" + repr(b[1]) for b in BAD])
def test_a_bad_value_is_rejected_naming_the_key(good, path, value, words):
    with pytest.raises(params.ParamError) as info:
        params.validate(with_value(good, path, value))
    message = str(info.value)
    for word in words:
        assert word in message, f"{word!r} missing from: {message}"


def test_a_missing_group_is_named(good):
    data = copy.deepcopy(good)
    del data["report"]
    with pytest.raises(params.ParamError, match="report: parameter group missing"):
        params.validate(data)


def test_all_problems_are_reported_at_once(good):
    data = with_value(with_value(good, ("e3_overhead", "repetitions"), -1),
                      ("report", "confidence"), 2)
    with pytest.raises(params.ParamError) as info:
        params.validate(data)
    assert "e3_overhead.repetitions" in str(info.value) and "report.confidence" in str(info.value)


def test_broken_yaml_names_the_file(tmp_path):
    bad = tmp_path / "params.yaml"
    bad.write_text("profile: default\ne3_overhead: [unclosed\n")
    with pytest.raises(params.ParamError, match="not valid YAML"):
        params.load(bad)


def test_use_profile_switches_and_keeps_comments(tmp_path):
    copy_ = tmp_path / "params.yaml"
    copy_.write_text(params.paths.params_file().read_text())
    params.use_profile("seed", copy_)
    text = copy_.read_text()
    assert yaml.safe_load(text)["profile"] == "seed"
    assert "# rtstudy parameters" in text
    with pytest.raises(params.ParamError, match="expected one of"):
        params.use_profile("turbo", copy_)


def test_a_key_given_twice_is_refused_naming_both_lines(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("profile: default\ne2_rt_threads:\n  fps: 0\n  fps: 60\n")
    with pytest.raises(params.ParamError, match=r"key 'fps' given twice \(lines 3 and 4\)"):
        params.load(path)


@pytest.mark.parametrize("edit,words", [
    ({"e4_host": {"jitter_cpus": [4095]}},
     "e4_host.jitter_cpus names CPUs [4095] that are not online"),
    ({"e1_async_buffer": {"tx2_runtime_ms": 19, "rx_runtime_ms": 9}},
     "CPUs of SCHED_DEADLINE bandwidth"),
])
def test_params_check_runs_every_stages_host_checks_before_any_stage(edit, words, tmp_path,
                                                                     monkeypatch, capsys):
    """`make study` runs `rtstudy params check` first: a stage that would refuse on this host
    stops the study before another stage measures a cell."""
    import os
    import shutil

    from rtstudy import cli, paths

    # E1's three threads ask for 7/20 + 19/20 + 9/10 = 2.2 CPUs: more than this host admits
    # only below 3 CPUs (0.95 of each).
    if "e1_async_buffer" in edit and 0.95 * os.cpu_count() >= 2.2:
        pytest.skip(f"{os.cpu_count()} CPUs admit E1's 2.2 CPUs of SCHED_DEADLINE bandwidth")

    for name in ("params.yaml", "dvc.yaml"):
        shutil.copy2(paths.root() / name, tmp_path / name)
    (tmp_path / "src" / "rtstudy").mkdir(parents=True)
    monkeypatch.setenv("RTSTUDY_ROOT", str(tmp_path))
    data = params.load(tmp_path / "params.yaml")
    for group, values in edit.items():
        data[group].update(values)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(data))
    assert cli.main(["params", "check", "--no-host"]) == 0
    capsys.readouterr()
    assert cli.main(["params", "check"]) == 2
    err = capsys.readouterr().err
    assert words in err and "nothing was measured" in err, err
    assert not (tmp_path / "data" / "raw").exists() or \
        not list((tmp_path / "data" / "raw").rglob("cell.json"))


def test_params_yaml_is_parsed_once_per_text_and_each_caller_gets_its_own_copy(tmp_path,
                                                                                 monkeypatch):
    """A command asks for its parameters from many places (the report about 6 times): the file
    is read each time, so an edit is seen, but its text is parsed once."""
    from rtstudy.cli import main

    parses = []
    real = yaml.load
    monkeypatch.setattr(params.yaml, "load", lambda *a, **k: parses.append(1) or real(*a, **k))
    monkeypatch.setattr(params, "_parsed", None)
    first = params.load()
    first["profile"] = "changed by one caller"
    params.read()
    params.stage_config("e2_rt_threads")
    assert main(["protocol"]) == 0
    assert params.load()["profile"] != "changed by one caller"
    assert len(parses) == 1
    edited = tmp_path / "params.yaml"
    edited.write_text("# edited\n" + params.paths.params_file().read_text())
    params.load(edited)
    assert len(parses) == 2


def test_a_command_reads_its_parameters_into_one_frozen_object():
    """`params.read` is what a command reads at its start and hands down: frozen, each lookup a
    copy of its own, the same groups `configs` gives."""
    import dataclasses

    every = params.read("smoke")
    cfg = every["e2_rt_threads"]
    cfg["fps"] = -1
    assert every["e2_rt_threads"]["fps"] != -1
    with pytest.raises(dataclasses.FrozenInstanceError):
        every.profile = "default"
    assert every.as_dict() == {g: params.stage_config(g, "smoke") for g in params.groups()}
    assert every.profile == "smoke"
    with pytest.raises(params.ParamError, match="unknown stage 'e9'"):
        every.group("e9")
    assert every.get(params.SESSION) is None  # a mapping

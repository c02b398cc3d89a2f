"""`rtstudy data published`: data/reference/ checked against dvc.lock, not trusted to DVC, which
takes a directory object on a remote as proof of all its files (an interrupted push)."""
from __future__ import annotations

import json

import yaml
from helpers import BIN, sh

from rtstudy.cli import main
from rtstudy.data import sharing


def stored(base, md5: str, text: str) -> None:
    where = base / md5[:2] / md5[2:]
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(text)


def test_a_file_the_push_left_out_is_named_and_repair_lets_the_next_push_send_it(
        tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RTSTUDY_ROOT", str(tmp_path))
    # A DVC project whose reference remote is where the repository's .dvc/config puts it.
    sh([BIN / "dvc", "init", "--no-scm", "-q"], tmp_path, None)
    sh([BIN / "dvc", "remote", "add", "reference", "data/reference"], tmp_path, None)
    oid = "ab" * 16 + ".dir"
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump({"stages": {"e1_async_buffer": {"outs": [
        {"path": "data/raw/e1_async_buffer", "md5": oid}]}}}))
    listing = json.dumps([{"md5": "11" * 16, "relpath": "vm-x/default/plan.json"},
                          {"md5": "22" * 16, "relpath": "vm-x/default/c-r0/samples.parquet"}])
    reference = tmp_path / "data" / "reference" / "files" / "md5"
    cache = tmp_path / ".dvc" / "cache" / "files" / "md5"
    for base in (reference, cache):
        stored(base, oid, listing)
    stored(reference, "11" * 16, "{}")
    assert sharing.unpublished() == [
        f"e1_async_buffer: vm-x/default/c-r0/samples.parquet ({'22' * 16})"]
    assert main(["data", "published", "--repair"]) == 1
    assert "lacks 1 file" in capsys.readouterr().err
    # The incomplete directory object is gone from the remote (the cache keeps it), so the next
    # push checks and sends each of its files.
    assert not (reference / oid[:2] / oid[2:]).exists()
    assert (cache / oid[:2] / oid[2:]).exists()
    stored(reference, "22" * 16, "pushed")
    stored(reference, oid, listing)
    assert sharing.unpublished() == []
    assert main(["data", "published"]) == 0

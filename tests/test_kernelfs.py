"""The one reader of kernel files and CPU lists: what host, audit, shield and tuning share."""
from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from rtstudy.machine import audit, kernelfs

FIXTURES = Path(__file__).parent / "fixtures" / "host"


@pytest.fixture()
def all_nocbs(tmp_path) -> Path:
    """The isolated fixture host booted with ``rcu_nocbs=all`` and ``isolcpus`` given twice."""
    root = tmp_path / "root"
    shutil.copytree(FIXTURES / "isolated", root)
    (root / "proc/cmdline").write_text(
        "BOOT_IMAGE=/boot/vmlinuz ro isolcpus=1 nohz_full=2-3 rcu_nocbs=all "
        "isolcpus=managed_irq,domain,2-3 irqaffinity=0-1\n")
    return root


def test_boot_parameters_the_last_wins_and_all_means_every_cpu(all_nocbs):
    assert kernelfs.boot_cpus(all_nocbs, "isolcpus") == [2, 3]
    assert kernelfs.boot_cpus(all_nocbs, "rcu_nocbs") == [0, 1, 2, 3]
    assert kernelfs.boot_cpus(all_nocbs, "nohz_full") == [2, 3]
    assert kernelfs.boot_cpus(all_nocbs, "no_such_parameter") == []
    assert kernelfs.cmdline_cpus("not-a-list", [0, 1]) is None


def test_the_audit_reads_such_a_host(all_nocbs):
    by_name = {i.name: i for i in audit.audit(all_nocbs)}
    assert by_name["rcu_nocbs CPUs"].status == "PASS"
    assert by_name["rcu_nocbs CPUs"].facts["cpus"] == [0, 1, 2, 3]
    assert by_name["kernel command line"].facts["isolcpus"] == "managed_irq,domain,2-3"


def test_cpu_lists_masks_and_their_errors():
    assert kernelfs.parse_cpu_list("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
    assert kernelfs.parse_cpu_list("") == [] and kernelfs.parse_cpu_list(None) == []
    assert kernelfs.parse_cpu_list("3,1-2,2") == [1, 2, 3]
    with pytest.raises(ValueError):
        kernelfs.parse_cpu_list("all")
    assert kernelfs.to_cpus("all") is None and kernelfs.to_cpus(None) is None
    assert kernelfs.format_cpu_list([5, 0, 1, 2, 7, 8]) == "0-2,5,7-8"
    assert kernelfs.format_cpu_list([]) == ""
    assert kernelfs.cpu_mask([0, 1]) == "3"
    assert kernelfs.cpu_mask(range(40)) == "ff,ffffffff"
    assert kernelfs.mask_to_cpus("00000000,0000000c") == [2, 3]
    assert kernelfs.mask_to_cpus("zz") is None
    assert kernelfs.cmdline_cpus("managed_irq,domain,2-3", [0, 1, 2, 3]) == [2, 3]
    assert kernelfs.cmdline_value("a=1 isolcpus=2 b isolcpus=3", "isolcpus") == "3"
    assert kernelfs.parse_user_cpus(" 2-3,6 ") == [2, 3, 6]
    for bad, message in [("1-", "malformed"), ("3-1", "backward range"), ("a", "malformed")]:
        with pytest.raises(kernelfs.CpuListError, match=message):
            kernelfs.parse_user_cpus(bad)


def test_host_facts_from_a_fixture_root():
    root = FIXTURES / "isolated"
    assert kernelfs.online_cpus(root) == [0, 1, 2, 3]
    assert kernelfs.isolated_cpus(root) == [2, 3]
    assert kernelfs.smt_siblings(root, [2]) == {2: [3]}
    model, evidence = kernelfs.preempt_model(root)
    assert model == "PREEMPT_RT" and "/proc/sys/kernel/version" in evidence
    missing = kernelfs.read(root, "/proc/no_such_file")
    assert missing.text is None and missing.missing and "not present" in missing.problem
    procs, unreadable = kernelfs.processes(root)
    assert procs and unreadable == 0 and any(p.kthread for p in procs)


def test_threads_and_the_cpu_a_thread_ran_on_on_this_host():
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, name="kernelfs-test")
    worker.start()
    try:
        tids = {t.pid for t in kernelfs.threads(Path("/"), os.getpid())}
        assert os.getpid() in tids and len(tids) >= 2
        assert kernelfs.thread_cpu(os.getpid()) in os.sched_getaffinity(0)
    finally:
        stop.set()
        worker.join()
    assert kernelfs.thread_cpu(2**22 + 12345) is None

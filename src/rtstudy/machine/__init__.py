"""The machine: its kernel files, its CPUs, their tuning and the audit of it.

Nothing here measures or imports the rooms above it (:mod:`rtstudy.sdks`,
:mod:`rtstudy.measure`, :mod:`rtstudy.data`, :mod:`rtstudy.inference`, :mod:`rtstudy.report`).

- :mod:`~rtstudy.machine.kernelfs`: the kernel's files and the CPU lists in them.
- :mod:`~rtstudy.machine.host`: the host fingerprint and the host id derived from it.
- :mod:`~rtstudy.machine.placement`: the real-time and housekeeping CPUs, from the host's state.
- :mod:`~rtstudy.machine.shield`: the runtime CPU shield.
- :mod:`~rtstudy.machine.idle`: the CPUs' idle states and the PM QoS limits.
- :mod:`~rtstudy.machine.tuning`: plan, apply and revert the host tuning.
- :mod:`~rtstudy.machine.audit` (with :mod:`~rtstudy.machine.audit_host` and
  :mod:`~rtstudy.machine.audit_profile`): E4's read-only audit of the host's tuning.
- :mod:`~rtstudy.machine.sysdeps`: the system tools the study needs, by distribution.
"""

"""A Debian 13 root for the Holoscan SDKs whose wheels need a newer glibc than the host's.

Holoscan 5.0.0 ships only ``manylinux_2_39`` wheels (glibc ≥ 2.39): on Debian 12
(2.36), Ubuntu 22.04 (2.35) or RHEL 9 (2.34) it does not install. The study then
builds, once, a minimal Debian 13 ("trixie", glibc 2.41) root with ``debootstrap``,
installs the SDK there from a hash-pinned lock, and runs that SDK's cells inside it
with ``chroot`` — the same harness, the same read-back of policies and placement,
the same timeouts: only the command that starts the cell's process changes
(:func:`command`).

Every command inside the root runs in a mount namespace of its own (``unshare
--mount``): /proc, /sys and /dev and the project's folder are mounted there and
vanish with the process, so an interrupted run leaves no mount behind on the host.

Reproducibility: the root's key hashes the suite, the Debian packages and the
pip lock; the root records what it really holds (every Debian package with its
version, every pip package, glibc and Python) in ``rtstudy-root.json``, which
the SDK's fingerprint (:mod:`rtstudy.sdks.sdk`) carries into every cell's host record.
Debian's archive moves on within a suite, so two roots built months apart may hold
different Debian package versions: the manifest says which; the pip packages are
pinned by hash.

How the root is put in place (a work folder renamed when done, one build at a time) is
:mod:`rtstudy.sdks.builds`, which the other SDK environments share.
"""
from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path

from rtstudy import paths
from rtstudy.machine.tracefs import TRACEFS
from rtstudy.sdks import builds
from rtstudy.sdks.manifest import Inventory, Manifest

SUITE = "trixie"  # Debian 13, glibc 2.41
MIRROR = "http://deb.debian.org/debian"
# The Debian archive's signing keys debootstrap checks the suite's Release file against, shipped
# with the study so that a host without Debian's keyring (Ubuntu, RHEL) verifies the root the
# same way: the archive, security and stable-release keys of Debian 13 and 12, as Debian 12's
# debian-archive-keyring 2023.3+deb12u2 installs them in /usr/share/keyrings/
# (debian-archive-{trixie,bookworm}-*.gpg), concatenated; sha256 in KEYRING_SHA256.
KEYRING = Path(__file__).resolve().parent / "debian-archive-trixie.gpg"
KEYRING_SHA256 = "371acb6e56db8cc0edc28911f3b4a5e425f840cda11da47b529627721845864a"
COMPONENTS = "main contrib non-free"  # libcuda1 is non-free; its nvidia-support is contrib
# What debootstrap installs: Python with venv and headers, a C compiler for the study's
# native module (rtstudy._native: the load work and the policy read-back), stress-ng (E2's
# `process` loads run inside the cell's environment) and perf (E2's scheduler traces are taken
# inside the cell's process, rtstudy.apps.trace: 5.0's busy polling traced, H5c).
BASE_PACKAGES = ("python3", "python3-venv", "python3-dev", "gcc", "libc6-dev", "ca-certificates",
                 "stress-ng", "linux-perf")
# The CUDA driver library: Holoscan imports libcuda.so.1 at start; Debian's loads without a GPU.
DRIVER_PACKAGES = ("libcuda1",)
VENV = "/opt/venv"
PACKAGE_DIR = "/opt/rtstudy/src"  # the copy of rtstudy the cells import inside the root
MANIFEST = "rtstudy-root.json"
BUILD_TIMEOUT_S = 1800  # debootstrap + apt + pip (~330 MB) on a slow mirror
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class RootError(builds.BuildError):
    """The root cannot be built or used here; the message names the fix."""


def roots_dir() -> Path:
    """Where built roots are kept: ``$RTSTUDY_ROOTS``, else /var/lib/rtstudy/roots.

    Outside every checkout, so that every clone on the machine shares one build
    (a root is ~700 MB).
    """
    return Path(os.environ.get("RTSTUDY_ROOTS", "/var/lib/rtstudy/roots"))


def lock_file(version: str) -> Path:
    """The hash-pinned pip lock of SDK ``version``'s environment."""
    return paths.checkout() / "requirements" / f"sdk-{version}.lock"


def key(version: str) -> str:
    """12 hex digits that change whenever what the root is built from changes."""
    recipe = json.dumps({"suite": SUITE, "components": COMPONENTS, "base": BASE_PACKAGES,
                         "driver": DRIVER_PACKAGES, "venv": VENV,
                         "lock": lock_file(version).read_text()}, sort_keys=True)
    return hashlib.sha256(recipe.encode()).hexdigest()[:12]


def root_path(version: str) -> Path:
    """Where SDK ``version``'s root is (or will be) built."""
    return roots_dir() / f"debian13-holoscan{version}-{key(version)}"


# What every finished build records (rtstudy.sdks.sdk reads them into each cell's host record).
MANIFEST_KEYS = ("sdk", "key", "built_utc", "glibc", "python", "pip")


def manifest(root: Path, name: str = MANIFEST) -> Manifest | None:
    """What a finished root (or other build, whose record is ``name``) records about itself, or
    None if it is not (completely) built: no record, or one that is damaged
    (:func:`damage` says how)."""
    return _record(root, name)[0]


def damage(root: Path, name: str = MANIFEST) -> str | None:
    """Why the folder ``root`` is not a finished build (a sentence), or None when it is one or
    when there is no such folder: its record ``name`` missing, unreadable, or without a key
    of :data:`MANIFEST_KEYS`."""
    return _record(root, name)[1]


def _record(root: Path, name: str) -> tuple[dict | None, str | None]:
    """``(record, None)`` for a finished build, ``(None, why)`` for a folder that is not one,
    ``(None, None)`` where there is no folder."""
    if not root.is_dir():
        return None, None
    try:
        record = json.loads((root / name).read_text())
    except FileNotFoundError:
        return None, f"{root} has no {name}: an interrupted build or a folder put there by hand"
    except (OSError, ValueError) as exc:
        return None, f"{root / name} cannot be read ({exc})"
    missing = [k for k in MANIFEST_KEYS if not isinstance(record, dict) or k not in record]
    if missing:
        return None, f"{root / name} lacks {', '.join(missing)}: a damaged or older record"
    return record, None


def problems() -> list[str]:
    """Why this host cannot build or enter a root (each with its fix); empty if it can."""
    found = []
    if os.geteuid() != 0:
        found.append("building and entering the SDK root needs root (chroot, mount): run the study "
                     "as root, or leave out the SDK versions that need the root (params.yaml sdk)")
    for tool, package in (("debootstrap", "debootstrap"), ("unshare", "util-linux"),
                          ("chroot", "coreutils"), ("gpgv", "gpgv")):
        if shutil.which(tool) is None:
            found.append(f"`{tool}` is not installed: install the package {package} "
                         "(`make sysdeps` installs it on Debian and Ubuntu; on RHEL it is in EPEL)")
    return found


def _script(root: Path, argv: list[str], env: dict[str, str], binds: list[Path]) -> list[str]:
    """The host command that runs ``argv`` inside ``root`` in a private mount namespace."""
    r = shlex.quote(str(root))
    lines = ["set -e",
             # tracefs, in this namespace only: after a boot the host has none mounted, and
             # perf (E2's traces, rtstudy.apps.trace) reads the events' formats at the end of
             # a recording after visiting other processes' mount namespaces, which returns it
             # to this namespace's own root, outside the chroot: without tracefs here it then
             # writes a trace it cannot read back. The /sys bind below carries it into the root.
             f"grep -qs ' {TRACEFS} tracefs ' /proc/mounts || ! test -d {TRACEFS} || "
             f"mount -t tracefs nodev {TRACEFS} || true",
             f"mount -t proc proc {r}/proc",
             f"mount --rbind /sys {r}/sys",
             f"mount --rbind /dev {r}/dev"]
    for folder in binds:
        inside = shlex.quote(f"{root}{folder}")
        lines += [f"mkdir -p {inside}", f"mount --bind {shlex.quote(str(folder))} {inside}"]
    env_args = " ".join(shlex.quote(f"{k}={v}") for k, v in sorted(env.items()))
    lines.append(f"exec chroot {r} /usr/bin/env -i {env_args} "
                 + " ".join(shlex.quote(a) for a in argv))
    # Without --fork, unshare and sh exec in turn: the process the caller starts is the
    # program itself (same pid), so the harness's thread sampling and kill still reach it.
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", "\n".join(lines)]


def base_env() -> dict[str, str]:
    """The environment inside the root: a clean one, plus the host's pip and proxy settings."""
    env = {"PATH": PATH, "HOME": "/root", "LANG": "C.UTF-8"}
    for name, value in os.environ.items():
        if name.startswith("PIP_") or name.lower() in ("http_proxy", "https_proxy", "no_proxy"):
            env[name] = value
    env.pop("PIP_FIND_LINKS", None)  # a host folder the root does not have
    return env


def command(root: Path, argv: list[str], env: dict[str, str] | None = None) -> list[str]:
    """The command that runs ``argv`` inside ``root`` with the project's folder mounted.

    The project's folder is mounted at the same path inside, so the cell's spec and
    work folder have the same names on both sides.
    """
    inner = base_env()
    inner["PYTHONPATH"] = PACKAGE_DIR
    inner.update(env or {})
    return _script(root, argv, inner, binds())


def binds() -> list[Path]:
    """The host folders a cell inside a root needs at their own paths: the project, and its
    data folder where that is a link to another disk (the link resolves inside the root too)."""
    project = paths.root()
    found = [project]
    data = paths.data_dir().resolve()
    if project.resolve() != data and project.resolve() not in data.parents:
        found.append(data)
    return found


def _run(root: Path, argv: list[str], log, what: str, timeout_s: float = BUILD_TIMEOUT_S) -> None:
    print(f"  {what}", file=log, flush=True)
    try:
        proc = subprocess.run(_script(root, argv, base_env(), []), stdout=log,
                              stderr=subprocess.STDOUT, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise RootError(f"{what} took over {timeout_s:.0f} s and was stopped") from None
    if proc.returncode != 0:
        raise RootError(f"{what} failed (exit {proc.returncode}); its output is in the build log")


def build(version: str, log=None) -> Path:
    """Build SDK ``version``'s root if it is not built yet; return its path.

    Built by :func:`rtstudy.sdks.builds.build_once`: an interrupted build leaves nothing
    that looks usable, and a root of an older recipe goes once the new one is complete.

    Raises
    ------
    RootError
        The host cannot build it (see :func:`problems`) or a step failed; the
        build log (``<root>.log``) holds each step's output.
    """
    final = root_path(version)
    if manifest(final) is not None:
        return final
    found = problems()
    if found:
        raise RootError("cannot build the Holoscan " + version + " root: " + "; ".join(found))
    if not lock_file(version).is_file():
        raise RootError(f"no lock for Holoscan {version}: {lock_file(version)} is missing")
    keyring()  # before anything is fetched
    return builds.build_once(final, lambda work, out: _build(version, work, out),
                             f"the Holoscan {version} root", f"debian13-holoscan{version}-*",
                             roots_dir(), log, done=lambda: manifest(final) is not None)


def _build(version: str, work: Path, out) -> None:
    print("  debootstrap", file=out, flush=True)
    proc = subprocess.run(debootstrap_command(work), stdout=out, stderr=subprocess.STDOUT,
                          timeout=BUILD_TIMEOUT_S)
    if proc.returncode != 0:
        raise RootError(f"debootstrap {SUITE} failed (exit {proc.returncode}): is {MIRROR} "
                        "reachable? Its output is in the build log")
    # The host's trust store and name service: the root reaches the same mirrors and PyPI
    # (through the same proxy, if any) as the host does.
    for name in ("etc/ssl/certs/ca-certificates.crt", "etc/resolv.conf", "etc/pip.conf"):
        source = Path("/") / name
        if source.is_file():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, work / name)
    (work / "etc/apt/sources.list").write_text(f"deb {MIRROR} {SUITE} {COMPONENTS}\n")
    apt = ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-q", "-y"]
    _run(work, [*apt, "update"], out, "apt-get update")
    _run(work, [*apt, "install", "--no-install-recommends", *DRIVER_PACKAGES], out,
         "apt-get install " + " ".join(DRIVER_PACKAGES))
    _run(work, ["python3", "-m", "venv", VENV], out, "python3 -m venv")
    shutil.copyfile(lock_file(version), work / "opt" / "sdk.lock")
    _run(work, [f"{VENV}/bin/pip", "install", "--no-cache-dir", "--require-hashes", "-r",
                "/opt/sdk.lock"], out, f"pip install Holoscan {version}")
    # libcudart.so.13 is outside the loader's path: load it first, as rtstudy.sdks.holo does for
    # cells.
    _run(work, [f"{VENV}/bin/python", "-c", "import ctypes, nvidia.cu13 as cu; ctypes.CDLL("
                "cu.__path__[0] + '/lib/libcudart.so.13', mode=ctypes.RTLD_GLOBAL); import holoscan"],
         out, "import holoscan")
    record = _inventory(work)
    record.update({"sdk": version, "key": key(version), "suite": SUITE, "mirror": MIRROR,
                   "release_verified_with": {"keyring": KEYRING.name, "sha256": KEYRING_SHA256},
                   "built_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    (work / MANIFEST).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")


def keyring() -> Path:
    """The shipped archive keyring (:data:`KEYRING`), checked against its recorded sha256.

    Raises
    ------
    RootError
        It is missing or not the file the study shipped: the root would not be verified.
    """
    try:
        found = hashlib.sha256(KEYRING.read_bytes()).hexdigest()
    except OSError as exc:
        raise RootError(f"the Debian archive keyring {KEYRING} cannot be read ({exc.strerror}), "
                        "so the Debian 13 root could not be verified: restore it from the "
                        f"study's repository (`git checkout -- {KEYRING.name}` in "
                        f"{KEYRING.parent})") from None
    if found != KEYRING_SHA256:
        raise RootError(f"{KEYRING} is not the keyring the study ships (sha256 {found}, "
                        f"expected {KEYRING_SHA256}): restore it from the study's repository "
                        f"(`git checkout -- {KEYRING.name}` in {KEYRING.parent})")
    return KEYRING


def debootstrap_command(work: Path) -> list[str]:
    """debootstrap into ``work``, the suite's Release file checked against the shipped keyring
    (:func:`keyring`) and refused unsigned (``--force-check-gpg``: without it, a host lacking
    the keyring only warns and goes on), in a mount namespace of its own: the /proc and /sys it
    mounts inside the new root vanish with it, so a build killed midway leaves no mount on the
    host (one that would block the next build's clean-up). The packages it fetches are checked
    against the verified Release file's hashes; apt inside the root verifies with the root's own
    keyring."""
    return ["unshare", "--mount", "--propagation", "private",
            "debootstrap", "--variant=minbase", "--include=" + ",".join(BASE_PACKAGES),
            f"--keyring={keyring()}", "--force-check-gpg", SUITE, str(work), MIRROR]


def _inventory(root: Path) -> Inventory:
    """What the root holds: Debian packages, pip packages, glibc and Python versions."""
    def inside(*argv: str) -> str:
        return subprocess.run(_script(root, list(argv), base_env(), []), capture_output=True,
                              text=True, timeout=120, check=True).stdout
    debs = inside("dpkg-query", "-W", "-f", "${Package}=${Version}\\n").split()
    pips = inside(f"{VENV}/bin/pip", "freeze", "--all").split()
    return {"debian": dict(d.split("=", 1) for d in debs),
            "pip": dict(p.split("==", 1) for p in pips if "==" in p),
            "glibc": inside("/usr/bin/getconf", "GNU_LIBC_VERSION").split()[-1],
            "python": inside(f"{VENV}/bin/python", "-c",
                             "import platform; print(platform.python_version())").strip()}


def sync_package(root: Path) -> None:
    """Copy this checkout's ``rtstudy`` into the root (removing modules it no longer has) and
    build its native module there.

    A copy, not a mount: the native module must be compiled against the root's
    Python, and its file would otherwise land in the checkout beside the host's.
    The module is recompiled only when its C source changed.
    """
    source = paths.checkout() / "src" / "rtstudy"
    target = root / PACKAGE_DIR.lstrip("/") / "rtstudy"
    for path in sorted(source.rglob("*")):
        if "__pycache__" in path.parts or path.suffix in (".so", ".pyc"):
            continue
        dest = target / path.relative_to(source)
        if path.is_dir():
            dest.mkdir(parents=True, exist_ok=True)
        elif not dest.exists() or dest.read_bytes() != path.read_bytes():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
    # A module moved or removed in the checkout must not stay importable inside the root.
    for stale in sorted(target.rglob("*.py")):
        if not (source / stale.relative_to(target)).is_file():
            stale.unlink()
    c_source = (source / "_native.c").read_bytes()
    stamp = target / "_native.sha256"
    digest = hashlib.sha256(c_source).hexdigest()
    if stamp.is_file() and stamp.read_text() == digest:
        return
    compile_cmd = native_script(f"{PACKAGE_DIR}/rtstudy", f"{VENV}/bin/python")
    proc = subprocess.run(_script(root, ["sh", "-c", compile_cmd], base_env(), []),
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RootError(f"compiling rtstudy's native module inside {root} failed: "
                        + proc.stdout[-500:] + proc.stderr[-500:])
    stamp.write_text(digest)


def native_script(folder: str, python: str) -> str:
    """The shell command that compiles ``folder``/_native.c into the native module of ``python``.

    The module's name carries the interpreter's ABI suffix (``_native.cpython-311-….so``), so
    modules of several Pythons can sit side by side. It is written under a temporary name and
    renamed, so a process importing it meanwhile never sees half a file.
    """
    def config(expression: str) -> str:
        return f"$({shlex.quote(python)} -c 'import sysconfig; print(sysconfig.{expression})')"
    include, suffix = config('get_paths()["include"]'), config('get_config_var("EXT_SUFFIX")')
    return (f'cd {shlex.quote(folder)} && gcc -shared -fPIC -O2 -Wall -Wextra "-I{include}" '
            f'_native.c -o .native-build.$$ && mv -f .native-build.$$ "_native{suffix}"')

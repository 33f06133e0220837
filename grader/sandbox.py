"""What the worker may touch on disk, and whom it may signal: a Linux Landlock sandbox.

Landlock (Linux 5.13 and later, no privileges needed) lets a process give up access for good,
for itself and every process it starts. The worker calls :func:`restrict` before it runs any
learner code, and from then on it

* reads and executes only beneath Python's own folders, the site-packages it imports from,
  the system's (``/usr``, ``/lib``, ``/etc``, ``/dev``, ``/sys``; of ``/proc`` its own entry and
  the machine's files, no other process's) and, of a course
  checkout on its import path, only the ``grader``, ``minijax`` and ``booktools`` packages (the
  last holds the notebooks' helpers and data sets, no answers): ``solutions/``, the
  check modules, other notebooks and the rest of the repository cannot be opened, listed or
  imported (``PermissionError``);
* writes only inside its own folder (and to ``/dev``'s devices such as ``/dev/null``): nothing
  lands in the grader's package, the repository or anyone's home;
* cannot signal, trace or read the memory, environment or any ``/proc`` file of a process
  outside the sandbox (the grader), even when it runs as the grader's user:
  ``/proc/<grader>/mem`` and ``/proc/<grader>/environ`` are refused, and so is
  ``os.kill(os.getppid(), ...)`` (the signal scope needs Landlock ABI 6, Linux 6.12).

This matters most when the worker runs as the grader's own user (see :mod:`grader.session`),
where file permissions cannot keep it out of the course's folder. Where Landlock is missing (an
older kernel, macOS), :func:`restrict` returns False and the worker runs without it: the README's
threat model says what then remains open.
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same on every architecture
_VERSION_FLAG = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_ABI1_ALL = (1 << 13) - 1  # execute .. make_sym: every right of the first ABI
_REFER, _TRUNCATE, _IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1

_READ = _EXECUTE | _READ_FILE | _READ_DIR
_SYSTEM_FOLDERS = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/opt", "/sys")
#: Of ``/proc``, the worker reads its own folder and the machine's, never another process's.
_PROC_FILES = ("/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/filesystems")
#: The packages of a course checkout the worker imports; the rest of the checkout stays closed.
_COURSE_PACKAGES = ("grader", "minijax", "booktools")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi_version() -> int:
    """The kernel's Landlock ABI version, or 0 where there is no Landlock."""
    if not sys.platform.startswith("linux"):
        return 0
    version = _libc().syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), _VERSION_FLAG)
    return max(version, 0)


def restrict(own_folder: Path) -> bool:
    """Confine this process (and its future children) as the module docstring says; False if
    this system has no Landlock. Irreversible."""
    abi = abi_version()
    if abi == 0:
        return False
    handled = _ABI1_ALL | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0) \
        | (_IOCTL_DEV if abi >= 5 else 0)
    attr = _RulesetAttr(handled, 0, _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if abi >= 6 else 0)
    size = 24 if abi >= 6 else (16 if abi >= 4 else 8)
    libc = _libc()
    ruleset = libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        return False
    try:
        for folder in readable_folders():
            _allow(libc, ruleset, folder, _READ & handled)
        _allow(libc, ruleset, Path(f"/proc/{os.getpid()}"), _READ & handled)
        for file in _PROC_FILES:
            _allow(libc, ruleset, Path(file), (_EXECUTE | _READ_FILE) & handled)
        _allow(libc, ruleset, Path("/dev"), (_READ | _WRITE_FILE | _IOCTL_DEV) & handled)
        _allow(libc, ruleset, own_folder, handled)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
                libc.syscall(_RESTRICT_SELF, ruleset, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
    return True


def readable_folders() -> list[Path]:
    """The folders the worker may read: the system's, Python's, and its import path's, where a
    course checkout on that path contributes only its ``grader``, ``minijax`` and ``booktools``
    packages."""
    folders = [Path(p) for p in _SYSTEM_FOLDERS]
    folders += [Path(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix,
                                  sys.base_exec_prefix}]
    for entry in sys.path:
        path = Path(entry or ".").resolve()
        if path.is_file():  # a zip of the standard library
            path = path.parent
        if (path / "grader" / "__init__.py").is_file():
            folders += [path / package for package in _COURSE_PACKAGES]
        elif path != Path.cwd().resolve():
            folders.append(path)
    return [folder for folder in folders if folder.is_dir()]


def _allow(libc: ctypes.CDLL, ruleset: int, folder: Path, access: int) -> None:
    try:
        fd = os.open(folder, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # gone, or not ours to open: it stays closed
    try:
        rule = _PathBeneathAttr(access, fd)
        if libc.syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {folder}")
    finally:
        os.close(fd)


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)

"""Operating-system confinement of the fallback's child process (runs inside the worker only).

Applied in the forked child, after pandas, numpy and pyarrow are imported and before the
model's code runs; every step is irreversible for the process:

* **resource limits** (:func:`apply_limits`): address space (the memory limit on top of what
  the imported libraries already map), no file may grow (``RLIMIT_FSIZE`` 0), few descriptors,
  no core dumps, CPU seconds as a backstop to the wall-clock kill, no new processes where
  ``RLIMIT_NPROC`` means that (macOS);
* **Landlock** (Linux, through the ``landlock`` binding, every ABI from 1 up: reads can be
  confined since the first): the file system becomes read-only and readable only under the
  Python installation, its packages and the system library folders. The home folder,
  ``/etc``, ``/proc`` (other processes' memory and environment), ``/dev``, ``/dev/shm`` and
  the notebook's folder are out of reach;
* **capabilities** (Linux): all dropped, so a kernel running as root gives its child no
  privilege a filter might have missed;
* **seccomp-bpf** (Linux, through ``pyseccomp`` on the system's libseccomp): no program
  execution, no sockets, no new processes (threads only, without new namespaces), no tracing,
  reading or signalling other processes, no opening files for writing, no changes to files or
  folders, no raising of the limits above, no namespaces, mounts, ``io_uring``, BPF or terminal
  input injection, no System V or POSIX message IPC (another process's shared memory), no
  changing any process's priority, CPU pinning or scheduling, no kernel log, no descriptor made
  to signal a process (``fcntl`` ``F_SETOWN``/``F_SETSIG``/``F_SETOWN_EX``/``O_ASYNC``, the
  same ``ioctl`` requests).

The functions import their bindings lazily so the worker can report what is missing.
"""

from __future__ import annotations

import errno
import os
import sys
import sysconfig
from typing import Any

#: Descriptors the child may hold (lazy imports need a few).
MAX_FILES = 32

#: System folders holding the shared libraries that lazily imported extension modules load.
SYSTEM_LIBRARY_DIRS = ("/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/share/zoneinfo")


def address_space_now() -> int:
    """Bytes of virtual memory this process maps now (0 when unknown)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def apply_limits(memory: int, cpu_seconds: int, baseline: int) -> list[str]:
    """Sets the child's resource limits (soft = hard); returns the ones that were set.

    ``memory`` is allowed on top of ``baseline`` (the address space already mapped by the
    imported libraries), so the figure means what the model's code may allocate.
    """
    applied: list[str] = []
    try:
        import resource
    except ImportError:  # Windows
        return applied

    def limit(name: str, value: int) -> None:
        res = getattr(resource, name, None)
        if res is None:
            return
        try:
            resource.setrlimit(res, (value, value))
            applied.append(name)
        except (ValueError, OSError):
            pass

    if sys.platform != "darwin":  # macOS does not enforce RLIMIT_AS and may refuse it
        limit("RLIMIT_AS", baseline + memory)
    else:
        limit("RLIMIT_DATA", baseline + memory)
    limit("RLIMIT_FSIZE", 0)
    limit("RLIMIT_CORE", 0)
    limit("RLIMIT_NOFILE", MAX_FILES)
    limit("RLIMIT_CPU", max(1, cpu_seconds))
    if sys.platform != "linux":  # Linux counts threads too; seccomp stops processes there
        limit("RLIMIT_NPROC", 0)
    return applied


def readable_dirs() -> list[str]:
    """Folders the confined child may read: Python's installation, its packages, the folder
    of the running cadet_magic and the system's shared libraries."""
    paths = sysconfig.get_paths()
    dirs = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    dirs |= {p for k in ("stdlib", "platstdlib", "purelib", "platlib") if (p := paths.get(k))}
    for name in ("cadet_magic", "pandas", "numpy", "pyarrow"):
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if path:  # the package folder itself, never its parent (a project folder)
            dirs.add(os.path.dirname(os.path.abspath(path)))
    dirs |= set(SYSTEM_LIBRARY_DIRS)
    root = os.path.abspath(os.sep)
    return sorted(d for d in dirs if d and os.path.isdir(d) and os.path.abspath(d) != root)


#: Landlock's file-system rights per ABI (the kernel refuses rights newer than its ABI):
#: execute, write, read, read a folder, remove a folder or file, make char/dir/regular/socket/
#: fifo/block/symlink (ABI 1); refer across folders (2); truncate (3); device ioctl (5).
_FS_RIGHTS_ABI1 = (1 << 13) - 1
_FS_RIGHTS = {1: _FS_RIGHTS_ABI1, 2: _FS_RIGHTS_ABI1 | 1 << 13, 3: _FS_RIGHTS_ABI1 | 3 << 13}
_FS_RIGHTS[4] = _FS_RIGHTS[3]
_FS_RIGHTS[5] = _FS_RIGHTS[3] | 1 << 15
#: The rights granted under a readable folder: read files, list folders.
_READ = (1 << 2) | (1 << 3)


def handled_rights(abi: int) -> int:
    """The file-system rights a Landlock ruleset of ``abi`` handles (denies unless granted).

    Example:
        >>> [bin(handled_rights(a)).count("1") for a in (1, 2, 3, 4, 5, 6, 7)]
        [13, 14, 15, 15, 16, 16, 16]
    """
    return _FS_RIGHTS[max(1, min(abi, max(_FS_RIGHTS)))]


def landlock_abi() -> int:
    """The running kernel's Landlock ABI (0: none, or the binding is missing)."""
    try:
        import landlock as ll

        return int(ll.landlock_abi_version())
    except Exception:  # noqa: BLE001 - no Landlock here, whatever the reason
        return 0


def available() -> dict[str, Any]:
    """What confinement this system offers (reported by the worker in its ``ready`` event):
    ``landlock_abi`` (0: none), ``landlock`` and ``seccomp`` (True, or why not)."""
    info: dict[str, Any] = {"landlock_abi": landlock_abi()}
    for name in ("landlock", "pyseccomp"):
        try:
            module = __import__(name)
            if name == "pyseccomp":
                module.SyscallFilter(defaction=module.ALLOW)  # loads libseccomp.so.2
            info["seccomp" if name == "pyseccomp" else name] = True
        except Exception as e:  # noqa: BLE001 - reported; the kernel decides
            info["seccomp" if name == "pyseccomp" else name] = f"{type(e).__name__}: {e}"[:200]
    return info


def landlock(readable: list[str], abi: int | None = None) -> None:
    """Makes the file system read-only and limited to ``readable`` (irreversible), with the
    rights of Landlock ``abi`` (default: the kernel's; an older one to test older kernels).
    Raises when the kernel has no Landlock."""
    import landlock as ll

    abi = landlock_abi() if abi is None else abi
    if abi < 1:
        raise OSError("this kernel has no Landlock")
    handled = handled_rights(abi)
    ruleset = ll.Ruleset(restrict_rules=ll.FSAccess(handled))
    ruleset.allow(*readable, rules=ll.FSAccess(_READ))
    ruleset.apply()


def drop_capabilities() -> None:
    """Drops every capability of this process (effective, permitted, inheritable)."""
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [(n, ctypes.c_uint32) for n in ("effective", "permitted", "inheritable")]

    libc = ctypes.CDLL(None, use_errno=True)
    header = Header(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3: two data structs
    data = (Data * 2)()
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


# open(2) flags that create, write or truncate (Linux values, all architectures we support).
_O_WRITE_FLAGS = 0o1 | 0o2 | 0o100 | 0o1000 | 0o2000
_TIOCSTI = 0x5412
_CLONE_THREAD = 0x00010000

#: System calls refused outright (EPERM).
DENIED_SYSCALLS = (
    "execve",
    "execveat",
    "fork",
    "vfork",
    "socket",
    "socketpair",
    "connect",
    "bind",
    "listen",
    "accept",
    "accept4",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "process_madvise",
    "pidfd_open",
    "pidfd_getfd",
    "pidfd_send_signal",
    "kcmp",
    "kill",
    "setrlimit",
    "creat",
    "mkdir",
    "mkdirat",
    "mknod",
    "mknodat",
    "unlink",
    "unlinkat",
    "rmdir",
    "rename",
    "renameat",
    "renameat2",
    "link",
    "linkat",
    "symlink",
    "symlinkat",
    "chmod",
    "fchmod",
    "fchmodat",
    "chown",
    "fchown",
    "lchown",
    "fchownat",
    "truncate",
    "ftruncate",
    "utime",
    "utimes",
    "utimensat",
    "futimesat",
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "removexattr",
    "lremovexattr",
    "fremovexattr",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "name_to_handle_at",
    "open_by_handle_at",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "keyctl",
    "add_key",
    "request_key",
    "memfd_create",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "setuid",
    "setgid",
    "setreuid",
    "setregid",
    "setresuid",
    "setresgid",
    "setgroups",
    "sethostname",
    "setdomainname",
    "settimeofday",
    "clock_settime",
    "adjtimex",
    "clock_adjtime",
    # System V and POSIX message IPC: another process's shared memory, queues, semaphores.
    "shmget",
    "shmat",
    "shmctl",
    "shmdt",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
    "semget",
    "semop",
    "semtimedop",
    "semctl",
    "ipc",
    "mq_open",
    "mq_unlink",
    "mq_timedsend",
    "mq_timedreceive",
    "mq_notify",
    "mq_getsetattr",
    # Priority, CPU pinning and scheduling of any process (the kernel's and the worker's).
    "setpriority",
    "sched_setaffinity",
    "sched_setscheduler",
    "sched_setparam",
    "sched_setattr",
    "ioprio_set",
    "migrate_pages",
    "move_pages",
    "mlockall",
    # The kernel log, I/O ports, terminals, file-system watching, the new mount API.
    "syslog",
    "iopl",
    "ioperm",
    "vhangup",
    "fanotify_init",
    "fanotify_mark",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "quotactl_fd",
    "kexec_file_load",
    "process_mrelease",
    "uselib",
    "capset",
    "lookup_dcookie",
)

#: ``fcntl`` commands that make a descriptor signal a process of the caller's choice (the
#: kernel) when I/O becomes possible on it, and the signal it sends: a descriptor shared with
#: the kernel (a pipe end, the worker's streams) would otherwise deliver SIGUSR1 to it.
_F_SETOWN, _F_SETSIG, _F_SETOWN_EX = 8, 10, 15
#: ``ioctl`` requests that do the same (``FIOSETOWN``, ``SIOCSPGRP``) or switch on the
#: signal-driven I/O that sends it (``FIOASYNC``).
_FIOSETOWN, _SIOCSPGRP, _FIOASYNC = 0x8901, 0x8902, 0x5452
_F_SETFL, _O_ASYNC = 4, 0o20000

#: ``clone`` flags that create namespaces (a thread may not take any).
_CLONE_NEW = (0x20000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
_TIOCLINUX = 0x541C

#: System calls answered with ENOSYS, so the C library falls back to one the filter can read
#: (``clone3`` passes its flags in memory a filter cannot see; glibc then uses ``clone``).
UNSUPPORTED_SYSCALLS = ("clone3", "openat2")


def seccomp(pid: int) -> None:
    """Loads the system-call filter (irreversible; ``no_new_privs`` is set by libseccomp)."""
    import pyseccomp as sc

    f = sc.SyscallFilter(defaction=sc.ALLOW)

    def rule(action: int, name: str, *args: Any) -> None:
        try:
            f.add_rule(action, name, *args)
        except (ValueError, OSError, RuntimeError):
            pass  # a call this architecture does not have

    deny = sc.ERRNO(errno.EPERM)
    for name in DENIED_SYSCALLS:
        rule(deny, name)
    for name in UNSUPPORTED_SYSCALLS:
        rule(sc.ERRNO(errno.ENOSYS), name)
    # Threads (CLONE_THREAD) yes, new processes no.
    rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, _CLONE_THREAD, 0))
    for flag in _CLONE_NEW:
        rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    # Files open for reading only.
    for bit in (0o1, 0o2, 0o100, 0o1000, 0o2000):
        rule(deny, "open", sc.Arg(1, sc.MASKED_EQ, bit, bit))
        rule(deny, "openat", sc.Arg(2, sc.MASKED_EQ, bit, bit))
    # Limits may be read, never set; signals only to this process.
    rule(deny, "prlimit64", sc.Arg(2, sc.NE, 0))
    rule(deny, "tgkill", sc.Arg(0, sc.NE, pid))
    rule(deny, "tkill", sc.Arg(0, sc.NE, pid))
    rule(deny, "rt_sigqueueinfo", sc.Arg(0, sc.NE, pid))
    rule(deny, "rt_tgsigqueueinfo", sc.Arg(0, sc.NE, pid))
    for request in (_TIOCSTI, _TIOCLINUX, _FIOSETOWN, _SIOCSPGRP, _FIOASYNC):
        rule(deny, "ioctl", sc.Arg(1, sc.EQ, request))
    # No descriptor may be made to signal another process (signal-driven I/O's owner).
    for call in ("fcntl", "fcntl64"):
        for command in (_F_SETOWN, _F_SETSIG, _F_SETOWN_EX):
            rule(deny, call, sc.Arg(1, sc.EQ, command))
        rule(deny, call, sc.Arg(1, sc.EQ, _F_SETFL), sc.Arg(2, sc.MASKED_EQ, _O_ASYNC, _O_ASYNC))
    f.load()

"""How ptn replaces a user's file: atomically, interrupt-safe, keeping what the file was.

Every write (``ptn.save``, a metadata rewrite) goes through :func:`replace_file`,
so the guarantees of spec.md section 11 hold in one place:

- the new content goes to a temporary file beside the destination, named
  ``.NAME.XXXXXXXX.tmp`` (8 hex digits), created with mode ``0o666`` so the
  umask applies as for any new file, locked while it is written;
- a destination that exists keeps its permission bits, and its owner and group
  where the process may set them; a symlink is followed and stays a symlink;
  a file with other hard links is replaced at this path only (the other links
  keep the old content) and :class:`BrokenHardLinks` says so;
- SIGINT, SIGTERM and SIGHUP during the write remove the temporary file before
  the signal takes its usual effect, so the old file stays byte-identical;
- an edit (:func:`edit_lock`) holds an advisory lock on the package for the
  whole read-validate-copy-rename, and renames only if the path still names the
  file it read, unchanged (device, inode, size, modification and change time);
  it starts reading only once the file's change time is older than the file
  system's timestamp step, so that any later write moves it (:func:`settle`).

A writer killed with SIGKILL (or by the OOM killer) cannot clean up; its
temporary file is not locked any more, which is how
:func:`ptn.package.tempfiles.stale_temp_files` tells it from one being written right now.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import stat
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from ptn.core.buffers import CLOEXEC, open_regular
from ptn.core.errors import PtnError, PtnIOError
from ptn.package.tempfiles import NOFOLLOW, TEMP_NAME

_CLEANUP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, name)
)
LOCK_TIMEOUT = 60.0
"""Seconds an edit waits for another process's lock on the same package."""


class BrokenHardLinks(UserWarning):
    """The replaced file had other hard links; they still hold the old content."""


def resolve_target(path: str | os.PathLike[str]) -> Path:
    """The file a write to ``path`` must replace: a symlink's target, else ``path``."""
    p = Path(path)
    return Path(os.path.realpath(p)) if p.is_symlink() else p


@dataclass(frozen=True)
class Identity:
    """What says "still the same file": device, inode, size, modification and change time.

    The change time (``ctime``) is the one a writer cannot put back (``touch -d`` and
    ``rsync --inplace`` restore the modification time); every write moves it, once the
    edit has waited out the file system's timestamp step (:func:`settle`).
    """

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> Identity:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


CLOCK_TICK_NS = 20_000_000
"""How far the kernel's clock for file timestamps (a coarse clock, one scheduler tick
behind: 10 ms at the slowest, HZ=100) may lag ``time.time_ns()``, with room to spare."""
SETTLE_MAX_NS = 3_000_000_000
"""The longest wait for a change time to settle: FAT's 2 s step, and a tick. A change time
further ahead of the clock (a network file system's clock skew) is not waited for."""


def timestamp_step_ns(t: int) -> int:
    """The coarsest timestamp step the time ``t`` (ns) is consistent with: the largest power
    of ten dividing it, up to 1 s; a whole second may be FAT's 2 s step."""
    step = 1
    while step < 1_000_000_000 and t % (step * 10) == 0:
        step *= 10
    return 2_000_000_000 if step == 1_000_000_000 else step


def settle_wait_ns(identity: Identity, now_ns: int) -> int:
    """How long to wait before reading a file of this identity, so that any write after the
    wait moves its change time (0: no need, or no help: see ``SETTLE_MAX_NS``).

    A write stamps the file with the kernel's clock, rounded down to the file system's
    step: within the step of the last change, a second change can leave the change time as
    it was ("racy" timestamps). Past ``ctime + step + tick``, it cannot. The step is judged
    from the change time alone: the modification time may be anything a program set
    (``touch -d``, an archive's whole seconds).
    """
    ctime = identity.ctime_ns
    wait = ctime + timestamp_step_ns(ctime) + CLOCK_TICK_NS - now_ns
    return wait if 0 < wait <= SETTLE_MAX_NS else 0


@dataclass
class EditSource:
    """A package opened for an edit: its locked descriptor and what it was when locked.

    ``path`` is the file read and replaced (a symlink's target); ``given`` the path the
    caller named, which must still lead to it (a symlink retargeted meanwhile would
    otherwise get the edit of a package it no longer names).
    """

    path: Path
    fd: int
    identity: Identity
    given: Path

    def check_unchanged(self) -> None:
        """Raise ``ptn-concurrent-modification`` unless the path (through any symlink)
        still names this file, as it was (``Identity``: its change time included)."""
        now: list[Identity | None] = []
        for path in (self.path, self.given):
            try:
                now.append(Identity.of(os.stat(path)))
            except OSError:
                now.append(None)
        now.append(Identity.of(os.fstat(self.fd)))
        if any(identity != self.identity for identity in now):
            raise PtnError(
                "ptn-concurrent-modification",
                f"{os.fspath(self.given)!r} was replaced, modified or retargeted by another "
                "program during the edit; it was left as that program left it and nothing "
                "was written. Run the edit again.",
            )

    def target(self, output: str | os.PathLike[str] | None) -> str | os.PathLike[str]:
        """Where the edit writes: ``output``, or this file's own path when ``output`` is None
        or names this very file (through another name, a hard link or a symlink)."""
        if output is None:
            return self.path
        try:
            st = os.stat(output)
        except OSError:
            return output
        same = (st.st_dev, st.st_ino) == (self.identity.dev, self.identity.ino)
        return self.path if same else output

    @contextlib.contextmanager
    def changes_blamed(self) -> Iterator[None]:
        """A failure while another program changed the file is that change's doing: a file
        truncated under the edit makes the copy or the check fail, and the right verdict
        is ``ptn-concurrent-modification``, not what the half-read file looked like; so is
        a member whose bytes no longer match their CRC-32 because a same-size write landed
        ahead of the copy (``zip-crc-mismatch`` only when the file did not change)."""
        try:
            yield
        except Exception:
            self.check_unchanged()
            raise


def _lock(fd: int, path: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise PtnError(
                    "ptn-concurrent-modification",
                    f"another process has been editing {os.fspath(path)!r} for {timeout:g} s "
                    "(it holds the package's lock); nothing was written",
                ) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.1)


@contextlib.contextmanager
def edit_lock(
    path: str | os.PathLike[str], *, timeout: float | None = None
) -> Iterator[EditSource]:
    """Open ``path``'s file and hold an exclusive advisory lock on it for the edit.

    Edits by other ptn processes wait for the lock (``LOCK_TIMEOUT`` seconds
    unless ``timeout`` is given). When one of them renamed a
    new file into place while this one waited, the lock taken was on the old
    file: open the new one and lock again, so concurrent edits serialise and
    each one starts from the result of the previous. The identity is taken once the
    file's change time has settled (:func:`settle`).
    """
    while True:
        target = resolve_target(path)  # again after a wait: a link may have moved
        fd = open_regular(target)
        try:
            _lock(fd, target, LOCK_TIMEOUT if timeout is None else timeout)
            identity = Identity.of(os.fstat(fd))
            try:
                current = Identity.of(os.stat(target))
            except FileNotFoundError:
                current = None
        except BaseException:
            os.close(fd)
            raise
        if current is not None and (current.dev, current.ino) == (identity.dev, identity.ino):
            break
        os.close(fd)
        if current is None:
            raise PtnIOError(f"{os.fspath(target)!r} was removed during the edit")
    try:
        identity = settle(fd, identity, target)
        yield EditSource(target, fd, identity, Path(path))
    finally:
        os.close(fd)  # releases the lock


def settle(fd: int, identity: Identity, path: Path) -> Identity:
    """The identity of the open file ``fd`` once its change time is past the file system's
    timestamp step (``settle_wait_ns``): nothing of it has been read yet, and from now on
    any write moves its change time, whatever the step (ns, a tick, 1 s, FAT's 2 s).

    Waits only for a file changed within that step (up to a tick on local file systems
    with ns timestamps); a file that keeps changing for ``LOCK_TIMEOUT`` seconds is
    ``ptn-concurrent-modification``.
    """
    deadline = time.monotonic() + LOCK_TIMEOUT
    while (wait := settle_wait_ns(identity, time.time_ns())) > 0:
        if time.monotonic() >= deadline:
            raise PtnError(
                "ptn-concurrent-modification",
                f"another program kept changing {os.fspath(path)!r} for {LOCK_TIMEOUT:g} s; "
                "nothing was written",
            )
        time.sleep(wait / 1e9)
        identity = Identity.of(os.fstat(fd))  # changed meanwhile: wait out its new time
    return identity


class _Interrupted(BaseException):
    """A cleanup signal arrived during a write (raised from its handler)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def _cleanup_on_signals() -> Iterator[None]:
    """Turn fatal signals into an exception while writing, so ``finally`` blocks run.

    Only signals whose handler is the default (terminate) are taken, and only
    in the main thread (Python runs handlers there). Python's own SIGINT
    handler already raises KeyboardInterrupt and is left alone. After cleanup
    the signal is delivered again with its previous handler, so the process
    ends the way its parent expects (killed by SIGTERM, status 143 in a shell).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, Callable[[int, FrameType | None], object] | int | None] = {}
    fired: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        if not fired:  # a second signal during cleanup must not interrupt the cleanup
            fired.append(signum)
            raise _Interrupted(signum)

    for sig in _CLEANUP_SIGNALS:
        if signal.getsignal(sig) == signal.SIG_DFL:
            previous[sig] = signal.signal(sig, handler)
    try:
        yield
    except _Interrupted as exc:
        for sig, old in previous.items():
            signal.signal(sig, old)
        previous.clear()
        os.kill(os.getpid(), exc.signum)
        raise PtnError(
            "ptn-write-failed", f"interrupted by signal {exc.signum}; the destination is unchanged"
        ) from None
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold cleanup signals back (they arrive right after) while a temp file is created."""
    mask = set(_CLEANUP_SIGNALS)
    old = signal.pthread_sigmask(signal.SIG_BLOCK, mask)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _create_temp(dest: Path) -> tuple[int, Path]:
    for _ in range(64):
        tmp = dest.with_name(TEMP_NAME.format(name=dest.name, token=os.urandom(4).hex()))
        try:
            flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | CLOEXEC | NOFOLLOW
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {os.fspath(dest)!r}")


def _keep_attributes(fd: int, old: os.stat_result) -> None:
    """Give the new file the old one's owner, group (where allowed) and permission bits."""
    for uid in (old.st_uid, -1):
        try:
            os.fchown(fd, uid, old.st_gid)
            break
        except PermissionError:
            continue
    os.fchmod(fd, stat.S_IMODE(old.st_mode))  # after chown, which may clear set-id bits


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def replace_file(
    path: str | os.PathLike[str],
    write: Callable[[int], None],
    *,
    before_rename: Callable[[], None] | None = None,
) -> None:
    """Write a new file with ``write(fd)`` and atomically put it at ``path``'s target.

    ``before_rename`` runs last before the rename (an edit checks there that
    its source is unchanged); if it raises, nothing is replaced. On any
    failure or cleanup signal the temporary file is removed.
    """
    dest = resolve_target(path)
    with _cleanup_on_signals():
        try:
            old: os.stat_result | None = os.stat(dest)
        except FileNotFoundError:
            old = None
        tmp: Path | None = None
        try:
            with _signals_deferred():  # no window where the file exists but tmp is unset
                fd, tmp = _create_temp(dest)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # "in use" for stale_temp_files
                write(fd)
                if old is not None:
                    _keep_attributes(fd, old)
                os.fsync(fd)
                if before_rename is not None:
                    before_rename()
                os.replace(tmp, dest)
            finally:
                os.close(fd)
        except BaseException:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            raise
        _fsync_dir(dest.parent)
    if old is not None and old.st_nlink > 1:
        warnings.warn(
            BrokenHardLinks(
                f"{os.fspath(dest)!r} had {old.st_nlink - 1} other hard link(s); "
                "they still hold the old package"
            ),
            stacklevel=3,
        )

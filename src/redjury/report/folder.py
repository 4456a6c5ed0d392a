"""The run folder: a lock held while a run writes it, and the paths a run may write to."""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
from collections.abc import Callable, Iterable
from pathlib import Path

from redjury.errors import RedjuryError

LOCK_NAME = "redjury.lock"


class FolderBusy(RedjuryError):
    """Another run holds the folder's lock."""


class FolderLock:
    """An exclusive `flock` on `<folder>/redjury.lock`, holding the locker's process id.

    A second run on the folder (another process, or another thread of this one: a lock
    belongs to an open file) is refused at once rather than both writing the same files.
    The file is removed when the lock is let go; a killed run's lock ends with its process.
    """

    def __init__(self, folder: Path) -> None:
        self.path = folder / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> None:
        # A lock file removed by the run that held it between our open and our lock is not
        # the file at the path any more: open the new one and try again.
        for _ in range(16):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
                os.close(fd)
                raise FolderBusy(holder) from None
            if _same_file(fd, self.path):
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
                self._fd = fd
                return
            os.close(fd)
        raise FolderBusy("unknown")

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        os.close(self._fd)
        self._fd = None


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path, follow_symlinks=False))
    except OSError:
        return False


def same_path(a: Path, b: Path) -> bool:
    """Whether `a` and `b` name the same file (by path, or as links to one file)."""
    if a.resolve() == b.resolve():
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def output_problem(target: Path, protected: Iterable[tuple[Path, str]]) -> str | None:
    """Why `target` may not be written: a symbolic link, or one of the `protected` files
    (the run's inputs, its report: each with what it is), by name or as the same file."""
    # A link to a device or a pipe (/dev/stdout) destroys nothing; one to a file, or to
    # nothing yet, would have the run write where the link's maker chose.
    if target.is_symlink() and (target.is_file() or not target.exists()):
        return "is a symbolic link; redjury does not write through links (remove it)"
    for path, what in protected:
        if same_path(path, target):
            return f"is {what}; writing there would destroy it (name another file)"
    return None


def write_replacing(target: Path, write: Callable[[Path], object]) -> Path:
    """Have `write` fill a new file beside `target`, then put it in `target`'s place: a
    symbolic link planted at `target` is replaced, never written through, and a reader
    never sees half a file. A device or a pipe is written as it is, never replaced."""
    if target.exists() and not target.is_file():  # a device or a pipe: /dev/stdout, /dev/null
        write(target)
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    # A new file (never one planted there), with the permissions the umask gives.
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666))
    try:
        write(tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def report_outputs(out_dir: Path) -> list[tuple[Path, str]]:
    """The files of a run folder that another output must never overwrite."""
    from redjury.report.jsonl import HITLOG_NAME, REPORT_NAME

    return [
        (out_dir / REPORT_NAME, "the run's report"),
        (out_dir / HITLOG_NAME, "the run's hitlog"),
        (out_dir / "redjury.report.html", "the run's HTML report"),
    ]

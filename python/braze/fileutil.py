"""Writing files the user owns without losing or half-writing them.

Every file braze writes for a user (saved artifacts, braze-opt's `-o`, reproducers, the
tuning cache) appears whole or not at all: the bytes go to a temporary file in the same
folder, which then takes the path in one step (a hard link when the path must not exist yet,
so two writers never both "create" it; `os.replace` when overwriting is allowed).
"""

from __future__ import annotations

import errno
import itertools
import os
import stat
import tempfile
from pathlib import Path

from braze import settings

REPRODUCER_DIR_ENV = "BRAZE_REPRODUCER_DIR"
"""Where braze.compile writes reproducers (default: the temp directory)."""

_COUNTER = itertools.count(1)


def default_reproducer_path(prefix: str = "braze-reproducer") -> str:
    """A fresh path for a reproducer: <prefix>-<pid>-<n>.mlir in BRAZE_REPRODUCER_DIR or the temp dir."""
    root = settings.text(REPRODUCER_DIR_ENV) or tempfile.gettempdir()
    return os.path.join(root, f"{prefix}-{os.getpid()}-{next(_COUNTER)}.mlir")


def write_reproducer(path: str, ir_text: str, command: str, note: str) -> None:
    """Write the IR with a header saying what it is and how to replay it (an OSError propagates)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"// braze reproducer: {note}.\n// Replay: {command}\n{ir_text}")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomically(path: str | os.PathLike, data: bytes, *, overwrite: bool,
                     regular_only: bool = True) -> Path:
    """Write `data` to `path` atomically.

    overwrite=False: FileExistsError when anything is at `path` (a dangling symlink included),
    even when another process creates it at the same moment. overwrite=True: a regular file
    at `path` is replaced. regular_only: anything else at `path` (a directory, device, FIFO,
    socket, symlink) raises IsADirectoryError / FileExistsError rather than being replaced;
    without it, a device or FIFO is written through (as `-o /dev/stdout` expects) and a
    symlink's target is replaced.
    """
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None:
        if stat.S_ISDIR(st.st_mode) or (stat.S_ISLNK(st.st_mode) and path.is_dir()):
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
        if not overwrite:
            raise FileExistsError(errno.EEXIST, "already exists", str(path))
        if stat.S_ISLNK(st.st_mode):
            if regular_only:
                raise FileExistsError(errno.EEXIST, "is a symbolic link, not a regular file", str(path))
            path = path.resolve()
            st = os.stat(path) if path.exists() else None
        if st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISLNK(st.st_mode):
            if regular_only:
                raise FileExistsError(errno.EEXIST, "is not a regular file", str(path))
            with open(path, "wb") as f:  # a device or FIFO: there is nothing to replace
                f.write(data)
            return path
    folder = path.parent
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        if overwrite:
            os.replace(tmp, path)
        else:
            _create(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
    return path


def _create(tmp: str, path: Path) -> None:
    """Give `tmp`'s contents the name `path`, failing if `path` exists (atomically)."""
    try:
        os.link(tmp, path)
        return
    except FileExistsError:
        raise
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
    # No hard links here: claim the name with O_EXCL, then move the contents onto it.
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    os.replace(tmp, path)


def cache_home() -> Path:
    """braze's cache folder: $BRAZE_CACHE_DIR, else ~/.cache/braze (the tuning cache, the
    generated kernels and the compile cache live under it)."""
    return Path(settings.text("BRAZE_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "braze"))

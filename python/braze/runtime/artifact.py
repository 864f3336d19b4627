"""Saved artifacts: one zip file holding the .vmfb and JSON metadata.

    model.braze
      braze.json    format version, signature, target, versions, report, checksums
      module.vmfb   the IREE program
      state/0.npy   the current value of each buffer the program updates (BatchNorm's running
                    statistics in train mode, counters), if any

Loading needs only iree-base-runtime and numpy. A corrupt, truncated or incompatible
file raises ArtifactError naming the file and what to do.
"""

from __future__ import annotations

import hashlib
import json
import os
import io
import zipfile
from pathlib import Path

from braze.errors import ArtifactError, ArtifactExistsError
from braze.fileutil import write_atomically

FORMAT = "braze-artifact"
FORMAT_VERSION = 1
METADATA = "braze.json"
VMFB = "module.vmfb"
STATE = "state"
"""Folder of the buffers the program updates (state/<i>.npy, in the signature's order)."""


def runtime_version() -> str:
    try:
        from iree.runtime.version import VERSION

        return VERSION
    except ImportError:  # pragma: no cover
        return "unknown"


def write(path: str | os.PathLike, vmfb: bytes, metadata: dict, overwrite: bool = False,
          arrays: list | None = None, files: dict[str, bytes] | None = None) -> Path:
    """Write an artifact atomically: the file appears whole, or not at all; without `overwrite`
    an existing path is never replaced (even by a concurrent save), and nothing but a regular
    file is ever replaced."""
    path = Path(path)
    meta = dict(metadata)
    blobs = [_npy(a) for a in arrays or []]
    files = dict(files or {})
    if any(name in (METADATA, VMFB) or name.startswith(STATE + "/") or ".." in name for name in files):
        raise ValueError(f"artifact file names {sorted(files)} clash with braze's own")
    meta.update(format=FORMAT, format_version=FORMAT_VERSION, vmfb_sha256=hashlib.sha256(vmfb).hexdigest(),
                state_sha256=[hashlib.sha256(b).hexdigest() for b in blobs],
                files_sha256={name: hashlib.sha256(data).hexdigest() for name, data in files.items()})
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as z:
        z.writestr(METADATA, json.dumps(meta, indent=2, sort_keys=True))
        z.writestr(VMFB, vmfb)
        for i, blob in enumerate(blobs):
            z.writestr(f"{STATE}/{i}.npy", blob)
        for name, data in files.items():
            z.writestr(name, data)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ArtifactError(f"cannot save to {path}: cannot create its folder {path.parent} "
                            f"({e.strerror or e}); choose a path in a writable folder.") from None
    try:
        return write_atomically(path, buffer.getvalue(), overwrite=overwrite)
    except IsADirectoryError:
        raise ArtifactExistsError(f"{path} is a directory; give save() a file path such as {path / 'model.braze'}") from None
    except FileExistsError as e:
        if e.strerror == "already exists":
            raise ArtifactExistsError(f"{path} already exists; braze will not overwrite it. Pass "
                                      "overwrite=True or choose another path.") from None
        raise ArtifactExistsError(f"{path} {e.strerror}; save() replaces only regular files (with "
                                  "overwrite=True): choose another path.") from None
    except OSError as e:
        raise ArtifactError(f"cannot save to {path}: {e.strerror or e}"
                            f"{' (' + str(e.filename) + ')' if e.filename and str(e.filename) != str(path) else ''}; "
                            "choose a path in a writable folder.") from None


def _npy(array) -> bytes:
    import numpy as np

    out = io.BytesIO()
    np.save(out, np.ascontiguousarray(array), allow_pickle=False)
    return out.getvalue()


def read(path: str | os.PathLike) -> tuple[bytes, dict, list, dict[str, bytes]]:
    """(program, metadata, buffer values as numpy arrays, other files) of an artifact;
    ArtifactError if it is not a whole braze artifact of this format and IREE release."""
    path = Path(path)
    if not path.exists():
        raise ArtifactError(f"no artifact at {path}: the file does not exist")
    if path.is_dir():
        raise ArtifactError(f"{path} is a directory, not a braze artifact (a .braze file made by save())")
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            if METADATA not in names or VMFB not in names:
                raise ArtifactError(
                    f"{path} is a zip file but not a braze artifact (it lacks {METADATA} or {VMFB})"
                )
            meta = json.loads(z.read(METADATA))
            vmfb = z.read(VMFB)
            if not isinstance(meta, dict):
                raise ValueError("its metadata is not a JSON object")
            count = len(meta.get("state_sha256") or [])
            blobs = [z.read(f"{STATE}/{i}.npy") for i in range(count)]
            listed = meta.get("files_sha256") or {}
            if not isinstance(listed, dict):
                raise ValueError("its file list is not a JSON object")
            files = {name: z.read(name) for name in listed}
    except ArtifactError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError, KeyError) as e:
        raise ArtifactError(
            f"{path} is not a readable braze artifact ({type(e).__name__}: {e}); it is corrupt or "
            "truncated. Save it again from braze.compile(...).save()."
        ) from None
    if meta.get("format") != FORMAT:
        raise ArtifactError(f"{path} is not a braze artifact (format {meta.get('format')!r})")
    if meta.get("format_version") != FORMAT_VERSION:
        raise ArtifactError(
            f"{path} uses artifact format version {meta.get('format_version')}, this braze reads "
            f"version {FORMAT_VERSION}; recompile the model with this braze"
        )
    if hashlib.sha256(vmfb).hexdigest() != meta.get("vmfb_sha256"):
        raise ArtifactError(f"{path} is corrupt: its program does not match the checksum saved with it")
    if [hashlib.sha256(b).hexdigest() for b in blobs] != list(meta.get("state_sha256") or []):
        raise ArtifactError(f"{path} is corrupt: its buffer values do not match the checksums saved with them")
    if any(hashlib.sha256(files[n]).hexdigest() != sha for n, sha in (meta.get("files_sha256") or {}).items()):
        raise ArtifactError(f"{path} is corrupt: a file in it does not match the checksum saved with it")
    arrays = [_load_npy(b, path) for b in blobs]
    versions = meta.get("versions") if isinstance(meta.get("versions"), dict) else {}
    saved = versions.get("iree_compiler", "unknown")
    have = runtime_version()
    if _minor(saved) != _minor(have):
        raise ArtifactError(
            f"{path} was compiled by IREE {saved}, but this machine has iree-base-runtime {have}; "
            f"IREE programs need a runtime of the same release. Install iree-base-runtime=={saved} "
            "or recompile the model here."
        )
    return vmfb, meta, arrays, files


def _load_npy(blob: bytes, path) -> object:
    import numpy as np

    try:
        return np.load(io.BytesIO(blob), allow_pickle=False)
    except ValueError as e:
        raise ArtifactError(f"{path} holds a buffer value that is not a numpy array ({e})") from None


def _minor(version: str) -> str:
    return ".".join(str(version).split(".")[:2])

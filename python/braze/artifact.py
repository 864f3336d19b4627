"""Saved artifacts: one zip file holding the .vmfb and JSON metadata.

    model.braze
      braze.json    format version, signature, target, versions, report, vmfb sha256
      module.vmfb   the IREE program

Loading needs only iree-base-runtime and numpy. A corrupt, truncated or incompatible
file raises ArtifactError naming the file and what to do.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zipfile
from pathlib import Path

from .errors import ArtifactError

FORMAT = "braze-artifact"
FORMAT_VERSION = 1
METADATA = "braze.json"
VMFB = "module.vmfb"


def runtime_version() -> str:
    try:
        from iree.runtime.version import VERSION

        return VERSION
    except ImportError:  # pragma: no cover
        return "unknown"


def write(path: str | os.PathLike, vmfb: bytes, metadata: dict, overwrite: bool = False) -> Path:
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(
            f"{path} already exists; braze will not overwrite it. Pass overwrite=True or choose another path."
        )
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory; give save() a file path such as model.braze")
    meta = dict(metadata)
    meta.update(format=FORMAT, format_version=FORMAT_VERSION, vmfb_sha256=hashlib.sha256(vmfb).hexdigest())
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".braze-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as z:
            z.writestr(METADATA, json.dumps(meta, indent=2, sort_keys=True))
            z.writestr(VMFB, vmfb)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def read(path: str | os.PathLike) -> tuple[bytes, dict]:
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
    saved = meta.get("versions", {}).get("iree_compiler", "unknown")
    have = runtime_version()
    if _minor(saved) != _minor(have):
        raise ArtifactError(
            f"{path} was compiled by IREE {saved}, but this machine has iree-base-runtime {have}; "
            f"IREE programs need a runtime of the same release. Install iree-base-runtime=={saved} "
            "or recompile the model here."
        )
    return vmfb, meta


def _minor(version: str) -> str:
    return ".".join(str(version).split(".")[:2])

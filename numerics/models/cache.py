r"""A robust on-disk cache for derived model files (the dequantised weights of a GGUF checkpoint).

Layout: ``<root>/<key>-<sha256(source)[:16]>/`` holding the built files and ``manifest.json``::

    {"format": 1, "key": ..., "source": "/abs/path.gguf", "source_sha256": "<64 hex>",
     "source_size": int, "files": {"model.safetensors": {"size": int, "crc32": int}, ...}}

* ``root`` is ``$CONNWALK_CACHE`` if set, else ``$XDG_CACHE_HOME/connwalk`` or ``~/.cache/connwalk``.
* **Atomic write**: the entry is built in a temporary sibling directory, every file is fsynced,
  the manifest is written last, and the directory is renamed into place (``os.replace``): a reader
  sees either no entry or a complete one.
* **Checksums**: the source is identified by its SHA-256 (a changed source gets a new entry);
  each cached file's size and CRC-32 are verified on every load, so a truncated, partial
  (no manifest) or bit-flipped entry is detected, removed and rebuilt (with a warning).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import warnings
import zlib
from collections.abc import Callable
from pathlib import Path

from numerics.errors import CorruptFileError

__all__ = ["ENV", "cache_root", "file_sha256", "file_crc32", "verify_entry", "cached_build", "CacheInfo"]

ENV = "CONNWALK_CACHE"
MANIFEST = "manifest.json"
FORMAT = 1
_CHUNK = 1 << 24


def cache_root() -> Path:
    """The cache directory (not created here)."""
    env = os.environ.get(ENV)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "connwalk"


def file_sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for b in iter(lambda: fh.read(_CHUNK), b""):
            h.update(b)
    return h.hexdigest()


def file_crc32(path) -> int:
    c = 0
    with open(path, "rb") as fh:
        for b in iter(lambda: fh.read(_CHUNK), b""):
            c = zlib.crc32(b, c)
    return c & 0xFFFFFFFF


class CacheInfo:
    """What :func:`cached_build` did: ``path`` of the entry, ``hit`` (True: reused), ``rebuilt_reason``
    (why an existing entry was discarded, or None)."""

    def __init__(self, path: Path, hit: bool, rebuilt_reason: str | None):
        self.path, self.hit, self.rebuilt_reason = path, hit, rebuilt_reason

    def __repr__(self) -> str:
        return f"CacheInfo(path={str(self.path)!r}, hit={self.hit}, rebuilt_reason={self.rebuilt_reason!r})"


def verify_entry(entry: Path, source_sha: str) -> str | None:
    """``None`` if ``entry`` is a complete, uncorrupted cache of the source with SHA-256 ``source_sha``;
    otherwise the reason it is not."""
    entry = Path(entry)
    if not entry.is_dir():
        return "missing"
    mpath = entry / MANIFEST
    if not mpath.is_file():
        return f"partial entry (no {MANIFEST})"
    try:
        man = json.loads(mpath.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"unreadable manifest ({exc})"
    if not isinstance(man, dict) or man.get("format") != FORMAT or not isinstance(man.get("files"), dict):
        return "manifest has the wrong format"
    if man.get("source_sha256") != source_sha:
        return "source checksum differs from the manifest's"
    for name, meta in man["files"].items():
        p = entry / name
        if not p.is_file():
            return f"file {name} missing"
        if p.stat().st_size != meta.get("size"):
            return f"file {name} has size {p.stat().st_size}, manifest says {meta.get('size')} (truncated?)"
        if file_crc32(p) != meta.get("crc32"):
            return f"file {name} fails its CRC-32 check (corrupt)"
    return None


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def cached_build(
    key: str, source, build: Callable[[Path], None], *, root=None, source_sha: str | None = None
) -> CacheInfo:
    """Return a verified cache entry for ``source``, building it with ``build(tmpdir)`` if needed.

    ``build`` writes its files into the (empty) directory it is given; it must not write a file named
    ``manifest.json``. A broken existing entry is removed and rebuilt (a ``UserWarning`` says why)."""
    source = Path(source).resolve()
    if not source.is_file():
        raise CorruptFileError(f"{source}: no such file", argument="source")
    root = Path(root) if root is not None else cache_root()
    sha = source_sha or file_sha256(source)
    entry = root / f"{key}-{sha[:16]}"
    reason = verify_entry(entry, sha)
    if reason is None:
        return CacheInfo(entry, True, None)
    rebuilt = None
    if reason != "missing":
        rebuilt = reason
        warnings.warn(f"connwalk cache entry {entry} is unusable ({reason}); rebuilding", UserWarning, stacklevel=2)
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}-tmp-", dir=root))
    try:
        build(tmp)
        files = {}
        for p in sorted(tmp.rglob("*")):
            if p.is_file():
                rel = p.relative_to(tmp).as_posix()
                if rel == MANIFEST:
                    raise CorruptFileError("build wrote a file named manifest.json", argument="build")
                with open(p, "rb+") as fh:
                    os.fsync(fh.fileno())
                files[rel] = {"size": p.stat().st_size, "crc32": file_crc32(p)}
        man = {
            "format": FORMAT,
            "key": key,
            "source": str(source),
            "source_sha256": sha,
            "source_size": source.stat().st_size,
            "files": files,
        }
        with open(tmp / MANIFEST, "w", encoding="utf-8") as fh:
            json.dump(man, fh, indent=1)
            fh.flush()
            os.fsync(fh.fileno())
        _fsync_dir(tmp)
        if entry.exists():
            if verify_entry(entry, sha) is None:  # another process finished first: keep its entry
                shutil.rmtree(tmp, ignore_errors=True)
                return CacheInfo(entry, False, rebuilt)
            shutil.rmtree(entry, ignore_errors=True)
        try:
            os.replace(tmp, entry)
        except OSError:
            # another process put a complete entry there first: use it if it verifies
            if verify_entry(entry, sha) is None:
                shutil.rmtree(tmp, ignore_errors=True)
                return CacheInfo(entry, False, rebuilt)
            raise
        _fsync_dir(root)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return CacheInfo(entry, False, rebuilt)

r"""Checks of checkpoint files before anything is loaded: a safetensors header against the file's size
(:func:`check_safetensors`) and a GGUF header read up to its architecture (and context length) without
tensor data or tokenizer arrays (:func:`gguf_header`, :func:`check_gguf`). Used by
:mod:`numerics.models.registry`, which re-exports them."""

from __future__ import annotations

import json
from pathlib import Path

from numerics.errors import CorruptFileError, UnsupportedArchitectureError

GGUF_ARCHITECTURES = {"llama": "llama", "gemma3": "gemma3"}

__all__ = ["GGUF_ARCHITECTURES", "GGUF_SCALAR", "check_safetensors", "gguf_header", "check_gguf"]


def check_safetensors(path) -> None:
    """Parse a safetensors header and check the data fits the file; :class:`CorruptFileError` if not."""
    from safetensors import safe_open

    path = Path(path)
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                raise ValueError("file shorter than the 8-byte header length")
            n = int.from_bytes(head, "little")
            if n <= 0 or 8 + n > size:
                raise ValueError(f"header length {n} does not fit in a {size}-byte file")
            meta = json.loads(fh.read(n))
        end = max((v["data_offsets"][1] for k, v in meta.items() if k != "__metadata__"), default=0)
        if 8 + n + end != size:
            raise ValueError(f"tensor data ends at byte {8 + n + end} but the file has {size} bytes (truncated?)")
        with safe_open(str(path), framework="pt") as f:
            f.keys()
    except CorruptFileError:
        raise
    except Exception as exc:
        raise CorruptFileError(f"{path}: malformed safetensors file ({exc})", argument="path") from exc


GGUF_SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def gguf_header(path: Path, *, context: bool = False) -> dict:
    """Parse a GGUF header up to ``general.architecture`` (no tensor data, no tokenizer arrays); with
    ``context``, on to ``<architecture>.context_length`` (``"context_length"`` in the result, None
    when the file has none)."""
    import struct

    size = path.stat().st_size
    with open(path, "rb") as fh:

        def read(n):
            b = fh.read(n)
            if len(b) != n:
                raise ValueError(f"file ends at byte {fh.tell()} inside the header (truncated)")
            return b

        def string():
            (n,) = struct.unpack("<Q", read(8))
            if n > size:
                raise ValueError(f"string length {n} exceeds the file size")
            return read(n)

        def skip(vtype):
            if vtype in GGUF_SCALAR:
                read(GGUF_SCALAR[vtype])
            elif vtype == 8:
                string()
            elif vtype == 9:
                etype, count = struct.unpack("<IQ", read(12))
                if etype in GGUF_SCALAR:
                    if count * GGUF_SCALAR[etype] > size:
                        raise ValueError("array larger than the file")
                    fh.seek(count * GGUF_SCALAR[etype], 1)
                else:
                    for _ in range(count):
                        skip(etype)
            else:
                raise ValueError(f"unknown metadata value type {vtype}")

        magic = read(4)
        if magic != b"GGUF":
            raise ValueError(f"bad magic {magic!r} (expected b'GGUF')")
        version, n_tensors, n_kv = struct.unpack("<IQQ", read(20))
        if version not in (2, 3):
            raise ValueError(f"unsupported GGUF version {version}")
        if n_tensors == 0:
            raise ValueError("the file declares no tensors")
        out: dict = {"version": version, "n_tensors": n_tensors}
        for i in range(n_kv if context else min(n_kv, 64)):
            key = string()
            (vtype,) = struct.unpack("<I", read(4))
            if key == b"general.architecture" and vtype == 8:
                out["architecture"] = string().decode("utf-8")
                if not context:
                    return out
            elif context and key.endswith(b".context_length") and vtype in (4, 5, 10, 11):
                fmt = {4: "<I", 5: "<i", 10: "<Q", 11: "<q"}[vtype]
                (out["context_length"],) = struct.unpack(fmt, read(GGUF_SCALAR[vtype]))
            else:
                if i >= 64 and "architecture" not in out:
                    break
                skip(vtype)
            if "architecture" in out and "context_length" in out:
                return out
    if "architecture" in out:
        return out | {"context_length": out.get("context_length")}
    raise ValueError("no general.architecture among the first metadata keys")


def check_gguf(path) -> str:
    """Validate a GGUF file's header; returns its ``general.architecture``. :class:`CorruptFileError`
    (path and reason) for a malformed file, :class:`UnsupportedArchitectureError` for an unknown one.
    Damage inside the tensor data is caught when transformers dequantises the file."""
    path = Path(path)
    try:
        arch = gguf_header(path)["architecture"]
    except Exception as exc:
        raise CorruptFileError(f"{path}: malformed GGUF file ({exc})", argument="path") from exc
    if arch not in GGUF_ARCHITECTURES:
        raise UnsupportedArchitectureError(
            f"{path}: GGUF architecture {arch!r} is not supported; supported: {', '.join(GGUF_ARCHITECTURES)}",
            argument="path",
        )
    return arch

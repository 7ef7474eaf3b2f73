r"""The names the paper checks accept, in the standard library alone (no torch, transformers or SymPy is
imported), so that ``connwalk paper-checks`` / ``analyze`` refuse a misspelt claim or model at once. The
heavy modules import their lists from here (one source of truth): :mod:`paper_checks.main_job`
(:data:`CLAIMS`, :func:`check_claims`, :func:`check_model_name`), :mod:`paper_checks.laplacian_check`
(:data:`LAP_CLAIM`, :data:`LAP_ALIASES`), :mod:`paper_checks.synthetic` (:class:`SyntheticConfig`,
:data:`SYNTHETIC_CONFIGS`, :func:`is_synthetic`); the registered checkpoints and ``tiny:`` families
come from :mod:`numerics.models.names`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from numerics.errors import ConnwalkError, ModelError, ModelNotInstalledError
from numerics.models.names import TINY_FAMILIES, available, known

__all__ = [
    "LAP_CLAIM",
    "LAP_ALIASES",
    "CLAIMS",
    "UnknownClaimError",
    "check_claims",
    "SyntheticConfig",
    "SYNTHETIC_CONFIGS",
    "is_synthetic",
    "check_model_name",
]

#: the claim id of the Laplacian check (:mod:`paper_checks.laplacian_check`) and what ``--claims`` also
#: accepts for it
LAP_CLAIM = "LAP"
LAP_ALIASES = ("LAPLACIAN",)

#: every claim the main job checks, in report order
CLAIMS = ("E1", "E2", "E3", "E4", "E5", "E6", LAP_CLAIM)


class UnknownClaimError(ConnwalkError, ValueError):
    """A claim id that is not one of E1..E6."""


def check_claims(claims) -> list[str]:
    out = []
    for c in claims:
        cu = str(c).strip().upper()
        cu = LAP_CLAIM if cu in LAP_ALIASES else cu
        if cu not in CLAIMS:
            raise UnknownClaimError(f"unknown claim {c!r}; known claims: {', '.join(CLAIMS)}", argument="--claims")
        if cu not in out:
            out.append(cu)
    if not out:
        raise UnknownClaimError("no claims requested", argument="--claims")
    return out


@dataclass
class SyntheticConfig:
    """A constructed model of :mod:`paper_checks.synthetic` (see its docstring for the knobs)."""

    kind: str = "encoder"
    d: int = 32
    n_heads: int = 4
    n_layers: int = 6
    vocab: int = 97
    max_length: int = 256
    isometric: bool = True
    gain: float = 0.7
    content_decay: float | None = 0.5
    pos_strength: float = 1.0
    pos_width: float = 3.0
    trained: bool = True


#: ``synthetic:<key>`` → its config
SYNTHETIC_CONFIGS = {
    "enc": SyntheticConfig(kind="encoder"),
    "dec": SyntheticConfig(kind="decoder"),
    "enc-large": SyntheticConfig(kind="encoder", d=64, n_heads=8, n_layers=9, content_decay=0.3),
    "dec-large": SyntheticConfig(kind="decoder", d=64, n_heads=8, n_layers=9, content_decay=0.3),
    "frozen": SyntheticConfig(kind="encoder", content_decay=None),
}


def is_synthetic(name: str) -> bool:
    return name.removeprefix("random:").startswith("synthetic:")


def check_model_name(name) -> str:
    """Refuse a ``--models`` entry before any work (no loading): unknown names, missing files,
    checkpoints whose package is not installed, and ``random:*`` (the null models are added
    automatically for every model)."""
    if not isinstance(name, str) or not name.strip():
        raise ModelError(f"expected a model name, got {name!r}", argument="--models")
    if name.startswith("random:"):
        raise ModelError(
            f"{name!r}: null models random:<name> are run automatically for every model; pass the "
            f"trained model ({name[7:]!r})",
            argument="--models",
        )
    if is_synthetic(name):
        key = name.removeprefix("synthetic:")
        if key not in SYNTHETIC_CONFIGS:
            raise ModelError(
                f"unknown synthetic model {name!r}; known: {', '.join('synthetic:' + k for k in SYNTHETIC_CONFIGS)}",
                argument="--models",
            )
        return name
    if name.startswith("tiny:"):
        if name[5:] not in TINY_FAMILIES:
            raise ModelError(
                f"unknown tiny family {name!r}; known: {', '.join('tiny:' + f for f in TINY_FAMILIES)}",
                argument="--models",
            )
        return name
    names = known()
    if name in names:
        if name not in available():
            raise ModelNotInstalledError(
                f"{name!r} is not installed; install it with: {names[name]}", argument="--models"
            )
        return name
    p = Path(os.path.expanduser(name))
    if p.suffix.lower() == ".gguf":
        if not p.is_file():
            raise ModelError(f"{str(p)!r}: no such GGUF file", argument="--models")
        return name
    if p.is_dir():
        if not (p / "config.json").is_file():
            raise ModelError(f"{str(p)!r}: not a Hugging Face model directory (no config.json)", argument="--models")
        return name
    raise ModelError(
        f"unknown model {name!r}: use one of {', '.join(names)}, a local Hugging Face directory, a "
        ".gguf file or synthetic:<cfg>",
        argument="--models",
    )

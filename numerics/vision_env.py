r"""torchvision beside the locked CPU torch.

PyPI's torchvision wheel for torch 2.13.0 (the lock's 0.28.0) links its compiled operators against
torch's CUDA libraries, which the CPU wheel lacks: its ``_C`` extension does not load, and
``import torchvision`` then stops at ``register_fake("torchvision::nms")`` ("operator torchvision::nms
does not exist"), so that timm, open_clip and transformers' vision models (which import torchvision
when it is installed) do not import either.

:func:`install` (run by ``import numerics``) puts a finder first on ``sys.meta_path`` that imports
torchvision as usual and only when that import fails with this error declares the schemas of the two
operators whose fake kernels torchvision registers unconditionally (``nms``, ``qnms``, with the
signatures of torchvision's own C++ registration), then imports it again. Nothing is declared when
the compiled operators load. The declared operators have no kernel: calling them raises torch's
``NotImplementedError`` naming the operator; no attention module the kit judges calls them.

The module uses the standard library only (torch when it declares), so that ``scripts/install.sh`` can
put a copy of it beside the environment's packages (``connwalk_vision_env.py``, started by
``connwalk-torchvision.pth``): then every process of the environment imports torchvision, also a
script that imports transformers' vision models or timm without importing numerics, and without
importing the numerics package at start-up.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys

__all__ = ["install", "declared"]

_SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
)
_MISSING = "operator torchvision::nms does not exist"


def declared() -> bool:
    """Whether this process declared torchvision's operator schemas (its compiled ones did not load)."""
    return any(getattr(f, "libs", None) for f in sys.meta_path if getattr(f, "connwalk_vision_env", False))


class _Loader(importlib.abc.Loader):
    def __init__(self, real: importlib.abc.Loader, libs: list) -> None:
        self.real, self.libs = real, libs

    def create_module(self, spec):
        return self.real.create_module(spec)

    def exec_module(self, module) -> None:
        try:
            self.real.exec_module(module)
        except RuntimeError as exc:
            if _MISSING not in str(exc) or self.libs:
                raise
            for name in [n for n in sys.modules if n.startswith("torchvision.")]:
                del sys.modules[name]
            import torch

            lib = torch.library.Library("torchvision", "FRAGMENT")
            for schema in _SCHEMAS:
                lib.define(schema)
            self.libs.append(lib)  # kept alive: the schemas go with it
            self.real.exec_module(module)


class _Finder(importlib.abc.MetaPathFinder):
    connwalk_vision_env = True  # one finder per process, whichever copy of this module installed it

    def __init__(self) -> None:
        self.libs: list = []

    def find_spec(self, fullname, path, target=None):
        if fullname != "torchvision":
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _Loader(spec.loader, self.libs)
        return spec


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once per process, by this module or by its copy that
    ``scripts/install.sh`` puts beside the environment's packages; a no-op once torchvision is imported)."""
    if "torchvision" in sys.modules or any(getattr(f, "connwalk_vision_env", False) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _Finder())

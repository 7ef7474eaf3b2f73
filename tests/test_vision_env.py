"""torchvision imports beside the locked CPU torch (numerics.vision_env)."""

import subprocess
import sys
from pathlib import Path

import pytest

_PROBE = """
import sys
import numerics
import torchvision, timm
from numerics.vision_env import declared
from transformers import ViTModel
print(declared(), torchvision.extension._has_ops())
"""


def test_torchvision_timm_and_transformers_vision_import_after_numerics():
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    was_declared, has_ops = out.stdout.split()
    # schemas are declared exactly when torchvision's own compiled operators did not load
    assert (was_declared == "True") == (has_ops == "False")


def test_declared_operators_raise_rather_than_compute():
    import torch
    import torchvision  # noqa: F401

    from numerics.vision_env import declared

    if declared():
        with pytest.raises(NotImplementedError, match="torchvision::nms"):
            torch.ops.torchvision.nms(torch.zeros(1, 4), torch.zeros(1), 0.5)
    else:
        keep = torch.ops.torchvision.nms(torch.tensor([[0.0, 0, 1, 1], [0, 0, 1, 1]]), torch.tensor([1.0, 0.5]), 0.5)
        assert keep.tolist() == [0]


def test_every_process_of_the_installed_environment_imports_torchvision(tmp_path):
    # scripts/install.sh puts a copy of numerics/vision_env.py and connwalk-torchvision.pth into site-packages:
    # a script that imports transformers' models (which import torchvision when it is installed) or timm
    # without importing numerics works too, and numerics is not imported at start-up (a process may want
    # another numerics: a worktree, an older revision); run outside the repository
    probe = (
        "import sys\nassert 'numerics' not in sys.modules\nfrom transformers import BertModel, ViTModel\n"
        "import timm, connwalk_vision_env\nprint(connwalk_vision_env.__file__)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    installed = Path(out.stdout.strip()).read_text()
    assert installed == (Path(__file__).parents[1] / "numerics" / "vision_env.py").read_text(), (
        "the installed connwalk_vision_env.py is not numerics/vision_env.py: rerun scripts/install.sh"
    )


def test_one_finder_per_process_whichever_copy_installed_it():
    import importlib.util
    import sys as _sys

    from numerics import vision_env

    spec = importlib.util.spec_from_file_location("_vision_env_copy", vision_env.__file__)
    copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(copy)
    before = [f for f in _sys.meta_path if getattr(f, "connwalk_vision_env", False)]
    assert len(before) == 1
    copy.install()
    vision_env.install()
    assert [f for f in _sys.meta_path if getattr(f, "connwalk_vision_env", False)] == before

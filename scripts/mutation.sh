#!/usr/bin/env bash
# Mutation testing of the verification suite itself (not part of CI: minutes per module).
#   bash scripts/mutation.sh                    # every target of mutation/targets.toml
#   bash scripts/mutation.sh walk graphs        # some of them
#   bash scripts/mutation.sh walk --fresh       # forget earlier results of walk first
#   bash scripts/mutation.sh --report-only      # the table of the last runs
#   bash scripts/mutation.sh walk --mutants 'numerics.walk.x_kron*'   # rerun some mutants
#   bash scripts/mutation.sh walk --survivors   # rerun only the last survivors (after adding tests)
# Needs the `mutation` extra: pip install -e ".[test,mutation]".
# Prints per module killed / survived / equivalent and the score killed / (killed + survived);
# writes the surviving mutants with their diffs to mutation/survivors/<module>.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 HYPOTHESIS_PROFILE=mutation
exec "${PYTHON:-python3}" mutation/run.py "$@"

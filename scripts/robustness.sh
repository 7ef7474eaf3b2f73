#!/usr/bin/env bash
# Seeds and machines as part of the gate: reruns the suite where a verdict could depend on where it
# runs, and prints every setting so that any failure is reproducible.
#
#   bash scripts/robustness.sh                 # all passes below
#   bash scripts/robustness.sh seeds [S...]    # the Hypothesis property tests of tests/numerics and
#                                              # tests/theory (--property-only) under the `dev` profile
#                                              # with fresh Hypothesis seeds (default 1..10)
#   bash scripts/robustness.sh blas            # the whole suite (CI profile) under each OpenBLAS kernel
#                                              # the CPU supports, and torch's MKL code paths
#   bash scripts/robustness.sh threads         # the whole suite with 1 and 2 BLAS / OpenMP threads
#   bash scripts/robustness.sh theorem [K]     # `pytest --theorem T3` under the dev profile, K times (10)
#   bash scripts/robustness.sh order [S...]    # the whole suite (CI profile) in other orders: reversed,
#                                              # shuffled with each order seed S (default: 3 seeds drawn
#                                              # now from /dev/urandom, printed), and each test file alone
#                                              # (ORDER_PATHS="tests/theory tests/numerics" narrows it)
#   bash scripts/robustness.sh xdist [S]       # the whole suite (CI profile) in one process, then split
#                                              # across 2 and 3 worker processes (pytest-xdist) with every
#                                              # test shuffled (--order interleave, seed S, default drawn);
#                                              # the outcome counts must be equal; prints each wall time
#                                              # (XDIST_PATHS narrows it; XDIST_WORKERS="0 2"
#                                              # picks the worker counts, 0 = one process;
#                                              # XDIST_DIST=worksteal the scheduling)
#
# A failure prints the command that reproduces it (`--hypothesis-seed=S` and the environment);
# every failure found must become an explicit `@example` or a regression test. The exit status is
# the number of failed passes (0: every verdict was the same everywhere).
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
PROPERTY_DIRS=(tests/numerics tests/theory)
failed=0
log() { printf '\n=== %s\n' "$*"; }
run() {  # run ENV... -- pytest args
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  log "env ${envs[*]} $PY -m pytest $*"
  local out rc
  out=$(mktemp)
  env "${envs[@]}" "$PY" -m pytest -q -p no:cacheprovider "$@" >"$out" 2>&1
  rc=$?
  tail -n 25 "$out"
  rm -f "$out"
  if [ "$rc" -ne 0 ]; then
    failed=$((failed + 1))
    echo "FAILED — reproduce with: env ${envs[*]} $PY -m pytest $*"
  fi
}

# What this CPU can run: OpenBLAS kernels (numpy/scipy) — Prescott (SSE3) and Sandybridge (AVX)
# everywhere on x86-64, Haswell with AVX2, SkylakeX with AVX-512 — and torch's MKL instruction sets
# (MKL_ENABLE_INSTRUCTIONS caps them). Each list: "always" entries, then "flag:value" pairs.
supported() {
  local flags item
  flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
  for item in "$@"; do
    case "$item" in
      *:*) [[ $flags == *" ${item%%:*} "* ]] && echo "${item#*:}" ;;
      *) echo "$item" ;;
    esac
  done
}
coretypes() { supported Prescott avx:Sandybridge avx2:Haswell avx512f:SkylakeX; }
mkl_sets() { supported SSE4_2 avx2:AVX2 avx512f:AVX512; }

seeds() {
  local list=("$@")
  [ ${#list[@]} -eq 0 ] && list=(1 2 3 4 5 6 7 8 9 10)
  for s in "${list[@]}"; do
    run HYPOTHESIS_PROFILE=dev CI= -- "${PROPERTY_DIRS[@]}" --property-only -x --hypothesis-seed="$s"
  done
}
blas() {
  for c in $(coretypes); do
    run CI=true OPENBLAS_CORETYPE="$c" -- -x
  done
  for m in $(mkl_sets); do
    run CI=true MKL_ENABLE_INSTRUCTIONS="$m" MKL_CBWR=COMPATIBLE -- "${PROPERTY_DIRS[@]}" -x
  done
}
threads() {
  for t in 1 2; do
    run CI=true OMP_NUM_THREADS="$t" OPENBLAS_NUM_THREADS="$t" MKL_NUM_THREADS="$t" -- -x
  done
}
theorem() {
  local k="${1:-10}"
  for i in $(seq 1 "$k"); do
    run HYPOTHESIS_PROFILE=dev CI= -- --theorem T3 -x
  done
}

order() {
  local list=("$@") paths f
  read -r -a paths <<<"${ORDER_PATHS:-tests}"
  if [ ${#list[@]} -eq 0 ]; then
    for _ in 1 2 3; do list+=("$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')"); done
  fi
  run CI=true -- "${paths[@]}" --order reverse
  for s in "${list[@]}"; do
    run CI=true -- "${paths[@]}" --order shuffle --order-seed "$s"
  done
  while IFS= read -r f; do
    run CI=true -- "$f"
  done < <(find "${paths[@]}" -name 'test_*.py' | sort)
}

xdist() {
  local s="${1:-$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')}" paths n out t0 t1 counts first=""
  read -r -a paths <<<"${XDIST_PATHS:-tests}"
  for n in ${XDIST_WORKERS:-0 2 3}; do
    log "CI=true $PY -m pytest ${paths[*]} -n $n --order interleave --order-seed $s"
    out=$(mktemp)
    t0=$(date +%s)
    CI=true "$PY" -m pytest -q -p no:cacheprovider "${paths[@]}" -n "$n" ${XDIST_DIST:+--dist "$XDIST_DIST"} --order interleave --order-seed "$s" >"$out" 2>&1
    t1=$(date +%s)
    tail -n 3 "$out"
    counts=$(tail -n 1 "$out" | grep -oE '[0-9]+ (passed|failed|errors?|skipped|xfailed|xpassed|deselected)' | sort | tr '\n' ' ')
    echo "workers $n: ${counts:-no summary} in $((t1 - t0)) s wall"
    rm -f "$out"
    if [ -z "$first" ]; then
      first="$counts"
    elif [ "$counts" != "$first" ]; then
      failed=$((failed + 1))
      echo "FAILED — counts differ from the serial run ($first): reproduce with CI=true $PY -m pytest ${paths[*]} -n $n --order interleave --order-seed $s"
    fi
    case "$counts" in *failed*|*error*|"") failed=$((failed + 1)) ;; esac
  done
}

what="${1:-all}"
[ $# -gt 0 ] && shift
case "$what" in
  seeds) seeds "$@" ;;
  blas) blas ;;
  threads) threads ;;
  theorem) theorem "$@" ;;
  order) order "$@" ;;
  xdist) xdist "$@" ;;
  all) seeds; blas; threads; theorem; order; xdist ;;
  *) echo "usage: $0 [all|seeds [S...]|blas|threads|theorem [K]|order [S...]|xdist [S]]" >&2; exit 2 ;;
esac
log "robustness: $failed failed pass(es)"
exit "$failed"

#!/usr/bin/env bash
# The checks a session lent an NVIDIA GPU runs, in one command, in under 10 minutes.
#
# Usage, from anywhere in the repository, in the environment jext is installed in:
#
#   bench/gpu.sh              GPU half where JAX sees an NVIDIA GPU, else the CPU half
#   bench/gpu.sh --cpu        the CPU half, GPU or not
#   bench/gpu.sh --smoke      the CPU half, cuda exports only (seconds; what the tests run)
#   bench/gpu.sh --dry-run    print the steps of the chosen half without running them
#
# GPU half (no network needed: pip builds offline, against the installed jax):
#   1. build      jext-example-native's CUDA handlers (nvcc; JEXT_NATIVE_CUDA=1)
#   2. pytest     python -m pytest -m gpu (every file holding gpu tests)          } side
#   3. check      jext check 'native.*' jext.philox4x64 jext.chacha20               } by
#   4. exports    bench/gpu_exports.py (cuda, rocm, tpu modules and their calls)    } side
#   5. bench-rng  bench/bench_rng.py: every generator in each GPU form (rolled, pallas)
#                 against threefry2x32 at 2**26 and 2**28 values: bits, uniform, normal,
#                 bernoulli; GB/s against the measured memory bandwidth, compile times,
#                 per-call overhead
#   6. bench-kernels  bench/bench_native.py: native.softplus (CUDA FFI) and native.swish
#                 (Triton) against plain ffi_call / pallas_call and the XLA reference
#                 at 2**26 values; per-call overhead
# then writes the figures, every log and the summary to bench/results/gpu.md
# (JEXT_GPU_RESULTS names another file) and prints that file.
# CPU half: exports (4) and `jext check --checks lowering 'native.*'`; writes nothing.
#
# jext.threefry4x64 is left out of the check: its check alone took 448 s on an H100
# (docs/rng.md, "Limits").  Each step has a time budget, cut to what is left of the whole
# run's (JEXT_GPU_BUDGET seconds, default 570); a step that would start with under 10 s
# left is skipped.  Logs go to JEXT_GPU_LOGS (default: a new temporary folder).  The
# summary is the last thing printed; the exit status is 0 only if every step passed.

set -u -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2
export PYTHON="${PYTHON:-python}"
BUDGET="${JEXT_GPU_BUDGET:-570}"
LOGS="${JEXT_GPU_LOGS:-$(mktemp -d "${TMPDIR:-/tmp}/jext-gpu.XXXXXX")}"
RESULTS="${JEXT_GPU_RESULTS:-$ROOT/bench/results/gpu.md}"
mkdir -p "$LOGS"
# Several processes share the GPU: none may take 75% of its memory up front.
export XLA_PYTHON_CLIENT_PREALLOCATE=false

mode=auto
dry=0
for arg in "$@"; do
  case "$arg" in
    --cpu) mode=cpu ;;
    --smoke) mode=smoke ;;
    --gpu) mode=gpu ;;
    --dry-run) dry=1 ;;
    -h | --help) sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/gpu.sh: unknown argument $arg (see --help)" >&2; exit 2 ;;
  esac
done

# The GPU JAX sees, or nothing: nvidia-smi alone does not say that jaxlib has CUDA.
gpu_name() {
  command -v nvidia-smi > /dev/null 2>&1 || return 0
  nvidia-smi -L > /dev/null 2>&1 || return 0
  "$PYTHON" - << 'EOF' 2> /dev/null
import jax
try:
    devices = jax.devices("cuda")
except RuntimeError:  # no CUDA backend in this jaxlib, or no device
    devices = []
if devices:
    print(devices[0].device_kind)
EOF
}

why_cpu=""
if [ "$mode" = auto ]; then
  device="$(gpu_name)"
  if [ -n "$device" ]; then
    mode=gpu
  else
    mode=cpu
    if command -v nvidia-smi > /dev/null 2>&1; then
      why_cpu="nvidia-smi is present but JAX sees no GPU (a CPU-only jaxlib, or no device)"
    else
      why_cpu="no NVIDIA GPU here (no nvidia-smi)"
    fi
  fi
elif [ "$mode" = gpu ]; then
  device="$(gpu_name)"
else
  why_cpu="asked for with --$mode"
fi

START=$SECONDS
declare -a ORDER=()

# step NAME SECONDS COMMAND...: run COMMAND under the smaller of SECONDS and what is
# left of the budget; its log is $LOGS/NAME.log, its outcome $LOGS/NAME.status.
step() {
  local name="$1" limit="$2"
  shift 2
  ORDER+=("$name")
  if [ "$dry" = 1 ]; then
    printf '%-14s (up to %3ss) %s\n' "$name" "$limit" "$*"
    echo "dry-run 0 -" > "$LOGS/$name.status"
    return 0
  fi
  local left=$((BUDGET - (SECONDS - START)))
  if [ "$left" -lt 10 ]; then
    echo "skipped 0 out of time" > "$LOGS/$name.status"
    return 0
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local began=$SECONDS rc
  timeout --kill-after=10 "$limit" "$@" > "$LOGS/$name.log" 2>&1
  rc=$?
  local took=$((SECONDS - began)) outcome=ok
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    outcome="TIMEOUT(${limit}s)"
  elif [ "$rc" != 0 ]; then
    outcome="FAIL(rc=$rc)"
  fi
  echo "$outcome $took $(grep -v '^\s*$' "$LOGS/$name.log" | tail -n 1 | cut -c 1-110)" \
    > "$LOGS/$name.status"
}

# Steps run side by side record their names here, as a subshell cannot add to ORDER.
parallel() {
  local name
  for name in "$@"; do ORDER+=("$name"); done
}

build_cuda() {
  # Offline: the build takes setuptools and jax's FFI headers from this environment.
  if ! "$PYTHON" -c "import setuptools" 2> /dev/null; then
    echo "no setuptools in this environment (Python 3.12 venvs lack it): pip install setuptools"
    return 1
  fi
  # setup.py looks on PATH, then CUDA_HOME, CUDA_PATH, /usr/local/cuda; here also the
  # nvcc of pip's nvidia-cuda-nvcc wheel, where JAX was installed with its CUDA wheels.
  if [ -z "${NVCC:-}" ] && ! command -v nvcc > /dev/null 2>&1 && [ -z "${CUDA_HOME:-}" ] \
    && [ ! -x /usr/local/cuda/bin/nvcc ]; then
    NVCC="$("$PYTHON" -c "import nvidia.cuda_nvcc as m, os; print(os.path.join(list(m.__path__)[0], 'bin', 'nvcc'))" 2> /dev/null)"
    [ -x "${NVCC:-}" ] && export NVCC || unset NVCC
  fi
  JEXT_NATIVE_CUDA=1 "$PYTHON" -m pip install -q --no-index --no-build-isolation --no-deps \
    --config-settings editable_mode=compat -e plugins/jext-example-native || return 1
  "$PYTHON" -c "from jext_example_native import cuda_library as c; p = c(); print('built', p and p.name); raise SystemExit(p is None)"
}

# timeout runs programs, not shell functions: the build step runs in a child bash.
export -f build_cuda

GPU_TESTS=(tests/test_gpu.py plugins/jext-scipy-special/tests/test_special_on_gpu.py
  plugins/jext-example-native/tests/test_native.py plugins/jext-example-native/tests/test_layer_norm.py)

if [ "$mode" = gpu ]; then
  echo "bench/gpu.sh: GPU half on ${device:-an unknown GPU}; logs in $LOGS"
  step build 120 bash -c build_cuda
  if [ "$dry" = 1 ]; then
    step pytest 210 "$PYTHON" -m pytest -m gpu -q -p no:cacheprovider -p no:benchmark "${GPU_TESTS[@]}"
    step check 210 "$PYTHON" -m jext check -q 'native.*' jext.philox4x64 jext.chacha20
    step exports 120 "$PYTHON" bench/gpu_exports.py
  else
    step pytest 210 "$PYTHON" -m pytest -m gpu -q -p no:cacheprovider -p no:benchmark "${GPU_TESTS[@]}" &
    step check 210 "$PYTHON" -m jext check -q 'native.*' jext.philox4x64 jext.chacha20 &
    step exports 120 "$PYTHON" bench/gpu_exports.py &
    wait
    parallel pytest check exports
  fi
  # The benchmarks alone on the machine: their timings are the point.
  step bench-rng 180 "$PYTHON" bench/bench_rng.py
  step bench-kernels 60 "$PYTHON" bench/bench_native.py
else
  echo "bench/gpu.sh: CPU half only: ${why_cpu}; logs in $LOGS"
  if [ "$mode" = smoke ]; then
    step exports 60 "$PYTHON" bench/gpu_exports.py --platforms cuda
  else
    step exports 120 "$PYTHON" bench/gpu_exports.py
    step lowering 180 "$PYTHON" -m jext check -q --checks lowering 'native.*'
  fi
fi

summary() {
  echo "summary ($mode half, $((SECONDS - START)) s of ${BUDGET} s):"
  local name outcome took last
  for name in "${ORDER[@]}"; do
    read -r outcome took last < "$LOGS/$name.status"
    printf '  %-14s %-16s %4ss  %s\n' "$name" "$outcome" "$took" "$last"
  done
}

# The GPU half's record: the machine, the summary, the benchmarks' output whole and the
# end of every other log.
write_results() {
  {
    echo "# A GPU session: \`bench/gpu.sh\`"
    echo
    echo "Written by \`bench/gpu.sh\` on ${device:-an unknown GPU}, $(date -u '+%Y-%m-%d %H:%M UTC');"
    echo "$("$PYTHON" -c 'import sys, jax; print(f"Python {sys.version.split()[0]}, jax {jax.__version__}")' 2> /dev/null)."
    echo "$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2> /dev/null | head -n 1)"
    echo
    echo '```text'
    summary
    echo '```'
    local name
    for name in bench-rng bench-kernels; do
      echo
      echo "## $name"
      echo
      echo '```text'
      cat "$LOGS/$name.log" 2> /dev/null
      echo '```'
    done
    for name in build pytest check exports; do
      echo
      echo "## $name (last 40 lines)"
      echo
      echo '```text'
      tail -n 40 "$LOGS/$name.log" 2> /dev/null
      echo '```'
    done
  } > "$RESULTS"
}

if [ "$mode" = gpu ]; then
  if [ "$dry" = 1 ]; then
    echo "results: would write $RESULTS"
  else
    write_results
    echo
    cat "$RESULTS"
    echo "results: written to $RESULTS"
  fi
fi

echo
summary
failed=0
for name in "${ORDER[@]}"; do
  read -r outcome _ < "$LOGS/$name.status"
  case "$outcome" in ok | dry-run) ;; *) failed=1 ;; esac
done
if [ "$mode" != gpu ]; then
  echo "  (CPU half: nothing ran on a GPU; ${why_cpu})"
fi
exit "$failed"

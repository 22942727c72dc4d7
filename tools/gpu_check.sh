#!/usr/bin/env bash
# The prepared GPU check (issue 38): one command for the device machine, which
# has python3 with torch, triton and pytest but none of our own dependencies
# and no package registry.
#
# Here, once (`make gpu-carry`): the pure-Python packages the project needs
# beyond the device image (xdsl and its two dependencies) as
# wheels in .whl/, and the third-party model packages the benchmark uses
# (torchfm, an sdist) copied from .venv into .gpu-site/; both folders are
# ignored by git, so name them in the device call's `carry`.
#
# There, from the repository root (the device tool's `run`):
#
#     bash tools/gpu_check.sh [seconds for bench_gpu, default 300]
#
# installs the wheels into /tmp/site, puts the repository, /tmp/site and
# .gpu-site on PYTHONPATH, then runs the GPU tests (`pytest -m gpu`),
# `benchmarks/bench_gpu.py --profile` within the budget, writing each log and
# the JSON to $OUT (the device tool's folder that comes back; ./build/gpu
# where it is unset). It ends with the tests' exit status, so a failing test
# shows in the tool's rc; the benchmark's figures are in its log either way.
set -uo pipefail

budget="${1:-300}"
out="${OUT:-build/gpu}"
mkdir -p "$out"
root="$(pwd)"
site=/tmp/site

if compgen -G ".whl/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .whl/*.whl \
        || { echo "gpu_check: installing the carried wheels failed"; exit 2; }
fi
export PYTHONPATH="$root:$site:$root/.gpu-site${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
# a new path for every run: the kernels compile afresh, as a user's first run does
export TRITON_CACHE_DIR="${TRITON_CACHE_DIR:-/tmp/triton-cache}"

python3 - <<'EOF' 2>&1 | tee "$out/environment.txt"
import platform, torch, triton
print(f"python {platform.python_version()}, torch {torch.__version__}, triton {triton.__version__}")
print(f"cuda: {torch.cuda.is_available()}", torch.cuda.get_device_name() if torch.cuda.is_available() else "")
EOF

python3 -m pytest -q -p no:cacheprovider -m gpu tests 2>&1 | tee "$out/gpu-tests.log"
tests=${PIPESTATUS[0]}

timeout "$((budget + 60))" python3 benchmarks/bench_gpu.py --profile --budget-s "$budget" --json "$out/gpu.json" 2>&1 \
    | tee "$out/bench-gpu.log"
bench=${PIPESTATUS[0]}

echo "gpu_check: tests exit status $tests; bench_gpu exit status $bench"
exit "$tests"

#!/usr/bin/env bash
# vramtrace against PyTorch's own figures, as a pass/fail table
# (scripts/gpu_check.py says what is checked).
#
#   scripts/gpu-check.sh [BUILD_DIR]
#
# With an NVIDIA GPU (nvidia-smi) and a CUDA PyTorch (python3 -c 'import
# torch; torch.cuda.is_available()'): real workloads on the real GPU (a
# training step, a forced OOM with and without expandable segments,
# cuBLAS's workspace, two processes on one GPU).
# Otherwise the same checks on the simulated GPU with the stand-in torch
# (tests/pytorch/standin), so CI keeps the script working. Record a real
# GPU's table in docs/internals/GPU_VALIDATION.md (GPU, driver, CUDA, torch, date).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$here/build}"
py="${PYTHON:-python3}"
if [ ! -x "$build/analyzer/vramtrace" ]; then
    echo "gpu-check: no $build/analyzer/vramtrace: build first (meson setup build && meson compile -C build)" >&2
    exit 2
fi
if [ "${VRAMTRACE_GPU_CHECK_SIMULATED:-0}" != 1 ] && command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 &&
   "$py" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    "$py" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)'
    exec "$py" "$here/scripts/gpu_check.py" --build "$build" --python "$py"
fi
echo "gpu-check: no NVIDIA GPU with a CUDA PyTorch here: simulated GPU, stand-in torch"
exec "$py" "$here/scripts/gpu_check.py" --build "$build" --python "$py" --simulated

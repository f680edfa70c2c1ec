#!/usr/bin/env bash
# Installs what a fresh Debian/Ubuntu machine lacks to build and test
# vramtrace. Safe to run again: it installs only what is missing.
set -euo pipefail

packages=(gcc clang libclang-rt-dev pkg-config meson ninja-build python3
          python3-jsonschema libunwind-dev libzstd-dev libcmocka-dev libdw-dev libjansson-dev
          libncurses-dev tmux chromium
          # the wheel and the tarball (docs/user/INSTALL.md, tests/install): meson-python,
          # a venv to install into, patchelf for the libraries they carry, and
          # libbz2-dev, whose libbz2.a a static libdw needs (libdw-dev does not
          # pull it in)
          python3-mesonpy python3-venv python3-pip patchelf libbz2-dev)
# The HTML report's chart libraries and its browser test come from npm
# (package.json, pinned by package-lock.json): node and npm are needed,
# Debian's when the machine has none.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "vramtrace: installing ${missing[*]}"
    $sudo apt-get update -qq
    updated=1
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# uPlot and d3-flame-graph (embedded into `vramtrace report --html` at build
# time) and playwright-core (the browser test) into node_modules/, exactly
# as package-lock.json pins them; again only when the lock file changed
# (node_modules/.vramtrace-lock remembers the one installed).
root="$(cd "$(dirname "$0")/.." && pwd)"
lock_sum=$(sha256sum "$root/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$root/node_modules/.vramtrace-lock" 2>/dev/null)" != "$lock_sum" ]; then
    echo "vramtrace: installing the HTML report's npm packages (npm ci)"
    (cd "$root" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$lock_sum" > "$root/node_modules/.vramtrace-lock"
fi

# Debian's CPU-only PyTorch, for the torch suite's real_torch test (a real
# torch importing and computing identically under `vramtrace run`): 168
# packages, about 70 s to install on a Debian 12 machine (measured). Not
# required: where it is missing or cannot be installed the test skips.
if ! dpkg-query -W -f='${Status}' python3-torch 2>/dev/null | grep -q 'install ok installed' &&
   [ "${VRAMTRACE_NO_TORCH:-0}" != 1 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "vramtrace: installing python3-torch (optional: tests/pytorch real_torch)"
    [ -n "${updated:-}" ] || $sudo apt-get update -qq || true
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-torch ||
        echo "vramtrace: python3-torch not installed; the real_torch test will skip" >&2
fi

# debootstrap, for scripts/real-torch.sh: a Debian 13 root with its
# python3-torch 2.6 (Debian 12 has 1.13). Not required: without it that
# suite skips.
if ! command -v debootstrap >/dev/null 2>&1 && [ "${VRAMTRACE_NO_TORCH:-0}" != 1 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "vramtrace: installing debootstrap (optional: scripts/real-torch.sh)"
    [ -n "${updated:-}" ] || $sudo apt-get update -qq || true
    updated=1
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends debootstrap ||
        echo "vramtrace: debootstrap not installed; the real-torch suite will skip" >&2
fi

cuda_include="${CUDA_INCLUDE:-/usr/local/cuda/include}"
if [ ! -f "$cuda_include/cuda.h" ]; then
    echo "vramtrace: CUDA driver API headers not found in $cuda_include." >&2
    echo "  Install the CUDA toolkit (no driver or GPU is needed), or set CUDA_INCLUDE." >&2
    exit 1
fi

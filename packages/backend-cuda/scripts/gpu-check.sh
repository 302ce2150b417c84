#!/usr/bin/env bash
# scripts/gpu-check.sh — the one command for a GPU machine (`pnpm --filter @kiln/backend-cuda gpu-check`,
# or `bash scripts/gpu-check.sh` where there is no Node/pnpm): finds node, rebuilds the CUDA addon
# for this GPU with nvcc, finds cuBLAS, then runs scripts/gpu-check.mjs (probe, full kit, matmul vs
# cuBLAS, train step vs PyTorch, one report). Runs from the kiln workspace, or from a bundle made
# by `pnpm --filter @kiln/backend-cuda gpu-check:pack` (build/gpu-check/: node.xz, dist folders,
# runtime node_modules, addon headers and sources — no pnpm or network needed).
#
#   own options (before the others):  --node-xz FILE   a carried `xz -6` copy of the node binary
#                                       --no-build      use the carried kiln_cuda.node as it is
#                                       --arch LIST     CUDA architectures to build (default: this GPU's, 90a on Hopper)
#                                       --bench FILE    run that bench script (relative to the package or bundle,
#                                                       e.g. bench/f32-kernels.mjs) instead of gpu-check.mjs
#   every other option goes to gpu-check.mjs, or to the bench (--help lists gpu-check.mjs's).
# Environment: KILN_NODE (node binary), KILN_NODE_XZ, KILN_CUBLAS_PATH (else the nvidia-cublas wheel through python3).
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$script_dir/.." && pwd)"   # packages/backend-cuda, or the bundle directory
say() { echo "[gpu-check] $*"; }

node_xz="${KILN_NODE_XZ:-}"
build=1
arch=""
bench=""
passthrough=()
while [ $# -gt 0 ]; do
  case "$1" in
    --node-xz) node_xz="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    --arch) arch="$2"; shift 2 ;;
    --bench) bench="$2"; shift 2 ;;
    *) passthrough+=("$1"); shift ;;
  esac
done

# ---- layout: bundle (node_modules next to scripts/) or workspace ----
if [ -f "$root/node_modules/@kiln/backend-cuda/package.json" ] && [ -d "$root/headers" ]; then
  mode=bundle
  package="$root/node_modules/@kiln/backend-cuda"
  [ -z "$node_xz" ] && [ -f "$root/node.xz" ] && node_xz="$root/node.xz"
else
  mode=workspace
  package="$root"
fi
say "running from the $mode ($root)"

# ---- node ----
node_bin="${KILN_NODE:-}"
if [ -z "$node_bin" ] && command -v node >/dev/null 2>&1; then node_bin="$(command -v node)"; fi
if [ -z "$node_bin" ]; then
  if [ -z "$node_xz" ] || [ ! -f "$node_xz" ]; then
    say "no node on PATH and no carried binary: pass --node-xz FILE (an xz copy of node ≥ 20.10) or set KILN_NODE"
    exit 2
  fi
  node_dir="$(mktemp -d)"
  trap 'rm -rf "$node_dir"' EXIT
  xz -dc "$node_xz" > "$node_dir/node"
  chmod +x "$node_dir/node"
  node_bin="$node_dir/node"
fi
say "node $("$node_bin" --version) ($node_bin)"

# ---- build for this GPU ----
if [ "$build" = 1 ] && command -v nvcc >/dev/null 2>&1 && command -v cmake >/dev/null 2>&1; then
  if [ -z "$arch" ] && command -v nvidia-smi >/dev/null 2>&1; then
    capability="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' .')"
    case "$capability" in
      90) arch="90a" ;;   # Hopper: native sm_90a code (architecture-specific features available)
      "") ;;
      *) arch="$capability" ;;
    esac
  fi
  arch="${arch:-80-real;86-real;89-real;90a-real;90-virtual}"
  say "building kiln_cuda.node with $(command -v nvcc) for $arch"
  if [ "$mode" = workspace ]; then
    KILN_CUDA_BUILD=cuda KILN_CUDA_ARCHITECTURES="$arch" "$node_bin" "$root/scripts/build-native.mjs"
  else
    headers="$root/headers"
    generator=(-G "Unix Makefiles")
    command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
    build_dir="$package/build/cuda-gpu-check"
    cmake -S "$package" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" \
      -DKILN_CUDA_ARCHITECTURES="$arch" "-DCMAKE_JS_INC=$headers/node-api-headers;$headers/node-addon-api" \
      -DCMAKE_LIBRARY_OUTPUT_DIRECTORY="$package/build/cuda/Release" > "$build_dir.log" 2>&1 || { cat "$build_dir.log"; say "cmake configure failed"; exit 1; }
    cmake --build "$build_dir" --parallel "$(nproc 2>/dev/null || echo 4)" || { say "the CUDA build failed; rerun with --no-build to use the carried addon"; exit 1; }
  fi
elif [ "$build" = 1 ]; then
  say "not building: nvcc or cmake is missing here; using the carried kiln_cuda.node"
fi

# ---- cuBLAS ----
if [ -z "${KILN_CUBLAS_PATH:-}" ] && command -v python3 >/dev/null 2>&1; then
  wheel="$(python3 -c 'import os, nvidia.cublas as m; p = (list(getattr(m, "__path__", [])) or [os.path.dirname(m.__file__)])[0]; print(os.path.join(p, "lib") if os.path.isdir(os.path.join(p, "lib")) else p)' 2>/dev/null || true)"
  if [ -n "$wheel" ]; then
    export KILN_CUBLAS_PATH="$wheel"
    say "cuBLAS from the nvidia-cublas wheel: $KILN_CUBLAS_PATH"
  fi
fi

# Not exec: the EXIT trap removes an unpacked node binary afterwards.
status=0
"$node_bin" "$root/${bench:-scripts/gpu-check.mjs}" ${passthrough[@]+"${passthrough[@]}"} || status=$?
exit "$status"

#!/usr/bin/env bash
# scripts/gpu-check-staged.sh — gpu-check in stages, each its own process under its own time limit,
# for a lease where one hung kernel must not cost every other figure: the kit, attention, matmul,
# gpt2s, graph + reproducibility, compute-sanitizer, Nsight Compute, the rest, then attention again
# on the FlashAttention-2 kernels (the Ampere/Ada path, timed on this GPU) and the matmul part again
# on 128×128 wgmma tiles (KILN_CUDA_WGMMA_COLUMNS=128: the per-shape widths against them). Two bench
# stages time variants of one kernel against each other: f32-kernels (bench/f32-kernels.mjs, the f32
# SIMT kernels, after matmul) and wgmma-widths (bench/wgmma-widths.mjs, last). A kit stage
# that runs out of time turns kiln's sm_90a kernels off (KILN_CUDA_HOPPER_KERNELS=0) for the
# stages after it. Each stage writes <out>/<stage>.json and <stage>.log; <out>/summary.txt
# collects every stage's exit status and verdict lines as they finish.
#
#   bash scripts/gpu-check-staged.sh [--out DIR] [--deadline SECONDS] [--only STAGES] [gpu-check.sh options…]
#   (defaults: --out gpu-check-staged, --deadline 480: a stage never starts with under 20 s left;
#   --only kit,matmul,…: just those stages, in the usual order — a second, shorter call of a lease)
set -uo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out=gpu-check-staged
deadline=480
only=""
passthrough=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --deadline) deadline="$2"; shift 2 ;;
    --only) only=",$2,"; shift 2 ;;
    *) passthrough+=("$1"); shift ;;
  esac
done
stages=kit,attention,matmul,f32-kernels,gpt2s,graph,sanitizer,ncu,rest,attention-flash2,matmul-128,wgmma-widths
for stage in ${only//,/ }; do
  if [[ ",$stages," != *",$stage,"* ]]; then
    echo "gpu-check-staged: --only: unknown stage '$stage' (the stages: $stages)" >&2
    exit 2
  fi
done
mkdir -p "$out"
started=$(date +%s)
elapsed() { echo $(( $(date +%s) - started )); }
say() { echo "[gpu-check-staged $(elapsed)s] $*" | tee -a "$out/summary.txt"; }

all=conformance,matmul,kernels,attention,hf-fixtures,sanitizer,ncu,train,gpt2s,graph,determinism,resume
# --skip for every part but $1 (pytorch and compile are never skipped: gpt2s and train use them).
skip_all_but() {
  local keep=",$1," skip=""
  for part in ${all//,/ }; do [[ $keep == *",$part,"* ]] || skip="$skip,$part"; done
  echo "${skip#,}"
}

# stage name, its most seconds, then the gpu-check.sh options it runs with
stage() {
  local name=$1 most=$2
  shift 2
  if [ -n "$only" ] && [[ $only != *",$name,"* ]]; then return 0; fi
  local left=$(( deadline - $(elapsed) - 5 ))
  if [ "$left" -lt 20 ]; then say "$name: not run (the deadline is near)"; return 0; fi
  [ "$most" -gt "$left" ] && most=$left
  say "$name: start (limit ${most} s)${KILN_CUDA_HOPPER_KERNELS:+ with KILN_CUDA_HOPPER_KERNELS=$KILN_CUDA_HOPPER_KERNELS}${KILN_CUDA_WGMMA_COLUMNS:+ with KILN_CUDA_WGMMA_COLUMNS=$KILN_CUDA_WGMMA_COLUMNS}"
  timeout -s KILL "$most" bash "$script_dir/gpu-check.sh" --json "$out/$name.json" "$@" \
    ${passthrough[@]+"${passthrough[@]}"} > "$out/$name.log" 2>&1
  local status=$?
  say "$name: exit $status$([ $status -eq 137 ] && echo ' (stopped at its time limit)')"
  grep -E '^conformance |DISAGREES|FAIL|^  [✓✗] |^sanitizer |^ncu: |skipped: ' "$out/$name.log" | head -40 >> "$out/summary.txt"
  # The width comparison (matmul-128 against the matmul stage) in full.
  sed -n '/^matmul against /,/^$/p' "$out/$name.log" >> "$out/summary.txt"
  # A bench's table and verdict lines in full.
  sed -n '/ interleaved rounds; /,$p' "$out/$name.log" >> "$out/summary.txt"
  return $status
}

# stage name, its most seconds, the gpu-check parts it runs, then gpu-check options of its own
run_stage() {
  local name=$1 most=$2 parts=$3
  shift 3
  stage "$name" "$most" --skip "$(skip_all_but "$parts")" "$@"
}

# stage name, its most seconds, a bench script (bench/…, run by gpu-check.sh --bench), then its options
run_bench_stage() {
  local name=$1 most=$2 bench=$3
  shift 3
  stage "$name" "$most" --bench "$bench" "$@"
}

run_stage kit 110 conformance
if [ $? -eq 137 ]; then
  say "the kit ran out of time: KILN_CUDA_HOPPER_KERNELS=0 for the stages after it"
  export KILN_CUDA_HOPPER_KERNELS=0
fi
run_stage attention 80 attention
run_stage matmul 110 matmul,kernels
run_bench_stage f32-kernels 90 bench/f32-kernels.mjs --rounds 5 --milliseconds 15
run_stage gpt2s 180 gpt2s
run_stage graph 110 graph,determinism,resume
run_stage sanitizer 70 sanitizer
run_stage ncu 60 ncu
run_stage rest 70 hf-fixtures,train
# Last, where time is left: FlashAttention-2 (attention_forward.cu / attention_backward.cu, the
# Ampere/Ada kernels) at the same shapes on this GPU, its own process with the sm_90a kernels off.
if [ "${KILN_CUDA_HOPPER_KERNELS:-}" != 0 ]; then
  (export KILN_CUDA_HOPPER_KERNELS=0; run_stage attention-flash2 70 attention)
  # The wgmma matmul on 128×128 tiles only: against the matmul stage's figures, what the 128×192 and
  # 128×256 tiles the shapes chose there gain (matmul_wgmma.cuh block_columns' estimates).
  (export KILN_CUDA_WGMMA_COLUMNS=128; run_stage matmul-128 90 matmul --matmul-baseline "$out/matmul.json")
fi
run_bench_stage wgmma-widths 60 bench/wgmma-widths.mjs --rounds 5 --milliseconds 15
say "done: $out/summary.txt"

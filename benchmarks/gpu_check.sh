#!/usr/bin/env bash
# Chapter 17's checks on one GPU, in under 8 minutes: the chapter's cells compiled on CUDA, its
# `#| gpu` cells included (CUDA graphs against eager; the engine against transformers in float32
# and bfloat16), then W1 at Qwen3-0.6B's shape in bfloat16 (256 requests) through the engine three
# ways and through transformers' static batching, printed as one table (and written to
# OUTPUT_DIR/gpu_w1.md).
# The chapters' own benchmarks on the GPU, at small sizes, are a separate run:
# `python benchmarks/gpu_chapters.py`.
#   bash benchmarks/gpu_check.sh [OUTPUT_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-.}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 -c "import torch, triton; assert torch.cuda.is_available(), 'no CUDA GPU here'" || exit 1
start=$SECONDS
echo "== chapter 17 on the GPU: default and #| gpu cells"
timeout 300 nbdev_test --flags gpu --path nbs/17_triton_attention.ipynb 2>&1 | tail -30
cells=${PIPESTATUS[0]}
echo "== W1 at Qwen3-0.6B's shape, bfloat16, 256 requests"
timeout 330 python3 benchmarks/gpu_w1.py --requests 256 --out "$out/gpu_w1.md"
w1=$?
echo "== chapter 17 cells: exit $cells; W1: exit $w1; $((SECONDS - start)) s in all"
[ "$cells" -eq 0 ] && [ "$w1" -eq 0 ]

#!/usr/bin/env bash
# Chapters 17 and 17a's checks on one GPU, in under 8 minutes: the chapters' cells compiled on CUDA,
# their `#| gpu` cells included (CUDA graphs against eager; the engine against transformers in float32
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
echo "== chapters 17 and 17a on the GPU: default and #| gpu cells"
cells=0
for nb in 17_triton_attention 17a_gpu_engine; do
  timeout 150 nbdev_test --flags gpu --path nbs/$nb.ipynb 2>&1 | tail -30
  [ "${PIPESTATUS[0]}" -eq 0 ] || cells=1
done
echo "== W1 at Qwen3-0.6B's shape, bfloat16, 256 requests"
timeout 330 python3 benchmarks/gpu_w1.py --requests 256 --out "$out/gpu_w1.md"
w1=$?
echo "== chapter 17/17a cells: exit $cells; W1: exit $w1; $((SECONDS - start)) s in all"
[ "$cells" -eq 0 ] && [ "$w1" -eq 0 ]

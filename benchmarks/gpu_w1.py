"""W1 on a GPU through the engine three ways — Triton + CUDA graphs, Triton eager, the reference
attention — and through transformers' static batching: one table of output tokens per second
(chapter 17a's `w1_systems`; the default model is a random checkpoint of Qwen3-0.6B's shape).

    python benchmarks/gpu_w1.py --requests 256 --out gpu_w1.md
    python benchmarks/gpu_w1.py --model nanollmserve-tiny-qwen3 --requests 2 --lengths 8 16 \
        --device cpu --dtype float32     # a dry run of the plumbing, without a GPU
"""
import argparse
from pathlib import Path


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--model', default=None, help="default: Qwen3-0.6B's shape, random weights")
    p.add_argument('--requests', type=int, default=256)
    p.add_argument('--lengths', type=int, nargs=2, default=(100, 512), metavar=('LO', 'HI'))
    p.add_argument('--hf-batch-size', type=int, default=64)
    p.add_argument('--device', default='cuda')
    p.add_argument('--dtype', default='bfloat16')
    p.add_argument('--out', default=None, help='also write the table (Markdown) here')
    args = p.parse_args()
    from transformers.utils import logging
    logging.disable_progress_bar()
    from nanollmserve.default_model import qwen3_06b_checkpoint
    from nanollmserve.lab.measure import w1_systems
    model = args.model or str(qwen3_06b_checkpoint())
    rows = w1_systems(model, args.requests, tuple(args.lengths), args.hf_batch_size, args.device,
                      args.dtype)
    name = 'Qwen3-0.6B shape' if args.model is None else args.model
    lines = [f"W1 ({args.requests} requests, lengths {args.lengths[0]}-{args.lengths[1]}), {name}, "
             f"{args.dtype} on {args.device}", '',
             '| system | output tok/s | vs transformers |', '|---|---:|---:|']
    lines += [f"| {r['system']} | {r['output_tok_s']:,.1f} | {r['vs_transformers']:.2f}x |"
              for r in rows]
    table = '\n'.join(lines)
    print(table)
    if args.out: Path(args.out).write_text(table + '\n')


if __name__ == '__main__':
    main()

#!/usr/bin/env python3
"""TPOT and TTFT of the naive loop against the KV-cache loop (chapter 3), at several prompt lengths.

    python benchmarks/generate.py [--model PATH_OR_ID] [--lengths 16 64 256 1024] [--max-tokens 16]

Both loops run in the same process on the same model and prompts; the table prints the naive/KV ratio.
"""
import argparse

import torch

from nanollmserve.generate import TextGenerator, time_generation


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--model', default=None, help='checkpoint directory or Hub id (default: the packaged demo model)')
    ap.add_argument('--lengths', type=int, nargs='+', default=[16, 64, 256, 1024])
    ap.add_argument('--max-tokens', type=int, default=16)
    ap.add_argument('--repeats', type=int, default=2)
    ap.add_argument('--device', default='cpu')
    ap.add_argument('--dtype', default='auto')
    ap.add_argument('--threads', type=int, default=None, help='torch CPU threads (default: torch decides)')
    args = ap.parse_args()
    if args.threads: torch.set_num_threads(args.threads)
    gen = TextGenerator.from_pretrained(args.model, dtype=args.dtype, device=args.device)
    rows = time_generation(gen, args.lengths, max_tokens=args.max_tokens, repeats=args.repeats)
    by = {(r['prompt_len'], r['loop']): r for r in rows}
    print(f"model: {args.model or 'nanollmserve-demo (the packaged default)'}  device: {args.device}  "
          f"max_tokens: {args.max_tokens}  best of {args.repeats}")
    print(f"{'prompt':>7} {'naive TPOT ms':>14} {'kv TPOT ms':>11} {'TPOT ratio':>11} {'naive TTFT ms':>14} {'kv TTFT ms':>11}")
    for n in args.lengths:
        nv, kv = by[(n, 'naive')], by[(n, 'kv-cache')]
        print(f"{n:>7} {nv['tpot'] * 1e3:>14.2f} {kv['tpot'] * 1e3:>11.2f} {nv['tpot'] / kv['tpot']:>10.1f}x "
              f"{nv['ttft'] * 1e3:>14.2f} {kv['ttft'] * 1e3:>11.2f}")


if __name__ == '__main__':
    main()

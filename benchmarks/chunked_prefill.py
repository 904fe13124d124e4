#!/usr/bin/env python3
"""Chunked prefill on vs off, across token budgets: long prompts arriving while short chats decode.

    python benchmarks/chunked_prefill.py [--settings off,256,512,1024,2048,512/128,2048/256] [--json out.json]

A thin command line over `nanollmserve.chunked_prefill.compare_chunking` (chapter 8 shows and runs it).
Settings: 'off', a budget B (max_num_batched_tokens), or B/T with a per-prompt cap T.
"""
import argparse
import json
from pathlib import Path

import numpy as np
import torch

from nanollmserve.lab.measure import compare_chunking


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--model', default=None, help='checkpoint directory or Hub id (default: the embedded model)')
    ap.add_argument('--device', default='cpu')
    ap.add_argument('--dtype', default='auto')
    ap.add_argument('--settings', default='off,256,512,1024,2048,512/128,2048/256')
    ap.add_argument('--seconds', type=float, default=16.0)
    ap.add_argument('--w1-requests', type=int, default=32)
    ap.add_argument('--w1-repeats', type=int, default=3)
    ap.add_argument('--max-num-seqs', type=int, default=64)
    ap.add_argument('--num-kv-blocks', type=int, default=4096)
    ap.add_argument('--threads', type=int, default=None)
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--json', default=None)
    a = ap.parse_args()
    if a.threads: torch.set_num_threads(a.threads)
    res = compare_chunking(a.settings.split(','), a.model, a.seconds, a.w1_requests, a.w1_repeats, a.seed,
                           dtype=a.dtype, device=a.device, max_num_seqs=a.max_num_seqs, num_kv_blocks=a.num_kv_blocks)
    for name, r in res.items():
        s, al = r['short'], r['all']
        print(f"{name:10} budget {r['budget']:5} | short TTFT p50 {s['ttft_p50']:5.0f} p99 {s['ttft_p99']:5.0f} ms | "
              f"ITL p50 {al['itl_p50']:5.1f} p99 {al['itl_p99']:6.1f} max {al['itl_max']:5.0f} ms | long TTFT p50 "
              f"{r['long']['ttft_p50']:5.0f} ms | W1 {np.mean([w['output_throughput'] for w in r['w1']]):5.0f} tok/s")
    if a.json: Path(a.json).write_text(json.dumps(dict(args=vars(a), results=res), indent=1))


if __name__ == '__main__':
    main()

#!/usr/bin/env python3
"""Prefix caching on vs off: a shared system prompt, and W1 (nothing shared) for the overhead.

    python benchmarks/prefix_caching.py [--model PATH_OR_ID] [--threads 2] [--json out.json]

A thin command line over `nanollmserve.prefix_cache.compare_prefix_caching` (chapter 7 shows and runs it).
"""
import argparse
import json
from pathlib import Path

import numpy as np
import torch

from nanollmserve.lab.measure import compare_prefix_caching


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--model', default=None, help='checkpoint directory or Hub id (default: the embedded model)')
    ap.add_argument('--device', default='cpu')
    ap.add_argument('--dtype', default='auto')
    ap.add_argument('--num-requests', type=int, default=64)
    ap.add_argument('--prefix-len', type=int, default=512)
    ap.add_argument('--output-len', type=int, default=64)
    ap.add_argument('--w1-requests', type=int, default=64)
    ap.add_argument('--w1-repeats', type=int, default=3)
    ap.add_argument('--num-kv-blocks', type=int, default=4096)
    ap.add_argument('--threads', type=int, default=None)
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--json', default=None)
    a = ap.parse_args()
    if a.threads: torch.set_num_threads(a.threads)
    res = compare_prefix_caching(a.model, a.num_requests, a.prefix_len, a.output_len, a.w1_requests, a.w1_repeats,
                                 a.seed, dtype=a.dtype, device=a.device, num_kv_blocks=a.num_kv_blocks)
    for k in ('off', 'on'):
        s, w1 = res[k]['shared'], [r['output_throughput'] for r in res[k]['w1']]
        print(f"caching {k:3}: TTFT mean {s['ttft_mean']:6.0f} ms, p99 {s['ttft_p99']:6.0f} ms, "
              f"{s['output_throughput']:6.0f} tok/s, {s['prompt_tokens_computed']} prompt tokens computed, "
              f"hit rate {s['hit_rate']:.1%} | W1 {np.mean(w1):.0f} tok/s ({len(w1)} runs)")
    if a.json: Path(a.json).write_text(json.dumps(dict(args=vars(a), results=res), indent=1))


if __name__ == '__main__':
    main()

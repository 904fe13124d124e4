#!/usr/bin/env python3
"""How many PyTorch threads `nanollmserve serve` should use on the CPU: the engine core process with every
core (the default) and with one fewer, against the in-process engine thread (`--no-engine-process`) with one
core fewer (its default) and with all; through HTTP with `nanollmserve.lab.bench`, same run, same requests.

    python benchmarks/serve_threads.py [--num-prompts 64] [--rates 4,inf]

Each setting starts its own server (the embedded model) and replays the same random requests (64-256 tokens
in, 32-128 out) at each rate. Reported: median TTFT and TPOT, p99 ITL, output throughput, and the ratios.
"""
import argparse
import math
import os
import sys

from nanollmserve.lab.bench import (ServerProcess, free_port, random_dataset, run_benchmark, run_sync, served_model,
                                summarize_run, token_pool)
from nanollmserve.loader import load_tokenizer
from nanollmserve.default_model import tiny_model_path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--num-prompts', type=int, default=64)
    ap.add_argument('--rates', default='4,inf')
    args = ap.parse_args()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()
    reqs = random_dataset(args.num_prompts, token_pool(load_tokenizer(tiny_model_path())), (64, 256), (32, 128), seed=0)
    rates = [float(r) for r in args.rates.split(',')]
    fewer = str(max(1, cores - 1))
    settings = {f'core, {cores} threads (default)': [], f'core, {fewer} threads': ['--cpu-threads', fewer],
                f'in-process, {fewer} threads': ['--no-engine-process'],
                f'in-process, {cores} threads': ['--no-engine-process', '--cpu-threads', str(cores)]}
    env = {k: v for k, v in os.environ.items() if k != 'OMP_NUM_THREADS'}
    results = {}
    for name, extra in settings.items():
        port = free_port()
        cmd = [sys.executable, '-m', 'nanollmserve.cli', 'serve', '--model', 'nanollmserve-tiny-qwen3', '--log-level', 'warning', '--port', str(port), *extra]
        with ServerProcess(cmd, port, env=env) as url:
            model = served_model(url)
            run_sync(run_benchmark(url, model, reqs[:4], progress=False))          # warm up
            for rate in rates:
                r = results[name, rate] = summarize_run(*run_sync(run_benchmark(url, model, reqs, rate, progress=False)))
                print(f"{name:20} rate {rate:>4}: TTFT median {r['median_ttft_ms']:6.1f} ms | TPOT median {r['median_tpot_ms']:5.1f} ms"
                      f" | ITL p99 {r['p99_itl_ms']:6.1f} ms | {r['output_throughput']:6.0f} tok/s ({r['failed']} failed)", flush=True)
    ours, *others = settings
    for rate in rates:
        a = results[ours, rate]
        for alt in others:
            b = results[alt, rate]
            print(f"rate {rate}: default vs {alt}: TPOT {b['median_tpot_ms'] / a['median_tpot_ms']:.2f}x lower, "
                  f"throughput {a['output_throughput'] / b['output_throughput']:.2f}x")


if __name__ == '__main__':
    main()

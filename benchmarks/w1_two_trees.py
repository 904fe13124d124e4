#!/usr/bin/env python3
"""W1 output throughput of two checkouts of nanollmserve, offline and served, runs alternating.

    python benchmarks/w1_two_trees.py --old /path/to/old/checkout --new . [--runs 5] [--mode both]

Each run is a fresh process importing the package from one checkout (PYTHONPATH), so the two never
share a process or a warm cache; the checkouts alternate run by run (old, new, old, new, ...), so a
slow spell of the machine hits both. W1 is chapter 5b's workload (64 requests of random token ids,
prompt and output lengths uniform in [100, 512], greedy, EOS ignored), made here from the same seed
so that both checkouts get the same requests whatever their own code calls it.
- offline: `LLM(model).generate` on the whole burst, after two short warm-up requests;
- served: `nanollmserve serve` as a process (the engine core in its own process, the default), the
  burst sent at once to /v1/completions as token ids, after a warm-up; the server's start-up and
  the warm-up are not timed.
Printed: each run's output tokens/s, each checkout's median and range, and new/old with its range.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

CHILD = textwrap.dedent('''
    import json, sys, time, torch
    mode, model, n, seed, port = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    torch.set_num_threads(2)
    from nanollmserve.loader import load_config, resolve_model_path
    vocab = load_config(resolve_model_path(model)).vocab_size
    g = torch.Generator().manual_seed(seed)
    plens = torch.randint(100, 513, (n,), generator=g).tolist()
    outs = torch.randint(100, 513, (n,), generator=g).tolist()
    prompts = [torch.randint(0, vocab, (k,), generator=g).tolist() for k in plens]
    if mode == 'offline':
        from nanollmserve import LLM, SamplingParams
        llm = LLM(model, device='cpu')
        greedy = lambda m: SamplingParams(temperature=0, max_tokens=m, ignore_eos=True)
        llm.generate([{'prompt_token_ids': p} for p in prompts[:2]], greedy(4), use_tqdm=False)
        start = time.perf_counter()
        res = llm.generate([{'prompt_token_ids': p} for p in prompts], [greedy(m) for m in outs],
                           use_tqdm=False)
        seconds = time.perf_counter() - start
        tokens = sum(len(r.outputs[0].token_ids) for r in res)
    else:
        import asyncio, httpx
        url = f'http://127.0.0.1:{port}/v1/completions'
        async def one(http, p, m):
            r = await http.post(url, json={'prompt': p, 'max_tokens': m, 'temperature': 0,
                                           'ignore_eos': True}, timeout=3600)
            return r.json()['usage']['completion_tokens']
        async def burst(ps, ms):
            async with httpx.AsyncClient(limits=httpx.Limits(max_connections=1000)) as http:
                return await asyncio.gather(*(one(http, p, m) for p, m in zip(ps, ms)))
        asyncio.run(burst(prompts[:2], [4, 4]))
        start = time.perf_counter()
        tokens = sum(asyncio.run(burst(prompts, outs)))
        seconds = time.perf_counter() - start
    assert tokens == sum(outs), (tokens, sum(outs))
    print(json.dumps(dict(tokens=tokens, seconds=seconds)))
''')


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0)); return s.getsockname()[1]


def run_once(tree: Path, mode: str, model: str, n: int, seed: int) -> float:
    "One fresh process importing the package from `tree`; output tokens/s."
    env = dict(os.environ, PYTHONPATH=str(tree))
    server, port = None, free_port()
    if mode == 'served':
        import httpx, time
        server = subprocess.Popen([sys.executable, '-m', 'nanollmserve.cli', 'serve', '--model', model,
                                   '--device', 'cpu', '--port', str(port), '--log-level', 'warning'],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 300
        while time.time() < deadline:
            try:
                if httpx.get(f'http://127.0.0.1:{port}/health', timeout=1).status_code == 200: break
            except httpx.HTTPError: time.sleep(0.5)
        else: raise RuntimeError(f"the server of {tree} did not start")
    try:
        out = subprocess.run([sys.executable, '-c', CHILD, mode, model, str(n), str(seed), str(port)],
                             env=env, capture_output=True, text=True, check=True)
    finally:
        if server: server.terminate(); server.wait(60)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return r['tokens'] / r['seconds']


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--old', required=True, type=Path, help='the baseline checkout')
    p.add_argument('--new', default=Path('.'), type=Path)
    p.add_argument('--runs', type=int, default=5, help='runs of each checkout, alternating')
    p.add_argument('--mode', choices=['offline', 'served', 'both'], default='both')
    p.add_argument('--model', default='nanollmserve-tiny-qwen3')
    p.add_argument('--num-requests', type=int, default=64)
    p.add_argument('--seed', type=int, default=0)
    args = p.parse_args()
    trees = {'old': args.old.resolve(), 'new': args.new.resolve()}
    for mode in (['offline', 'served'] if args.mode == 'both' else [args.mode]):
        tok_s = {'old': [], 'new': []}
        for i in range(args.runs):
            for name in (('old', 'new') if i % 2 == 0 else ('new', 'old')):
                tok_s[name].append(run_once(trees[name], mode, args.model, args.num_requests, args.seed))
                print(f"{mode} run {i + 1} {name}: {tok_s[name][-1]:.1f} output tok/s", flush=True)
        med = {k: statistics.median(v) for k, v in tok_s.items()}
        ratios = sorted(n / o for n, o in zip(tok_s['new'], tok_s['old']))
        for k, v in tok_s.items():
            print(f"{mode} {k}: median {med[k]:.1f} tok/s (range {min(v):.1f}-{max(v):.1f})")
        print(f"{mode} new/old: {med['new'] / med['old']:.3f}x (run pairs {ratios[0]:.3f}-{ratios[-1]:.3f})",
              flush=True)


if __name__ == '__main__':
    main()

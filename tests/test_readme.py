"""The README's quick start, run as written: `nanollmserve serve` with no arguments (port 8000, the default
model, nanollmserve-demo), then the README's curl command and its `openai` client snippet, verbatim."""
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

README = (Path(__file__).resolve().parent.parent / 'README.md').read_text()


def block(lang: str, needle: str) -> str:
    return next(b for b in re.findall(rf"```{lang}\n(.*?)\n```", README, re.S) if needle in b)


@pytest.fixture(scope='module')
def default_server():
    with socket.socket() as s:
        if s.connect_ex(('127.0.0.1', 8000)) == 0: pytest.skip("port 8000 is in use")
    serve_cmd = block('sh', 'nanollmserve serve').split('&&')[-1].strip()   # the part after the install
    proc = subprocess.Popen(serve_cmd, shell=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline:
        if proc.poll() is not None: raise RuntimeError(proc.stdout.read())
        try:
            if httpx.get('http://127.0.0.1:8000/health', timeout=1).status_code == 200: break
        except httpx.HTTPError: time.sleep(0.5)
    yield proc
    os.killpg(proc.pid, signal.SIGINT)
    proc.wait(30)


def test_readme_curl(default_server):
    r = subprocess.run(block('sh', 'curl '), shell=True, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    reply = json.loads(r.stdout)
    assert reply['object'] == 'chat.completion' and reply['choices'][0]['message']['role'] == 'assistant'


def quoted_answer(snippet: str) -> str:
    "The output block the README quotes right after `snippet`."
    after = README[README.index(snippet) + len(snippet) + len('\n```'):]   # past the snippet's fence
    return re.search(r"```\n(.*?)\n```", after, re.S).group(1)


@pytest.mark.parametrize('needle', ['chat.completions.create(model=', 'response_format=', 'tool_choice='])
def test_readme_openai_snippet(default_server, needle):
    """Each `openai` snippet runs, and prints what the README says it prints (greedy: the same every time): a chat
    reply, JSON that fits the snippet's schema, a tool call whose arguments fit the tool's parameters."""
    snippet = block('python', needle)
    r = subprocess.run([sys.executable, '-c', snippet], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.rstrip('\n') == quoted_answer(snippet)
    import jsonschema
    if needle == 'response_format=':
        jsonschema.validate(json.loads(r.stdout), {'type': 'object', 'required': ['name', 'age'], 'properties': {
            'name': {'type': 'string'}, 'age': {'type': 'integer'}}})
    if needle == 'tool_choice=':
        name, arguments = r.stdout.split(' ', 1)
        assert name == 'get_weather'
        jsonschema.validate(json.loads(arguments), {'type': 'object', 'properties': {'city': {'type': 'string'}},
                                                    'required': ['city']})


def test_default_server_serves_the_demo_model(default_server):
    models = httpx.get('http://127.0.0.1:8000/v1/models', timeout=10).json()['data']
    assert [m['id'] for m in models] == ['nanollmserve-demo']


def test_readme_bench_command(default_server, tmp_path):
    r = subprocess.run(block('sh', 'nanollmserve.lab.bench'), shell=True, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads((tmp_path / 'result.json').read_text())
    assert (report['completed'], report['failed']) == (report['settings']['num_prompts'], 0), report['errors']
    assert 'Successful requests:' in r.stdout and report['goodput'] <= report['request_throughput']


@contextlib.contextmanager
def readme_server(needle: str):
    "The README's sh command containing `needle`, served on a free port until the block ends; yields its URL."
    cmd = block('sh', needle)
    port = socket.socket(); port.bind(('127.0.0.1', 0)); free = port.getsockname()[1]; port.close()
    proc = subprocess.Popen(f"{cmd} --port {free}", shell=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    url = f'http://127.0.0.1:{free}'
    try:
        deadline = time.time() + 300
        while time.time() < deadline:
            if proc.poll() is not None: raise RuntimeError(proc.stdout.read())
            try:
                if httpx.get(url + '/health', timeout=1).status_code == 200: break
            except httpx.HTTPError: time.sleep(0.5)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(30)


def test_readme_lora_serve():
    "The README's LoRA command serves the shipped adapters beside the model, each answering as itself."
    with readme_server('--enable-lora') as url:
        models = {m['id']: m['parent'] for m in httpx.get(url + '/v1/models').json()['data']}
        assert models == {'nanollmserve-demo': None, 'code': 'nanollmserve-demo', 'grammar': 'nanollmserve-demo'}
        texts = {m: httpx.post(url + '/v1/completions', timeout=60, json={
                     'model': m, 'prompt': 'The with statement', 'max_tokens': 24, 'temperature': 0}).json()['choices'][0]['text']
                 for m in models}
        assert '::=' in texts['grammar'] and '::=' not in texts['nanollmserve-demo'] and len(set(texts.values())) == 3


def test_readme_quantized_serve():
    "The README's quantization command serves the demo model in int8, answering as the offline int8 engine does."
    from nanollmserve import LLM, SamplingParams
    with readme_server('--quantization') as url:
        prompt = 'The with statement'
        text = httpx.post(url + '/v1/completions', timeout=60, json={
            'model': 'nanollmserve-demo', 'prompt': prompt, 'max_tokens': 24, 'temperature': 0}).json()['choices'][0]['text']
        ref = LLM(quantization='int8').generate(prompt, SamplingParams(temperature=0, max_tokens=24), use_tqdm=False)
        assert text == ref[0].outputs[0].text and text


def test_readme_generate():
    "The README's `generate` command prints the demo model's greedy continuation, as the offline engine makes it."
    from nanollmserve import LLM, SamplingParams
    cmd = block('sh', 'nanollmserve generate')
    r = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    prompt = re.search(r'--prompt "([^"]+)"', cmd).group(1)
    ref = LLM().generate(prompt, SamplingParams(temperature=0, max_tokens=64), use_tqdm=False)[0].outputs[0].text
    assert r.stdout == ref + '\n' and ref.strip()
    assert 'output_tokens=' in r.stderr


def test_readme_install_adds_no_cuda_packages():
    """The quick start's first line puts PyTorch's CPU build in place where there is no NVIDIA GPU; with it in place
    (as in this environment), installing the package brings no `nvidia-*` package and no CUDA build of anything.
    (PyTorch's index itself is out of reach here: the first line's download is not run.)"""
    install = block('sh', 'nanollmserve serve').splitlines()
    assert install[0] == 'nvidia-smi >/dev/null 2>&1 || pip install torch --index-url https://download.pytorch.org/whl/cpu'
    import torch
    assert torch.version.cuda is None or torch.cuda.is_available(), 'a CUDA build of torch on a machine without a GPU'
    report = Path(os.environ.get('TMPDIR', '/tmp')) / f'nanollmserve-install-report-{os.getpid()}.json'
    root = Path(__file__).resolve().parent.parent
    r = subprocess.run([sys.executable, '-m', 'pip', 'install', '--dry-run', '--quiet', '--report', str(report), '-e', str(root)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    names = [i['metadata']['name'].lower() for i in json.loads(report.read_text())['install']]
    report.unlink()
    assert not [n for n in names if n.startswith('nvidia-') or n in ('torch', 'triton')], names

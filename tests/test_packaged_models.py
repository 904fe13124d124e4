"""The trained demo checkpoints travel with the package: a built wheel carries them, a non-editable install
finds them by name, and `transformers` loads them and writes the same greedy tokens as our engine."""
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NAMES = ('nanollmserve-demo', 'nanollmserve-demo-draft')
FILES = ('config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json',
         'generation_config.json', 'chat_template.jinja')


@pytest.fixture(scope='module')
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp('wheel')
    r = subprocess.run([sys.executable, '-m', 'pip', 'wheel', '--no-deps', '--no-build-isolation', '-q',
                        '-w', str(out), str(ROOT)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return next(out.glob('nanollmserve-*.whl'))


def test_wheel_carries_the_checkpoints(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for model in NAMES:
        for f in FILES:
            assert f'nanollmserve/models/{model}/{f}' in names, (model, f)
    size = sum(i.file_size for i in zipfile.ZipFile(wheel).infolist() if '/models/' in i.filename)
    assert size <= 40 * 2**20, size


def test_installed_wheel_resolves_the_names(wheel, tmp_path):
    "Unpacked as pip installs it (no source tree on the path), the names resolve inside the install."
    site = tmp_path / 'site'
    zipfile.ZipFile(wheel).extractall(site)
    code = ("import nanollmserve, sys; from nanollmserve.loader import resolve_model_path\n"
            "assert nanollmserve.__file__.startswith(sys.argv[1]), nanollmserve.__file__\n"
            "for name in (None, 'nanollmserve-demo', 'nanollmserve-demo-draft'):\n"
            "    p = resolve_model_path(name); assert str(p).startswith(sys.argv[1]), p\n"
            "    print(p.name)")
    r = subprocess.run([sys.executable, '-c', code, str(site)], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path, env={'PYTHONPATH': str(site), 'PATH': '/usr/bin:/bin'})
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ['nanollmserve-demo', 'nanollmserve-demo', 'nanollmserve-demo-draft']
    for model in NAMES:
        for f in FILES:
            installed = site / 'nanollmserve' / 'models' / model / f
            assert installed.read_bytes() == (ROOT / 'nanollmserve' / 'models' / model / f).read_bytes()


@pytest.mark.parametrize('name', NAMES)
def test_transformers_greedy_equals_ours(name):
    from nanollmserve import LLM, SamplingParams
    from nanollmserve.loader import resolve_model_path
    from nanollmserve.tiny_models import hf_greedy
    prompts = ["The with statement", "A list comprehension", "The json module"]
    outs = LLM(name).generate(prompts, SamplingParams(temperature=0, max_tokens=48), use_tqdm=False)
    ref = hf_greedy(resolve_model_path(name), [o.prompt_token_ids for o in outs], 48)
    assert [o.outputs[0].token_ids for o in outs] == ref

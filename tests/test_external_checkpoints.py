"""Checkpoints that nanollmserve did not build: default `transformers` configs and initialisation, other
tokenizer styles (SentencePiece-like Metaspace BPE), feature switches our fixtures leave off. The CLI's
greedy text must equal `transformers`' greedy `generate()`, and so must the token ids of both loops."""
import subprocess
import sys

import pytest
import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import (AutoConfig, AutoModelForCausalLM, AutoTokenizer,
                          PreTrainedTokenizerFast)

from nanollmserve.generate import TextGenerator
from nanollmserve.sampling import SamplingParams
from nanollmserve.tiny_models import CORPUS

PROMPTS = ["Hello there, how are you?", "Café au lait ☕ et 你好"]


def metaspace_tokenizer():
    "A Llama-2-style tokenizer: '▁' marks word starts, unknown characters fall back to bytes."
    tok = Tokenizer(models.BPE(byte_fallback=True, unk_token='<unk>'))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend('▁'), normalizers.Replace(' ', '▁')])
    tok.pre_tokenizer = pre_tokenizers.Split('▁', behavior='merged_with_next')
    tok.decoder = decoders.Sequence([decoders.Replace('▁', ' '), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(' ', 1, 0)])
    bytes_ = [f'<0x{i:02X}>' for i in range(256)]
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=['<unk>', '<s>', '</s>'] + bytes_, show_progress=False)
    tok.train_from_iterator(CORPUS.splitlines(), trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token='<s>', eos_token='</s>', unk_token='<unk>')


def gpt2_style_tokenizer():
    "A GPT-2-style byte-level BPE with only an <|endoftext|> token (no chat template)."
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=['<|endoftext|>'], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS.splitlines(keepends=True), trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token='<|endoftext|>', bos_token='<|endoftext|>')


CASES = {  # name: (model_type, tokenizer factory, config overrides)
    'qwen3-defaults': ('qwen3', gpt2_style_tokenizer, dict(tie_word_embeddings=True)),  # default head_dim 128
    'qwen2-tied': ('qwen2', gpt2_style_tokenizer, dict(tie_word_embeddings=True, num_key_value_heads=1)),
    'llama-biases': ('llama', metaspace_tokenizer, dict(attention_bias=True, mlp_bias=True, num_key_value_heads=4)),
    'mistral-window': ('mistral', metaspace_tokenizer, dict(sliding_window=None)),
}


@pytest.fixture(scope='module')
def checkpoints(tmp_path_factory):
    out = {}
    for name, (model_type, make_tok, overrides) in CASES.items():
        tok = make_tok()
        config = AutoConfig.for_model(model_type, vocab_size=len(tok), hidden_size=64, intermediate_size=96,
                                      num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=512,
                                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                                      **{'num_key_value_heads': 2, **overrides})
        config.architectures = [AutoModelForCausalLM.from_config(config).__class__.__name__]
        torch.manual_seed(len(name))
        model = AutoModelForCausalLM.from_config(config)
        with torch.no_grad():  # transformers' own init (std 0.02) plus a little more spread
            for p in model.parameters(): p.add_(torch.randn_like(p) * 0.05)
        path = tmp_path_factory.mktemp(name)
        model.save_pretrained(path)
        tok.save_pretrained(path)
        out[name] = path
    return out


def hf_greedy(path, prompt, max_new_tokens):
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    ids = tok(prompt, return_tensors='pt').input_ids
    out = model.generate(ids, max_new_tokens=max_new_tokens, do_sample=False)[0, ids.shape[1]:]
    return out.tolist(), tok.decode(out, skip_special_tokens=True)


@pytest.mark.parametrize('name', list(CASES))
def test_cli_greedy_text_equals_transformers(checkpoints, name):
    path, prompt = checkpoints[name], PROMPTS[0]
    _, ref_text = hf_greedy(path, prompt, 20)
    r = subprocess.run([sys.executable, '-m', 'nanollmserve.cli', 'generate', '--model', str(path), '--prompt', prompt,
                        '--temperature', '0', '--max-tokens', '20'], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ref_text + '\n'


@pytest.mark.parametrize('name', list(CASES))
def test_both_loops_equal_transformers(checkpoints, name):
    gen = TextGenerator.from_pretrained(checkpoints[name])
    for prompt in PROMPTS:
        ref_ids, ref_text = hf_greedy(checkpoints[name], prompt, 30)
        for use_cache in (False, True):
            out = gen.generate(prompt, SamplingParams(temperature=0, max_tokens=30), use_cache=use_cache)
            assert out.token_ids == ref_ids
            assert out.text == ref_text

"""A tiny GPT-2 with random weights and a word-level tokenizer, saved as any checkpoint is (no download).

Run from any folder, ``python tiny_gpt2.py`` writes ``tiny-gpt2/`` there; then
``seqlab model --model tiny-gpt2 ...`` measures it (the manual's model page; tests/test_readme.py runs both).
"""

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import GPT2Config, GPT2Model, PreTrainedTokenizerFast

words = ["[UNK]", "[EOS]", *"el perro muerde al cartero la luz entra por la ventana".split()]
backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(dict.fromkeys(words))}, unk_token="[UNK]"))
backend.pre_tokenizer = pre_tokenizers.Whitespace()
torch.manual_seed(0)
GPT2Model(GPT2Config(vocab_size=len(set(words)), n_embd=64, n_layer=2, n_head=4, n_positions=128,
                     bos_token_id=1, eos_token_id=1)).save_pretrained("tiny-gpt2")
PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", eos_token="[EOS]").save_pretrained("tiny-gpt2")

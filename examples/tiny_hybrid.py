"""A tiny Jamba (attention and Mamba layers) with random weights, saved as any checkpoint is (no download).

Run from any folder, ``python tiny_hybrid.py`` writes ``tiny-jamba/`` there; then
``seqlab decode --model tiny-jamba --no-time`` reads its cache (the manual's decode page).
"""

import torch
from transformers import JambaConfig, JambaForCausalLM
from transformers.utils import logging

logging.disable_progress_bar()
torch.manual_seed(0)
config = JambaConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=4, num_attention_heads=4,
                     num_key_value_heads=2, attn_layer_period=2, attn_layer_offset=1, expert_layer_period=100,
                     expert_layer_offset=99, num_experts=1, mamba_d_state=4, mamba_d_conv=4, mamba_expand=2,
                     max_position_embeddings=64, bos_token_id=0, eos_token_id=1, pad_token_id=1)
JambaForCausalLM(config).save_pretrained("tiny-jamba")

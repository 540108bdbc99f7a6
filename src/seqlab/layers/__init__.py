"""The machines seqlab measures: sequence layers that map (B, T, d_model) to (B, T, d_model), in plain PyTorch.

The lesson's two machines and the layers it sets beside them:

- ``recurrent`` — the Elman RNN (L1), a loop of T steps; ``attention`` — attention and self-attention (L2);
  ``convolution`` — stacks of causal and dilated convolutions; ``restricted`` — attention restricted to a band;
  ``transformer`` — the Transformer of Figure 1, box by box.
- The modern mixers: ``scan`` (loop, Hillis–Steele and Blelloch scans), ``linear_attention``,
  ``linear_recurrence`` (diagonal and selective), ``mamba_block``, ``sliding_window``; ``mixer_common`` holds their
  weights, input checks and decode API, ``mixers`` the one registry of mixers every table, command and closed form
  reads, and ``transition`` the transition factor each mixer declares between positions.
- Decoding one position at a time: ``decoding`` (the Elman RNN, causal attention with and without a KV cache).
- Models from ``transformers``: ``pretrained`` (a Hugging Face encoder or decoder read offline), ``tiny_lms``
  (tiny random-weight causal LMs built from config classes) and ``anatomy`` (where such a model keeps its layers,
  attention and positions).

Nothing is imported here: ``import seqlab.layers`` is free, and each module is imported where it is used. The
engine that measures these layers is ``seqlab.measure``; their closed forms are in ``seqlab.cost``.
"""

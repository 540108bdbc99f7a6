"""The option errors the commands and the library word in English, read back into the run's language.

A usage error's text after ``Invalid value for '--option':`` comes from three places: our option
parsers (already in the run's language, :mod:`seqlab.cli.options`), a command's own check, or the
library's :class:`~seqlab.errors.SeqlabError` (the library never knows the output language). The
commonest of the last two are listed here as English templates (data only, so that
:mod:`seqlab.cli.language` imports it without a cycle); :func:`seqlab.cli.language.translate_error`
reads a message against them and words it again from the ``cli`` catalogue, keeping the
values it read (paths, numbers, option names). A message not listed stays in English.
"""

from __future__ import annotations

ERRORS_DOMAIN = "cli"

#: English templates of option errors, most specific first; a field matches any text.
ERROR_MESSAGES = (
    "{what} would need about {size} (mostly {largest}); this machine has {available} available, of which seqlab "
    "uses at most {share} ({bytes} bytes against {available_bytes})",
    "text file {path} does not exist; expected a UTF-8 text file or '-' for stdin",
    "text file {path} is a directory; expected a UTF-8 text file",
    "text file {path} is empty; expected some UTF-8 text",
    "text file {path} is {size} bytes; expected at most {limit} bytes",
    "text file {path} contains only whitespace ({count} characters); expected some text",
    "give either --text or --tokens, not both",
    "give either --jobs or --ray, not both",
    "expected auto or a Ray cluster's address, received {value}",
    "the results file {path} holds another sweep's runs ({field}: {there} there, {here} here); give another file or "
    "remove it",
    "{path} is not a seqlab results file (its first line is not a seqlab_sweep {version} header); give another file "
    "or remove it",
    "line {number} of the results file {path} is not a run record; the file is damaged (give another file or remove "
    "it)",
    "the folder of the results file {path} does not exist",
    "cannot read the results file {path}: {reason}",
    "cannot write the results file {path}: {reason}",
    "cannot reach a Ray cluster at {address}: {reason}; start one (ray start --head) and give its address with --ray "
    "ADDRESS, or run on this machine with --ray local",
    "a worker process stopped in the middle of a run (killed, or out of memory); the runs finished before it are kept",
    "expected claims among L1–L12 (or B1–B5, beyond the lesson) separated by commas (such as L1,L8 or 1,8), "
    "received {value}, in which {part} is not one",
    "expected claims among L1–L12 (or B1–B5, beyond the lesson) separated by commas (such as L1,L8 or 1,8), "
    "received {value}, which has an empty item",
    "expected claims among L1–L12 (or B1–B5, beyond the lesson) separated by commas (such as L1,L8 or 1,8), "
    "received {value}",
    "expected learning rates in (0, 1], received {token} in {text}",
    "expected machines among {choices} or all, received {token}",
    "device 'cuda' requested but no CUDA device is present",
    "lengths must hold at least 3 distinct values to fit a growth, received {value}",
    "machine must be one of {choices}; received {value}",
    "dtype must be one of {choices}; received {value}",
    "--dtype applies to --model only",
    "{what} must be among {choices}; received {value}",
    "{name} must be an integer in [1, {maximum}], received {value}",
    "{name} must be an integer >= 1, received {value}",
    "the {stage} cannot trace {module}: the higher-order op {op} has no eager implementation to trace; run the "
    "module without it (outside torch.compile)",
    "the {stage} cannot trace {module}: the higher-order op {op} computes outside the functions it was given, where "
    "no trace sees it; run the module without it",
    "cannot import {module} from {spec}: {reason}",
    "{spec}({d_model}) failed: {reason}",
    "cannot listen on {host}:{port}: {reason}",
    "expected one of {choices}; received {value}",
    "expected one of {choices}, received {value}",
    "expected integers >= {minimum} separated by commas, received {text}",
    "expected a comma-separated list, received {text}",
    "expected integers >= 1, received {token} in {text}",
    "expected an integer >= 1, received {token} in {text}",
    "the folder {folder} does not exist, received {path}",
    "the folder of {path} does not exist",
    "cannot write {path}: {reason}",
    "plots need matplotlib (pip install matplotlib)",
    "compare needs a text of at least 2 tokens; {source} has {count}",
    "{path} is not a folder; expected a local Hugging Face checkpoint folder (config.json, weights)",
    "{path} holds a {architecture} (model type {model_type}), which is not a causal language model; expected a "
    "decoder that writes token by token (GPT-2, Llama, Mamba, RWKV...)",
    "position {t} is beyond what {name} reads: at most {limit} positions (max_position_embeddings)",
    "positions must name at least {count} distinct positions to name a growth, received {positions}",
    "seqlab cannot read this model's cache: it found {what} holding tensors it cannot assign to attention "
    "keys/values, a convolution window or a recurrent state ({tensors})",
    "seqlab cannot read this model's cache: it found {what} with no floating-point tensor reachable from it; "
    "expected keys/values, conv_states or recurrent_states",
    "{options} apply to seqlab's own machines, not to --model",
    "{path} has no weights ({files}); expected a local Hugging Face checkpoint folder (config.json, weights)",
    "{path} has no {what}; expected a local Hugging Face checkpoint folder (config.json, weights)",
    "{path}: its weights do not match its config ({architecture}): {missing} missing and {mismatched} of another "
    "shape (first: {names}); expected the weights saved with this config",
    "{path} has a weights file that cannot be read: {reason}",
    "the factory file {path} does not exist (from {spec}); expected module.path:factory or path/to/file.py:factory",
    "the factory file {path} is not a Python file (from {spec}); expected module.path:factory or "
    "path/to/file.py:factory",
    "the factory file {path} cannot be read: {reason} (from {spec})",
    "expected module.path:factory or path/to/file.py:factory, received {spec}",
    "cannot read text file {path}: {reason}; expected a readable UTF-8 text file",
    "cannot read the checkpoint folder {path}: {reason}",
    "x of shape {shape} has no batch dim: profile takes x (B, T, d) (or (B, d, T), (T, B, d) with the layout "
    "named); add one with x.unsqueeze(0)",
    "x must be a floating tensor of shape (B, T, d) with B, T, d >= 1, received {got}",
    "layout must be one of {choices}; received {value}",
    "{module} has batch_first=False: it reads x {shape} as (T, B, d), but the positions here are on dim 1; pass x "
    "as (T, B, d) and name the layout tbd, or a batch_first module",
    "{module} has batch_first={flag}: it reads x {shape} as {reads}, not as {layout}; name the layout {name}",
    "cannot tell which dim of x {shape} holds the positions: T = d and {module} runs with either dim longer; name "
    "the layout: btd for (B, T, d) or bdt for (B, d, T)",
    "cannot tell which dim of x {shape} holds the positions: T = d and {module} runs with neither dim longer; name "
    "the layout: btd for (B, T, d) or bdt for (B, d, T)",
    "{module} must return a tensor with the {T} positions on dim {dim} (or a tuple whose first element is one), "
    "received shape {shape}",
    "output {output} names an element, but {module} returns one tensor; leave output out",
    "{module} must return a tensor, or a tuple, list or mapping of them; received {kind}",
    "output must be an index in [0, {last}] or a key ({keys}) of what {module} returns; received {value}",
    "output must be an index in [0, {last}] of what {module} returns; received {value}",
    "output {index} of {module} is a {kind}, not a tensor; choose another with output",
    "output {index} of {module} has no dim of the {T} positions, received shape {shape}; choose another with output",
)


"""The glossary: one term per concept, in English and Spanish, and one notation per formula.

Every front end words its concepts from here: the catalogues (``locale/es/LC_MESSAGES/*.po``) of every command,
the report, the notebook and the web lab use :attr:`Term.es` wherever the English message uses :attr:`Term.en`
(a test reads every catalogue against :data:`TERMS`), and the formulas that more than one command prints are
taken from :data:`NOTATION`. The Spanish terms follow the lesson where it has one (``profundidad de la
cadena`` for span, ``vía aditiva`` for the gated cells' bypass, ``compuerta`` for a gate, ``operaciones en
fila``); the register is *tú* throughout (:data:`USTED_FORMS` must not appear). :data:`ALLOWED_ENGLISH` lists
the words that stay as they are in Spanish output (names, units, technical terms); a test runs every command
with ``--lang es`` and refuses any other English word.

>>> term("span", "es"), term("span", "en")
('profundidad de la cadena', 'span')
>>> NOTATION["gru_bypass"]
'z_t ⊙ h_{t−1}'
"""

from __future__ import annotations

from dataclasses import dataclass

from seqlab.errors import SeqlabError
from seqlab.i18n import N_, check_language

__all__ = ["ALLOWED_ENGLISH", "NOTATION", "TERMS", "USTED_FORMS", "Term", "rows", "term"]


@dataclass(frozen=True)
class Term:
    """One concept: its English and Spanish words, a short definition, and the wordings that drifted.

    Attributes:
        id: the term's key (``"span"``).
        en: the English term as the messages write it.
        es: the Spanish term (the lesson's where it has one).
        definition: what the term means here, in English.
        en_pattern: a regular expression (case-insensitive) that finds the term in an English message id;
            ``None``: the term is not checked by its English side (only :attr:`avoid` is).
        es_forms: every Spanish wording accepted where ``en_pattern`` matches (``es`` and its plural...).
        avoid: regular expressions (case-insensitive) of Spanish wordings that drifted and must not come back.
    """

    id: str
    en: str
    es: str
    definition: str
    en_pattern: str | None = None
    es_forms: tuple[str, ...] = ()
    avoid: tuple[str, ...] = ()


TERMS: tuple[Term, ...] = (
    Term("span", "span", "profundidad de la cadena",
         "the longest chain of operations that must run one after another (L1, L2); the lesson's chain depth",
         r"\bspans?\b", ("profundidad de la cadena", "profundidades de la cadena"),
         (r"\bcadena \(ops\)", r"\bcadena: ops\b")),
    Term("in_a_row", "in a row", "en fila", "one after another, each waiting for the one before (L1, L2)",
         r"\bin a row\b", ("en fila",), (r"\boperaciones seguidas\b", r"\bops seguidas\b", r"\ben serie\b")),
    Term("bypass", "additive bypass", "vía aditiva",
         "the gated cells' term that carries the state past W_hh without a matrix product (L3)",
         r"\bbypass", ("vía aditiva", "vías aditivas"), (r"\bderivaci[oó]n", r"\bdesv[ií]o", r"\batajo aditivo")),
    Term("gate", "gate", "compuerta", "an LSTM or GRU gate: a sigmoid that scales a term element by element (L3)",
         r"\bgat(e|es|ed)\b", ("compuerta",), (r"\bpuertas?\b",)),
    Term("closed_form", "closed form", "forma cerrada", "a count written as a formula of T and the widths",
         r"\bclosed forms?\b", ("forma cerrada", "formas cerradas"), (r"\bf[oó]rmulas? cerradas?",)),
    Term("count", "count", "recuento", "a number of multiplications or operations counted while a layer runs",
         None, (), (r"\bconteos?\b",)),
    Term("width", "width", "anchura", "the size of a vector: d_model, d_h, d_k, d_v",
         r"\bwidths?\b", ("anchura",), (r"\banchos\b", r"\bancho \d", r"\bancho \{")),
    Term("iqr", "IQR", "RIC", "interquartile range (rango intercuartílico) of the timed blocks", r"\bIQR\b", ("RIC",)),
    Term("loop", "loop", "bucle", "a recurrence run one step after another in Python", r"\bloop\b", ("bucle",)),
    Term("head", "head", "cabeza", "one of the parallel attention calls of a multi-head layer",
         r"(?<![-\w])(?<!request )heads?\b(?!\s*(=|must))", ("cabeza",)),
    Term("reach", "reach", "alcance", "the size of ∂y_T/∂x_1: how much of position 1 arrives at position T",
         r"(?<!to )(?<!it )(?<!inputs )(?<!cannot )\breach\b(?! it\b)", ("alcance",)),
    Term("self_attention", "self-attention", "auto-atención",
         "attention whose queries, keys and values come from one sequence (the lesson's next one)",
         r"\bself-attention\b", ("auto-atención",), (r"\bautoatenci[oó]n",)),
    Term("embedding", "embedding", "incrustación", "the vector a token is turned into before the first layer",
         r"(?<!^)\bembeddings?\b|^Embeddings?\b", ("incrustación", "incrustaciones"), (r"\bembedding de\b",)),
    Term("noisy", "noisy", "con ruido", "a timing whose spread (IQR) is a large share of its median", r"\bnoisy\b",
         ("ruido",)),
    Term("scope", "scope", "ámbito", "what a count includes: the lesson's call, a whole layer, the kernels run",
         r"\bscopes?\b", ("ámbito",)),
    Term("crossover", "crossover", "cruce", "the length T at which two counts are equal (T = d, L7)",
         r"\bcrossover\b", ("cruce", "cruzan")),
    Term("spectral_radius", "spectral radius", "radio espectral", "the largest |eigenvalue| of W_hh (L3)",
         r"\bspectral radius\b", ("radio espectral",)),
    Term("graph_path", "graph path", "camino en el grafo",
         "the least ops in a row from x_i to y_j in the traced op graph: how long y_j waits for x_i",
         r"\bgraph paths?\b", ("camino en el grafo", "caminos en el grafo")),
    Term("signal_path", "signal path", "camino de la señal",
         "the transition factors a signal from x_i meets on its way to y_j (L3, L4), measured as k in J(s) = s^k·J(1)",
         r"\bsignal paths?\b", ("camino de la señal", "caminos de la señal")),
    Term("transition_factor", "transition factor", "factor de transición",
         "a multiplicative factor between positions: W_hh in the recurrence, a decay a_t, an attention weight α_ji",
         r"\btransition factors?\b", ("factor de transición", "factores de transición")),
    Term("interleaved_rounds", "interleaved rounds", "rondas intercaladas",
         "timing in which every round times one block of each machine, the order rotating (L8's one rule)",
         r"\binterleaved rounds?\b", ("rondas intercaladas",)),
)

#: One notation per formula that more than one command prints: PyTorch's (``torch.nn.LSTM`` and
#: ``torch.nn.GRU``), where the GRU's update gate z_t is the share *kept* from h_{t−1}, so its additive bypass
#: is z_t ⊙ h_{t−1} (other texts write the same cell with z and 1 − z swapped).
NOTATION: dict[str, str] = {
    "lstm_update": "c_t = f_t ⊙ c_{t−1} + i_t ⊙ g_t",
    "lstm_bypass": "f_t ⊙ c_{t−1}",
    "gru_update": "h_t = (1 − z_t) ⊙ n_t + z_t ⊙ h_{t−1}",
    "gru_bypass": "z_t ⊙ h_{t−1}",
}

#: Usted forms (and the formal "su" of the reader's own things) that must not appear in Spanish: tú throughout.
USTED_FORMS: tuple[str, ...] = (
    r"\busted(es)?\b", r"\bsu propio (texto|checkpoint|equipo|módulo)", r"\bsu (texto|equipo|checkpoint)\b",
    r"\b(repita|dé|escriba|pruebe|elija|mire|vuelva|compruebe|añada|indique|instale|cambie|pulse|"
    r"intente|reduzca|aumente|abra|guarde|tome|ponga|véase)\b",
)

#: Words that stay as they are in Spanish output: units, names (people, libraries, classes, files, commands,
#: options' metavariables), and technical terms used untranslated in Spanish. Lower case; a word written with
#: a digit, an underscore, a dot inside or a capital inside (``d_model``, ``nn.RNN``, ``ElmanRNN``) is a name.
ALLOWED_ENGLISH: frozenset[str] = frozenset("""
s ms µs ns kib mib gib b kb mb gb flop flops cpu cuda gpu meta float double int str bytes
pytorch torch seqlab typer click rich babel matplotlib weasyprint plotly pango jinja uvicorn fastapi
hugging face transformers transformer bert minilm sentence gpt tiktoken adam autograd jacobian
nn sdpa lstm gru rnn mlp elman elmanrnn bahdanau luong vaswani mamba gu dao blelloch softmax tanh sigmoid relu gelu
kaplan et rwkv jamba llama mistral qwen ssm zoology arora hochreiter schmidhuber
kernel kernels scan flash eager encoder decoder feed forward dropout layernorm linear
json csv png svg html htm pdf utf stdin utc checkpoint web token tokens max min log exp kv host unicode ray lines
compare table profile bench learn quiz model figure check serve report decode zoo auto
dot scaled_dot additive general o base
l q k v x y z c f g h i j n t d r w e a
""".split())


def term(term_id: str, lang: str) -> str:
    """The glossary's word for ``term_id`` in ``lang`` (``en`` or ``es``).

    >>> term("bypass", "es")
    'vía aditiva'

    Raises:
        SeqlabError: an unknown term id or language.
    """
    lang = check_language(lang)
    for entry in TERMS:
        if entry.id == term_id:
            return entry.es if lang == "es" else entry.en
    raise SeqlabError(N_("expected a glossary term id ({terms}), received {term_id!r}"),
                      terms=', '.join(t.id for t in TERMS), term_id=term_id)


def rows(lang: str = "en") -> list[tuple[str, str, str]]:
    """The glossary as table rows for a page of the manual: (English term, Spanish term, definition), in order.

    >>> rows()[0][:2], rows("es")[1][:2]
    (('span', 'profundidad de la cadena'), ('en fila', 'in a row'))

    Raises:
        SeqlabError: ``lang`` is not en or es (the definitions are in English; ``lang`` orders the columns).
    """
    lang = check_language(lang)
    return [(t.en, t.es, t.definition) if lang == "en" else (t.es, t.en, t.definition) for t in TERMS]

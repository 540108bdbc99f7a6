"""``seqlab zoo``: Table 1 and the decode columns of every text model type of the installed ``transformers``
(issue 40).

* :mod:`~seqlab.zoo.shrink`: a tiny random-weight model from any config (one generic table of sizes, one table of
  per-family adjustments), and a model at its real size on the meta device;
* :mod:`~seqlab.zoo.checks`: the two routes the tests check a family by (paths against the float64 Jacobian, work
  against PyTorch's ``FlopCounterMode``);
* :mod:`~seqlab.zoo.measure`: one family's row: work, span and paths at several T, order, the decode step's work
  and cache bytes at several t, each growth named, and the real size's work and cache from shapes alone.

Nothing here imports ``transformers`` at import time.
"""

"""``seqlab serve``: the lesson as a local web lab (FastAPI, Jinja2 templates, offline scripts).

Every panel is one page and one JSON endpoint under ``/api``; the page draws what the endpoint
returns, and the endpoint only calls seqlab's library (closed forms of :mod:`seqlab.cost`, the engine
in :mod:`seqlab.measure`, the studies) and shapes the result. Nothing shown is written by hand.

Panels: Figure 1 (L11), cost (L5–L7, L9), chain and path (L1–L4), order (L10), time (L8) and the
self-check (L12). Import :func:`seqlab.web.app.create_app` to embed the app; ``seqlab serve`` runs it
with Uvicorn. Importing this package does not import FastAPI; :mod:`seqlab.web.app` does.
"""

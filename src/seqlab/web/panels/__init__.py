"""One module per panel of the web lab: its pydantic request and response models and its ``/api`` route.

Each calls seqlab's library and shapes the result for the page; none draws anything.
"""

"""Measured results kept by the web lab's server: a small thread-safe LRU (each measurement is deterministic per
input, so a repeated request is answered without asking a worker again; see :mod:`seqlab.web.workers`)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any


class ResultCache:
    """A small thread-safe LRU of measured results in the server (measurements are deterministic per input).

    >>> cache = ResultCache(2)
    >>> cache.put("a", 1); cache.put("b", 2); cache.put("c", 3)
    >>> cache.get("a"), cache.get("c")
    (None, 3)
    """

    def __init__(self, maxsize: int = 64) -> None:
        self.maxsize = maxsize
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key) -> Any:
        """The value kept for ``key`` (now the most recent), or None."""
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key]

    def put(self, key, value) -> None:
        """Keep ``value`` for ``key``, dropping the least recent beyond :attr:`maxsize`."""
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.maxsize:
                self._items.popitem(last=False)

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._items.clear()


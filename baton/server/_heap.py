"""The long-lived process's heap, out of the garbage collector's way once it has started
(docs/architecture.md, "What a request body may cost").

A full collection walks every container object the process holds and runs on whichever
thread allocated last, holding the interpreter lock: in a started `baton run` (FastAPI,
pydantic's schemas, the actors) that is about 40 ms during which no actor runs, and parsing
one large request body is enough to trigger one. What exists once the process has started
(modules, classes, schemas, the app) lives as long as the process, so it is moved to the
permanent generation: collections then walk only what came after.
"""

from __future__ import annotations

import gc


def settle_heap() -> None:
    """Collect once, then freeze what is left: later collections skip it (`gc.freeze`)."""
    gc.collect()
    gc.freeze()

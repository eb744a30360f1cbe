"""The HTTP statuses of the pipeline's errors, and of long-term memory's that it serves,
registered with the kernel's error wire on import (docs/architecture.md, "A message, from
`baton tell` to a handler and back"): what the control API answers, and what a worker
process's error looks like to the one that asked."""

from __future__ import annotations

from baton.memory.errors import MemoryInputError, UnknownMemoryError
from baton.pipeline.errors import (
    DamagedScenarioError,
    InvalidScenarioNameError,
    NoPendingHandoffError,
    NoScenarioModelError,
    NoSchedulerError,
    RunArchiveConflictError,
    SchedulerReplyFailure,
    UnknownScenarioError,
)
from baton.runtime._error_wire import register_status

for _error, _status in (
    (UnknownScenarioError, 404),
    (UnknownMemoryError, 404),
    (InvalidScenarioNameError, 422),
    (MemoryInputError, 422),
    (NoSchedulerError, 409),
    (NoScenarioModelError, 409),
    (NoPendingHandoffError, 409),
    (DamagedScenarioError, 409),
    (RunArchiveConflictError, 409),
    (SchedulerReplyFailure, 502),
):
    register_status(_error, _status)

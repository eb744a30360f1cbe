"""The 27 samples of the leave_application scenario (IDs stable across iterations).

Categories, as the design's `task_templates` ask: 6 single-turn, 10 multi-turn, 6 boundary
cases and 5 policy violations the agent must refuse. Each sample's `iter1` / `iter2` records
why it failed in that iteration; `_iterations.py` reproduces the failure from the agent's
behaviour and checks that the checkers really fail for it.
"""

from __future__ import annotations

from tools.leave_application_script._dialogue import SampleSpec
from tools.leave_application_script._samples_edge import boundary_samples, policy_violation_samples
from tools.leave_application_script._samples_multi_turn import multi_turn_samples
from tools.leave_application_script._samples_single_turn import single_turn_samples


def all_samples() -> list[SampleSpec]:
    """The 27 samples ordered by ID."""
    specs = (
        single_turn_samples()
        + multi_turn_samples()
        + boundary_samples()
        + policy_violation_samples()
    )
    return sorted(specs, key=lambda spec: spec.number)

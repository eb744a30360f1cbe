"""Which model answers a scenario, in the words of `baton run`'s start banner.

Online every call goes to Claude (and, with `--record`, its replies go to the scenario's
recording); offline a scenario is answered by its recording, else its offline script, else
nothing (docs/recordings.md, "Precedence").
"""

from __future__ import annotations

from pathlib import Path

from baton.models.recording import RECORDING_FILE, recording_path
from baton.pipeline.offline_model import OfflineModel, shown_path
from baton.pipeline.scenario import SCENARIOS_DIR


def model_source_line(
    offline: OfflineModel | None, workspace: Path, scenario: str | None, *, record: bool
) -> str | None:
    """The banner's second line for `scenario` (submitted at start), or None: what replays
    or scripts it offline, or where `--record` writes. Blocks: reads the scenario."""
    if offline is None:
        if not record:
            return None
        where = (
            shown_path(recording_path(workspace, scenario), workspace)
            if scenario is not None
            else f"{SCENARIOS_DIR}/<scenario>/{RECORDING_FILE}"
        )
        return f"recording: model replies are appended to {where}"
    if scenario is None:
        return None
    source = offline.source_for(scenario)
    if source is None:
        return None
    verb = "replaying" if source == recording_path(workspace, scenario) else "scripted by"
    return f"offline: {verb} {shown_path(source, workspace)}"

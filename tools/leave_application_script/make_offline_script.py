"""Generate `offline_script.json`: what the offline model "says" in the leave_application run.

Run from the repository root::

    .venv/bin/python -m tools.leave_application_script

The story: Init designs the scenario (v1) and hands off; Execute writes iteration 1
(27 samples, 9 pass, a critical Layer-1 problem affecting 37% of them) and returns to Init;
Init reads the report and two failing samples, revises the design (v2) and hands off again;
Execute writes iteration 2 (25/27 pass) and completes the scenario.

The output is deterministic: no clock, no randomness, and every artifact is validated
against baton's artifact models before it is written into the script.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from baton.pipeline.artifacts import artifact_model, validate_artifact
from tools.leave_application_script._turns import Turn, build_turns
from tools.leave_application_script._world import SCENARIO_DIR

FORMAT: Final = "baton-offline-script/1"
REPO: Final = Path(__file__).resolve().parents[2]
# The script is what a scenario's user runs, so it lives in the scenario's folder, apart from
# the code that writes it.
SCRIPT_PATH: Final = REPO / SCENARIO_DIR / "offline_script.json"


def _check_artifacts(turns: dict[str, list[Turn]]) -> None:
    """Raise `InvalidArtifactError` if any `Write` of a known artifact would be refused."""
    for actor_turns in turns.values():
        for turn in actor_turns:
            for block in turn["content"]:
                if block["type"] == "tool_use" and block["name"] == "Write":
                    path, content = block["input"]["path"], block["input"]["content"]
                    model = artifact_model(path)
                    if model is not None:
                        validate_artifact(path, content, model)


def build_script() -> dict[str, Any]:
    """The whole offline script as a JSON-ready dict."""
    turns = build_turns()
    _check_artifacts(turns)
    return {"format": FORMAT, "actors": turns}


def render(script: dict[str, Any]) -> str:
    """The script as the committed file holds it."""
    return json.dumps(script, ensure_ascii=False, indent=2) + "\n"


def main() -> None:
    """Write `offline_script.json` into the scenario's folder."""
    SCRIPT_PATH.write_text(render(build_script()), encoding="utf-8")

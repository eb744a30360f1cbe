"""The leave_application script generator: where it writes, and that its output is committed."""

from __future__ import annotations

from pathlib import Path

from tools.leave_application_script import make_offline_script

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scenarios" / "leave_application" / "offline_script.json"


def test_committed_script_matches_the_generator() -> None:
    """offline_script.json is exactly what the generator produces now (no drift)."""
    committed = SCRIPT.read_text(encoding="utf-8")
    assert make_offline_script.render(make_offline_script.build_script()) == committed


def test_generator_writes_the_script_into_the_scenario_folder() -> None:
    """The generator writes the script scenario.toml names, not a file beside its own code."""
    assert SCRIPT == make_offline_script.SCRIPT_PATH

"""The generator of `scenarios/leave_application/offline_script.json`.

The scenario's folder holds only what a user of baton writes (`scenario.toml` and the script
the offline model replays); the code that builds the script's sample content lives here.
Regenerate the script from the repository root with::

    .venv/bin/python -m tools.leave_application_script
"""

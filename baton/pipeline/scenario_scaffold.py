"""`baton new NAME`: a scenario folder to start from (docs/scenarios.md, "Layout").

It writes `scenarios/<name>/` with a commented `scenario.toml` that passes the submit-time
check as it is, a copy of each built-in agent's prompt under `prompts/` (where a scenario's
own prompts are found, so editing them changes this scenario only), and an `inputs/` folder
for the reference files the agents read. An existing folder is never touched.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from baton.agents.prompt_files import PROMPTS_DIR
from baton.pipeline.defaults import DEFAULT_BUDGETS
from baton.pipeline.errors import CommandLineError, InvalidScenarioNameError, ScenarioExistsError
from baton.pipeline.roles import EXECUTE, INIT, shipped_prompt
from baton.pipeline.scenario import (
    SCENARIO_FILE,
    IterationPolicy,
    scenario_dir,
)
from baton.pipeline.scenario_names import check_scenario_name
from baton.pipeline.scenario_state import SCHEDULER

INPUTS_DIR = "inputs"
ROLES = (INIT, EXECUTE, SCHEDULER)
"""Every agent whose prompt a scenario may replace, in pipeline order."""


@dataclass(frozen=True)
class Scaffold:
    """What `new_scenario` wrote: the folder and its files, workspace-relative."""

    name: str
    folder: Path
    files: tuple[Path, ...]


def scenario_toml(name: str) -> str:
    """The commented `scenario.toml` of a new scenario; the defaults are read from the code,
    so the comments say what a left-out key really gets."""
    policy = IterationPolicy()
    init, execute = DEFAULT_BUDGETS[INIT], DEFAULT_BUDGETS[EXECUTE]
    return f"""\
# The {name} scenario, made by `baton new {name}`. Edit the keys below, the prompts in
# prompts/ and the files in inputs/, then run it (README.md, "Your own scenario").
# Every key is described in docs/scenarios.md, "scenario.toml"; a key left out takes the
# default its comment names. The file is checked when the scenario is submitted: an unknown
# key or a bad value refuses the submit with one line naming the file and the key.

# What Init designs evaluation samples for: the LLM assistant under evaluation (who uses it,
# the tools it may call, the rules it must follow) and what the samples must cover.
# Required. `baton submit {name} --requirement TEXT` replaces it for one submission.
requirement = \"\"\"Generate evaluation samples for <the assistant under evaluation: who uses \\
it, its tools, the rules it must follow>. Read the reference files in \\
scenarios/{name}/{INPUTS_DIR}/ first.\"\"\"

# false (default): each Init → Execute handoff waits for `baton approve {name}` or
# `baton reject {name} --reason R` (docs/handoffs.md, "Approval"). true: it goes on at once.
# `baton run --submit {name} --auto-approve` approves for one run whatever this says.
auto_approve = false

# Without ANTHROPIC_API_KEY the offline model answers from, in order: recording.jsonl in
# this folder (made by `baton run --record`), then this script, relative to this folder
# (default: none; format in docs/scenarios.md, "Offline script"). With neither, an offline
# submit is refused (docs/recordings.md, "Precedence").
# offline_script = "offline_script.json"

# When the scenario is done, goes back to Init, or fails (docs/handoffs.md, "Iteration
# policy").
[policy]
# An iteration whose success rate (passed / total samples) reaches this completes the
# scenario (default {policy.success_threshold}; above 0, at most 1).
success_threshold = {policy.success_threshold}
# Execute's iteration goes back to Init when critical Layer-1 (design) problems affect more
# than this share of the samples (default {policy.layer1_critical_share:.2f}; 0 to 1).
layer1_critical_share = {policy.layer1_critical_share:.2f}
# After this many iterations without success the scenario ends `failed`, naming the last
# report (default {policy.max_iterations}).
max_iterations = {policy.max_iterations}

# The spend cap of each run of this scenario, in USD at list prices (docs/models.md,
# "Prices"): once reached, no further model call is made and the scenario stops until the
# cap is raised (default: `[scenario] max_cost_usd` in baton.toml, else no cap).
# [scenario]
# max_cost_usd = 5.0

# Context budgets of this scenario's agents: each key replaces the agent's own (baton.toml,
# else the built-in default shown) for this scenario only (docs/context.md, "Budgets").
# Other budget keys (max_output_tokens, summary_max_tokens, ...) are allowed too.
# [actors.init]
# context_window = {init["context_window"]:_}
# compact_threshold = {init["compact_threshold"]:_}
# keep_recent_steps = {init["keep_recent_steps"]}
#
# [actors.execute]
# context_window = {execute["context_window"]:_}
# compact_threshold = {execute["compact_threshold"]:_}
# keep_recent_steps = {execute["keep_recent_steps"]}
"""


def inputs_readme(name: str) -> str:
    """What `inputs/README.md` tells the user about the folder."""
    return f"""\
# Inputs of the {name} scenario

Put here what the agents should know and the requirement cannot say in a sentence: the
assistant's system prompt or product description, its tool list or API reference, business
rules, example conversations, a style guide. Plain text files (Markdown, YAML, JSON, CSV)
work best.

The agents do not receive these files with their work order: they read them with their
`Read` and `List` tools, by path from the workspace root (`scenarios/{name}/{INPUTS_DIR}/...`).
Say which files to read in `requirement` (`scenario.toml`) or in `prompts/init.md`; the
requirement `baton new` wrote already points here. Reads are limited to the workspace
(docs/handoffs.md, "What `Read` opens").

A file changed after `baton run --record` makes the recording's replay differ from the run
it recorded (docs/recordings.md, "Divergence").
"""


def new_scenario(workspace: Path, name: str) -> Scaffold:
    """Write `scenarios/<name>/` in `workspace` (created if missing).

    `InvalidScenarioNameError` for a name that breaks the rule, `ScenarioExistsError` when
    the folder (or anything at its path) exists; a write that fails midway removes the folder
    it created, so a retry starts clean.
    """
    check_scenario_name(name)
    folder = scenario_dir(workspace, name)
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        folder.mkdir()  # exclusive: two `baton new` of one name cannot both write it
    except FileExistsError:
        raise ScenarioExistsError(name, folder) from None
    contents: dict[Path, str] = {
        Path(SCENARIO_FILE): scenario_toml(name),
        **{Path(PROMPTS_DIR, f"{role}.md"): shipped_prompt(role) for role in ROLES},
        Path(INPUTS_DIR, "README.md"): inputs_readme(name),
    }
    try:
        for relative, text in contents.items():
            path = folder / relative
            path.parent.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    base = folder.relative_to(workspace)
    return Scaffold(name=name, folder=base, files=tuple(base / p for p in contents))


def scaffold_report(scaffold: Scaffold, workspace: str) -> str:
    """What `baton new` prints: every file written, then the commands that come next."""
    name = scaffold.name
    where = "" if workspace == "." else f" --workspace {workspace}"
    lines = [f"created {scaffold.folder}/", *(f"  {path}" for path in scaffold.files)]
    lines += [
        "next:",
        f"  1. edit {scaffold.folder / SCENARIO_FILE} (requirement, policy), "
        f"{scaffold.folder / PROMPTS_DIR}/*.md and put reference files in "
        f"{scaffold.folder / INPUTS_DIR}/",
        "  2. export ANTHROPIC_API_KEY=...",
        f"  3. baton run{where} --record --submit {name}",
        f"  4. baton approve{where} {name}   (in another terminal; `baton status` shows "
        "what waits)",
        f"  5. later, without a key: baton run{where} --submit {name}   (replays the recording)",
        'docs: README.md, "Your own scenario"; docs/scenarios.md',
    ]
    return "\n".join(lines)


def new_scenario_command(workspace: str, name: str) -> str:
    """`baton new`: scaffold, and the report to print; a bad name is a command-line error
    (exit 2), an existing folder a failure (exit 1)."""
    try:
        scaffold = new_scenario(Path(workspace), name)
    except InvalidScenarioNameError as error:
        raise CommandLineError(str(error)) from None
    return scaffold_report(scaffold, workspace)

"""The pipeline: Init, Execute and the Scheduler over scenarios — roles and prompts, work
orders, handoff packages and the AgentContext, scenarios and their iteration policy, spend,
and the deployment's configuration.

Every name is imported on first use: importing one module of the package (`baton show` reads
a handoff package with `baton.pipeline.packages`) runs this file first, and must not load
the configuration, the agents and the model clients behind it (docs/architecture.md, "What
a command imports")."""

from typing import TYPE_CHECKING

from baton._lazy import lazy_exports

if TYPE_CHECKING:
    from baton.agents.messages import Prompt
    from baton.pipeline.config import BatonConfig, load_config, parse_config
    from baton.pipeline.messages import Approve, Reject, ScenarioQuery, StartScenario
    from baton.pipeline.scenario_state import ScenarioState

__all__ = [
    "Approve",
    "BatonConfig",
    "Prompt",
    "Reject",
    "ScenarioQuery",
    "ScenarioState",
    "StartScenario",
    "load_config",
    "parse_config",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "Prompt": "baton.agents.messages",
        "BatonConfig": "baton.pipeline.config",
        "load_config": "baton.pipeline.config",
        "parse_config": "baton.pipeline.config",
        "Approve": "baton.pipeline.messages",
        "Reject": "baton.pipeline.messages",
        "ScenarioQuery": "baton.pipeline.messages",
        "ScenarioState": "baton.pipeline.scenario_state",
        "StartScenario": "baton.pipeline.messages",
    },
)

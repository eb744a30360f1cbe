"""The start check of the agents' models: retired ones stop, deprecated ones warn, thinking
settings the model refuses are caught before the first call."""

from __future__ import annotations

import copy
from contextlib import AsyncExitStack
from typing import Any

import pytest
from structlog.testing import capture_logs

from baton.agents.agent_config import AgentConfig
from baton.errors import ConfigError
from baton.models.check import AgentModel, check_agent_models
from baton.models.errors import RetiredModelError
from baton.models.scripted import ScriptedModel
from baton.pipeline.config import parse_config
from baton.testing import DEFAULT_MODELS, MessagesAPIStandIn


def config(actor: str = "execute", **values: Any) -> AgentConfig:
    return parse_config({"actors": {actor: values}}).agent(actor)


async def check_online(actor: str, values: dict[str, Any], api: MessagesAPIStandIn) -> list[str]:
    agent_config = config(actor, **values)
    async with api.model(agent_config.model) as model:
        return await check_agent_models([AgentModel(actor, agent_config, model)])


async def test_the_default_agents_pass_on_the_current_models() -> None:
    """The default config (Opus 5.5, Sonnet 5.5, Haiku 5.5) passes with no warning."""
    defaults = parse_config({})
    async with MessagesAPIStandIn() as api, AsyncExitStack() as models:
        agents = []
        for name in ("init", "execute", "scheduler"):
            agent_config = defaults.agent(name)
            model = await models.enter_async_context(api.model(agent_config.model))
            agents.append(AgentModel(name, agent_config, model))
        assert [] == await check_agent_models(agents)
        looked_up = sorted(r.path for r in api.requests_to("models"))
    assert [
        "/v1/models/claude-haiku-5-5",
        "/v1/models/claude-opus-5-5",
        "/v1/models/claude-sonnet-5-5",
    ] == looked_up


async def test_a_deprecated_model_is_a_warning_with_its_date_and_its_successor() -> None:
    """Sonnet 4.5 (deprecated) yields one warning line: retirement date, the model to set."""
    async with MessagesAPIStandIn() as api:
        with capture_logs() as logs:
            warnings = await check_online(
                "execute", {"model": "claude-sonnet-4-5", "thinking": "off"}, api
            )
    assert [
        "actor 'execute': model 'claude-sonnet-4-5' is deprecated and retires on 2026-11-30; "
        'set [actors.execute] model = "claude-sonnet-5-5" in baton.toml'
    ] == warnings
    (logged,) = [line for line in logs if line["log_level"] == "warning"]
    assert ("model.deprecated", "execute", "claude-sonnet-5-5") == (
        logged["event"],
        logged["actor"],
        logged["replacement"],
    )


async def test_a_retired_model_stops_the_start_naming_what_to_set() -> None:
    """Opus 4.1 (retired) is a RetiredModelError naming the actor, the model and Opus 5.5."""
    async with MessagesAPIStandIn() as api:
        with pytest.raises(RetiredModelError) as raised:
            await check_online("init", {"model": "claude-opus-4-1", "thinking": "off"}, api)
        sent = [r.path for r in api.requests if r.endpoint == "messages"]
    assert (
        "actor 'init': model 'claude-opus-4-1' is retired; "
        'set [actors.init] model = "claude-opus-5-5" in baton.toml'
    ) == str(raised.value)
    assert [] == sent  # caught before any call


async def test_the_successor_comes_from_the_models_api_list() -> None:
    """The advice is the newest active model of the line the Models API lists, not a table."""
    models = dict(DEFAULT_MODELS)
    models["claude-opus-5-5"] = models["claude-opus-5-5"].model_copy(
        update={"lifecycle": "retired"}
    )
    async with MessagesAPIStandIn(models=models) as api:
        with pytest.raises(RetiredModelError, match='model = "claude-opus-5"'):
            await check_online("init", {"model": "claude-opus-5-5"}, api)


async def test_a_model_the_api_does_not_know_stops_the_start_too() -> None:
    """An id the Models API answers 404 for is refused as unknown, with general advice."""
    async with MessagesAPIStandIn() as api:
        with pytest.raises(RetiredModelError, match="is not known to the Models API") as raised:
            await check_online("init", {"model": "claude-opus-9-9", "thinking": "off"}, api)
    assert 'model = "claude-opus-5-5"' in str(raised.value)  # its line guessed from the id


@pytest.mark.parametrize(
    ("values", "advice"),
    [
        ({"model": "claude-opus-5-5", "thinking": "off"}, "thinking = 'adaptive'"),
        ({"model": "claude-opus-4-5", "thinking": "adaptive"}, "a budget such as 8000"),
        ({"model": "claude-sonnet-5-5", "thinking": 8000}, "takes no manual thinking budget"),
        ({"model": "claude-haiku-4-5", "thinking": "off", "effort": "high"}, "no effort level"),
        ({"model": "claude-opus-4-5", "thinking": "off", "effort": "xhigh"}, "one of low"),
    ],
)
async def test_a_thinking_setting_the_model_refuses_stops_the_start(
    values: dict[str, Any], advice: str
) -> None:
    """off on Opus 5.5, adaptive on Opus 4.5, a budget on Sonnet 5.5, effort on Haiku 4.5:
    each is a ConfigError saying what to set, before any request."""
    async with MessagesAPIStandIn() as api:
        with pytest.raises(ConfigError, match=advice):
            await check_online("init", values, api)
        assert [] == api.requests_to("messages")


async def test_the_models_api_capabilities_decide_over_the_model_id() -> None:
    """A model whose capabilities say it takes `disabled` thinking passes with thinking off,
    although baton's own knowledge of the id says it always thinks."""
    models = dict(DEFAULT_MODELS)
    card = models["claude-opus-5-5"]
    capabilities = copy.deepcopy(card.capabilities)
    capabilities["thinking"]["types"]["disabled"] = {"supported": True}
    models["claude-opus-5-5"] = card.model_copy(update={"capabilities": capabilities})
    async with MessagesAPIStandIn(models=models) as api:
        assert [] == await check_online(
            "init", {"model": "claude-opus-5-5", "thinking": "off"}, api
        )


async def test_offline_nothing_is_looked_up_but_the_thinking_setting_is_checked() -> None:
    """On the offline model a deprecated name passes silently (no network), while a thinking
    setting the configured model refuses is still caught from its id."""
    offline = ScriptedModel()
    deprecated = config("execute", model="claude-sonnet-4-5", thinking="off")
    assert [] == await check_agent_models([AgentModel("execute", deprecated, offline)])
    refused = config("init", model="claude-opus-5-5", thinking="off")
    with pytest.raises(ConfigError, match="always thinks"):
        await check_agent_models([AgentModel("init", refused, offline)])


@pytest.mark.parametrize(
    ("values", "advice"),
    [
        (
            {"strategy": "server"},
            "actor 'execute': claude-haiku-4-5 does not support compact_20260112, which "
            'strategy = "server" needs; set [actors.execute] strategy = "summarize" in '
            "baton.toml, or a model that supports it",
        ),
        (
            {"tool_result_clearing": "server"},
            "actor 'execute': claude-haiku-4-5 does not support clear_tool_uses_20250919, which "
            'tool_result_clearing = "server" needs; set [actors.execute] tool_result_clearing = '
            '"client" in baton.toml, or a model that supports it',
        ),
    ],
)
async def test_server_context_management_the_model_lacks_stops_the_start(
    values: dict[str, Any], advice: str
) -> None:
    """A model whose Models API row says it lacks the edit an actor's server setting needs
    stops the start with one line naming the actor, the model and what to set; nothing is
    sent to the Messages API."""
    models = dict(DEFAULT_MODELS)
    card = models["claude-haiku-4-5"]
    capabilities = copy.deepcopy(card.capabilities)
    capabilities["context_management"]["clear_tool_uses_20250919"] = {"supported": False}
    models["claude-haiku-4-5"] = card.model_copy(update={"capabilities": capabilities})
    settings = {"model": "claude-haiku-4-5", "thinking": "off", **values}
    async with MessagesAPIStandIn(models=models) as api:
        with pytest.raises(ConfigError) as raised:
            await check_online("execute", settings, api)
        assert [] == api.requests_to("messages")
    assert advice == str(raised.value)


async def test_server_context_management_passes_where_the_model_has_it() -> None:
    """Both server settings pass on Sonnet 5.5 online, and offline from the id alone; offline
    an id that lacks compaction is refused all the same."""
    both = {"strategy": "server", "tool_result_clearing": "server"}
    async with MessagesAPIStandIn() as api:
        assert [] == await check_online("execute", {"model": "claude-sonnet-5-5", **both}, api)
    offline = ScriptedModel()
    fine = config("execute", model="claude-sonnet-5-5", **both)
    assert [] == await check_agent_models([AgentModel("execute", fine, offline)])
    lacking = config("execute", model="claude-opus-4-5", thinking="off", strategy="server")
    with pytest.raises(ConfigError, match="claude-opus-4-5 does not support compact_20260112"):
        await check_agent_models([AgentModel("execute", lacking, offline)])

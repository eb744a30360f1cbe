"""How full each agent's context is, for `status`: a registry of per-actor providers.

The runtime knows nothing about context windows (it must not know what an LLM is). An agent
actor that owns a context is given `runtime.context_providers` when it is spawned, registers a
provider in `on_start` and removes it in `on_stop`:

    async def on_start(self) -> None:
        self.providers.register(self.actor_name, self.context_fill)

    async def on_stop(self) -> None:
        self.providers.unregister(self.actor_name, self.context_fill)

The control API calls the provider of each actor when it builds a status report.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from baton._log import get_logger
from baton.runtime.context_fill import ContextFill

log = get_logger(__name__)


ContextProvider = Callable[[], ContextFill | Mapping[str, int]]
"""Returns a `ContextFill`, or the mapping of its three numbers (agents outside `runtime/`)."""


class ContextProviders:
    """Actor name → a callable reporting that actor's `ContextFill` right now."""

    def __init__(self) -> None:
        self._providers: dict[str, ContextProvider] = {}

    def register(self, actor: str, provider: ContextProvider) -> None:
        """Report `actor`'s context through `provider`; replaces an earlier one (a restart)."""
        self._providers[actor] = provider

    def unregister(self, actor: str, provider: ContextProvider | None = None) -> None:
        """Stop reporting `actor`; with `provider`, only if it is still the registered one."""
        current = self._providers.get(actor)
        # A restarted instance registers before the old one's on_stop may run: keep the new one.
        if current is not None and (provider is None or current == provider):
            del self._providers[actor]

    def fill(self, actor: str) -> ContextFill | None:
        """`actor`'s context fill, or None if it reports none or its provider failed."""
        provider = self._providers.get(actor)
        if provider is None:
            return None
        try:
            reported = provider()
            if isinstance(reported, ContextFill):
                return reported
            return ContextFill.of(
                reported["context_tokens"],
                reported["context_window"],
                reported["compact_threshold"],
            )
        except Exception as exc:  # noqa: BLE001 - a broken provider must not break `status`
            log.warning("context_status.provider_failed", actor=actor, error=repr(exc))
            return None

    def __contains__(self, actor: object) -> bool:
        return actor in self._providers

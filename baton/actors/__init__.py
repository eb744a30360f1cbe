"""baton.actors."""

__all__: list[str] = []

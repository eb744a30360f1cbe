"""baton.runtime."""

__all__: list[str] = []

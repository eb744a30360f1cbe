"""baton: an async actor runtime for long multi-agent Claude pipelines."""

__all__: list[str] = []

"""baton.mailboxes."""

__all__: list[str] = []

"""What a storage path may be: a relative, `/`-separated key that means the same object in a
folder and in a bucket (docs/storage.md, "Paths").

Checked before any backend sees it, so every backend refuses the same paths with the same
`StoragePathError`: a path that could leave the store's root (`..`, absolute), one a folder
and a bucket would read differently (`.`, empty parts, a backslash, which some S3 servers
take for a `/`), and one neither can hold (control characters, a part over 255 bytes, a key
over S3's 1024 bytes).
"""

from __future__ import annotations

from baton.storage.errors import StoragePathError

MAX_KEY_BYTES = 1024
"""S3's longest key, in UTF-8 bytes."""
MAX_PART_BYTES = 255
"""The longest file name most local filesystems take, in bytes."""


def _problem(path: str) -> str | None:
    if not path:
        return "is empty"
    if any(ord(char) < 32 or ord(char) == 127 for char in path):
        return "contains a control character"
    if "\\" in path:
        return "contains a backslash; separate folders with '/'"
    if path.startswith("/"):
        return "is absolute"
    if len(path.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
        return f"is over {MAX_KEY_BYTES} bytes"
    for part in path.split("/"):
        if part in ("", "."):
            return "has an empty or '.' part"
        if part == "..":
            return "contains '..'"
        if len(part.encode("utf-8", "surrogatepass")) > MAX_PART_BYTES:
            return f"has a part over {MAX_PART_BYTES} bytes"
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid Unicode text"
    return None


def check_key(path: str) -> str:
    """`path` itself when it may name an object; `StoragePathError` saying why not."""
    problem = _problem(path)
    if problem is not None:
        raise StoragePathError(path, problem)
    return path


def is_key(path: str) -> bool:
    """Whether `path` may name an object (`check_key` would take it)."""
    return _problem(path) is None


def check_prefix(prefix: str) -> str:
    """A listing's prefix as a key without its trailing `/` (`""`: the whole store);
    `StoragePathError` when the rest is no key. `scenarios/a` and `scenarios/a/` are the
    same folder: a prefix never matches part of a name."""
    stripped = prefix.removesuffix("/")
    return check_key(stripped) if stripped else ""


def join_key(prefix: str, name: str) -> str:
    """`name` under the folder `prefix` (`""`: the root)."""
    return f"{prefix}/{name}" if prefix else name

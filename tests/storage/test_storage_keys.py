"""What a storage path may be (docs/storage.md, "Paths")."""

from __future__ import annotations

import pytest

from baton.storage import check_key, check_prefix, is_key
from baton.storage.errors import StoragePathError


@pytest.mark.parametrize(
    "path",
    [
        "a",
        "scenarios/demo/design.md",
        ".hidden/.file",
        "a b/c-d_e.f",
        "café/日本語/😀",
        "x" * 255,
        "/".join(["y" * 200] * 5),
    ],
)
def test_a_relative_key_is_taken_as_it_is(path: str) -> None:
    """A relative `/`-separated path of plain names is a key, unchanged."""
    assert (path, True) == (check_key(path), is_key(path))


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("", "is empty"),
        ("/a", "is absolute"),
        ("a/../b", "contains '..'"),
        ("a/./b", "has an empty or '.' part"),
        ("a//b", "has an empty or '.' part"),
        ("a/", "has an empty or '.' part"),
        ("a\x7fb", "contains a control character"),
        ("a\nb", "contains a control character"),
        ("a\\b", "contains a backslash; separate folders with '/'"),
        ("é" * 128, "has a part over 255 bytes"),
        ("/".join(["y" * 250] * 5), "is over 1024 bytes"),
        ("a\udcffb", "is not valid Unicode text"),
    ],
)
def test_a_path_that_is_no_key_is_refused_saying_why(path: str, problem: str) -> None:
    """Each rule refuses with its own reason, and names the path."""
    with pytest.raises(StoragePathError) as caught:
        check_key(path)
    assert (path, problem, False) == (caught.value.path, caught.value.problem, is_key(path))
    assert str(caught.value).startswith(f"storage path {path!r} {problem}; give a relative")


@pytest.mark.parametrize(
    ("prefix", "folder"),
    [("", ""), ("/", ""), ("scenarios", "scenarios"), ("scenarios/demo/", "scenarios/demo")],
)
def test_a_prefix_is_a_folder_with_or_without_its_slash(prefix: str, folder: str) -> None:
    """A listing's prefix drops one trailing `/`; empty is the root."""
    assert folder == check_prefix(prefix)

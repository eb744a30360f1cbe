"""`[storage] url`: what it may be, where it is read from, and the store it opens
(docs/storage.md, "The url")."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from baton.errors import ConfigError
from baton.pipeline.config import load_config
from baton.storage import (
    BucketUrl,
    LocalStorage,
    ObjectStorage,
    StorageConfig,
    open_storage,
    parse_storage_url,
)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("", None),
        ("s3://my-bucket", BucketUrl("my-bucket", "")),
        ("s3://my-bucket/", BucketUrl("my-bucket", "")),
        ("s3://my-bucket/baton", BucketUrl("my-bucket", "baton")),
        ("s3://my.bucket_2/team/baton/", BucketUrl("my.bucket_2", "team/baton")),
    ],
)
def test_a_storage_url_names_a_bucket_and_a_prefix(url: str, expected: BucketUrl | None) -> None:
    """Empty is the workspace; `s3://BUCKET[/PREFIX]` a bucket and the folder in it."""
    assert expected == parse_storage_url(url)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("/srv/store", "is not an S3 url"),
        ("file:///srv/store", "is not an S3 url"),
        ("gs://bucket/x", "is not an S3 url"),
        ("s3://", "is not a bucket name"),
        ("s3://ab", "is not a bucket name"),
        ("s3://My-Bucket", "is not a bucket name"),
        ("s3://bucket-/x", "is not a bucket name"),
        ("s3://user:secret@bucket/x", "more than a bucket and a prefix"),
        ("s3://bucket:9000/x", "more than a bucket and a prefix"),
        ("s3://bucket/x?versionId=3", "more than a bucket and a prefix"),
        ("s3://bucket/a/../b", "the prefix contains '..'"),
        ("s3://bucket//a", "the prefix is absolute"),
    ],
)
def test_a_url_that_names_no_store_says_how_to_write_one(url: str, says: str) -> None:
    """Anything else is refused with a message saying what is wrong."""
    with pytest.raises(ValueError, match="s3://") as caught:
        parse_storage_url(url)
    assert says in str(caught.value)


def test_open_storage_picks_the_backend(tmp_path: Path) -> None:
    """No url (or an empty one) opens the workspace folder; `s3://` a bucket's prefix."""
    opened = [open_storage(None, tmp_path), open_storage("", tmp_path)]
    bucket = open_storage("s3://my-bucket/team/baton", tmp_path, {"AWS_REGION": "eu-west-1"})
    assert [str(tmp_path), str(tmp_path), "s3://my-bucket/team/baton"] == [
        store.url for store in [*opened, bucket]
    ]
    assert [LocalStorage, LocalStorage, ObjectStorage] == [
        type(store) for store in [*opened, bucket]
    ]


def test_open_storage_refuses_a_bad_url_as_a_config_error(tmp_path: Path) -> None:
    """A bad url given straight to `open_storage` is a one-line `ConfigError`."""
    with pytest.raises(ConfigError, match=r"^storage.url 'ftp://x' is not an S3 url"):
        open_storage("ftp://x", tmp_path)


def test_an_s3_url_without_the_extra_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without obstore an `s3://` url is one line naming `baton[s3]`; the folder still opens."""
    monkeypatch.setitem(sys.modules, "obstore", None)
    monkeypatch.delitem(sys.modules, "baton.storage.object_storage", raising=False)
    with pytest.raises(ConfigError) as caught:
        open_storage("s3://my-bucket/baton", tmp_path)
    assert (
        "storage s3://my-bucket/baton needs the S3 client, which is not installed: "
        "pip install 'baton[s3]'"
    ) == str(caught.value)
    assert isinstance(open_storage("", tmp_path), LocalStorage)


# --- the configuration -------------------------------------------------------------------------


def test_the_url_comes_from_baton_toml_then_the_environment_then_the_command_line(
    tmp_path: Path,
) -> None:
    """The url: baton.toml, then `BATON_STORAGE__URL`, then `--storage`; empty by default."""
    empty = load_config(tmp_path, environ={})
    (tmp_path / "baton.toml").write_text('[storage]\nurl = "s3://from-file/a"\n')
    from_file = load_config(tmp_path, environ={})
    from_env = load_config(tmp_path, environ={"BATON_STORAGE__URL": "s3://from-env/b"})
    from_flag = load_config(
        tmp_path,
        environ={"BATON_STORAGE__URL": "s3://from-env/b"},
        overrides={"storage": {"url": "s3://from-flag/c"}},
    )
    assert ["", "s3://from-file/a", "s3://from-env/b", "s3://from-flag/c"] == [
        config.storage.url for config in (empty, from_file, from_env, from_flag)
    ]


@pytest.mark.parametrize(
    ("toml", "says"),
    [
        ('[storage]\nurl = "s3:/oops"\n', "storage.url: Value error, 's3:/oops'"),
        ('[storage]\nbucket = "x"\n', "unknown key 'storage.bucket'"),
        ("[storage]\nurl = 5\n", "storage.url: Input should be a valid string"),
    ],
)
def test_a_bad_storage_section_is_one_line_naming_the_key(
    tmp_path: Path, toml: str, says: str
) -> None:
    """A wrong url, an unknown key or a wrong type in `[storage]` is one line naming it."""
    (tmp_path / "baton.toml").write_text(toml)
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, environ={})
    message = str(caught.value)
    assert (True, 1) == (says in message, len(message.splitlines())), message


def test_the_storage_section_is_strict() -> None:
    """`StorageConfig` takes `url` alone and checks it."""
    assert "s3://bucket-a/x" == StorageConfig(url="s3://bucket-a/x").url
    with pytest.raises(ValueError, match="is not an S3 url"):
        StorageConfig(url="nope")

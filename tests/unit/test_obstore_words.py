"""obstore's words that remote/ matches (remote/obstore_words.py): the pinned obstore still says each
one it can say without a server, and the release they were read from is the one installed."""

from __future__ import annotations

import os
from datetime import timedelta
from importlib.metadata import version

import pytest

from imagefolder_lmdb.remote import obstore_words
from imagefolder_lmdb.remote.obstore_words import says_denied, says_no_container

obstore = pytest.importorskip("obstore")
from obstore.store import from_url  # noqa: E402

#: A closed loopback port: a request to it is refused at once.
CLOSED = "http://127.0.0.1:9"


def s3_error(client: dict[str, str]) -> str:
    """obstore's message for a GET from an S3 endpoint on the closed port, no retry."""
    config = {"endpoint": CLOSED, "access_key_id": "a", "secret_access_key": "b", "region": "us-east-1"}
    retry = {"max_retries": 0, "retry_timeout": timedelta(seconds=1)}
    store = from_url("s3://bucket", config=config, client_options=client, retry_config=retry)  # type: ignore[call-overload]
    with pytest.raises(Exception) as raised:  # obstore's GenericError: its words are the test
        obstore.get(store, "key")
    return str(raised.value)


def test_the_words_were_read_from_the_installed_obstore() -> None:
    assert version("obstore") == obstore_words.READ_FROM, "read remote/obstore_words.py's words again, then its pin"


def test_obstore_still_says_each_word(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in os.environ if name.startswith(("AZURE_", "AWS_"))]:
        monkeypatch.delenv(name)
    with pytest.raises(Exception) as no_account:
        from_url("az://container/key")
    assert obstore_words.NO_AZURE_ACCOUNT in str(no_account.value)
    assert obstore_words.DEBUG_SOURCE in str(no_account.value)
    plain_http = s3_error({})
    assert obstore_words.BUILDER_ERROR in plain_http
    assert obstore_words.requested_url(plain_http) == f"{CLOSED}/bucket/key"
    refused = s3_error({"allow_http": "true"})
    assert any(words in refused for words in obstore_words.NOT_SENT), refused


@pytest.mark.parametrize(
    ("text", "no_container", "denied"),
    [
        ("Client error with status 404 Not Found: <Code>NoSuchBucket</Code>", True, False),
        ("Client error with status 404 Not Found: no body", True, False),
        ("Client error with status 403 Forbidden: <Code>SignatureDoesNotMatch</Code>", False, True),
        ("<Code>AccessDenied</Code>", False, True),
        # a signature refused, its request id and time holding the digits 404 and 403: neither
        ("status 400: SignatureDoesNotMatch <RequestId>1874040A4031B</RequestId> 14:04:03.404Z", False, False),
    ],
)  # fmt: skip
def test_a_status_is_read_as_a_word_never_from_digits_inside_an_id(text: str, no_container: bool, denied: bool) -> None:
    assert says_no_container(text) is no_container and says_denied(text) is denied

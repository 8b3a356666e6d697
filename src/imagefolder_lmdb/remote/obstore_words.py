"""obstore's own words that remote/ matches (its errors carry no code for these), in one place, with
the release they were read from; tests/unit/test_obstore_words.py makes the pinned obstore say each
one it can without a server (no account, a plain-http endpoint refused, a refused connection) and
checks it is still recognised.
"""

from __future__ import annotations

import re

#: The obstore release these words were read from: requirements-dev.txt's pin (the test checks they agree).
READ_FROM = "0.12.1"

#: Where obstore's message ends and its debug dump begins.
DEBUG_SOURCE = "\n\nDebug source"
#: The URL a failed request went to: ``Error performing GET http://h:p/b/k`` (not "Error performing token request:").
REQUESTED = re.compile(r"Error performing \w+ (https?://\S+)")
#: An az:// URL without a storage account configured.
NO_AZURE_ACCOUNT = "Account must be specified"
#: The HTTP client refused the endpoint's URL (a plain-http endpoint not allowed).
BUILDER_ERROR = "builder error"
#: The request never reached a server: refused, unreachable, or its name unknown.
NOT_SENT = ("error sending request", "error trying to connect", "dns error")


#: A store's answer that the bucket or container is not there: its error code, or the status 404 on its
#: own (never digits inside a request id or a timestamp, which come and go with each request).
NO_CONTAINER = re.compile(r"NoSuchBucket|ContainerNotFound|(?<![\w.:-])404(?![\w.:-])")
#: A store's answer that the credentials may not do this: its error code, or the status 403 on its own.
DENIED = re.compile(r"AccessDenied|(?<![\w.:-])403(?![\w.:-])")


def says_no_container(text: str) -> bool:
    """Whether obstore's message says the bucket or container does not exist."""
    return NO_CONTAINER.search(text) is not None


def says_denied(text: str) -> bool:
    """Whether obstore's message says the credentials were refused."""
    return DENIED.search(text) is not None


def requested_url(text: str) -> str | None:
    """The URL obstore's message says it requested, None where it names none."""
    found = REQUESTED.search(text)
    return found.group(1) if found else None

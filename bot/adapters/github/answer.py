"""A `requests.Response` of the GitHub adapter, handed to the pure rules of sansio.py.

What an answer means is decided in sansio.py from its status, headers and body; the one
thing only the I/O side knows is the wait GitHub's limits ask after the transport's own
attempts (transport.retry_after), which is read here with them.
"""

from __future__ import annotations

import requests

from .sansio import Answer, read_answer, refusal
from .transport import retry_after

__all__ = ["Answer", "answer_of", "refusal"]


def answer_of(response: requests.Response | None, status: int | None = None) -> Answer:
    """The answer `response` is (None: no answer came, `status` the code github3 kept)."""
    if response is None:
        return Answer(status or 0, "", {})
    return read_answer(response.status_code, response.headers, response.content, wait=retry_after(response))

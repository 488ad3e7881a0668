"""What a GitHub answer means (bot/adapters/github/sansio.py: `refusal`, `decipher`), on GitHub's own messages as
its documentation and its users' trackers record them."""

from __future__ import annotations

import time

import pytest

from bot.adapters.github.dashboard import render
from bot.adapters.github.sansio import Answer, Page, decipher, is_too_large, message_of, next_page, refusal
from bot.app.conversation import Row
from bot.core.errors import (
    ConfigError,
    CredentialsError,
    PermissionRefused,
    RefusedError,
    RuleRefused,
    TransientError,
    kind_of,
)
from bot.core.proposal.text import MAX_BODY

IN_AN_HOUR = "an hour from when the test runs"  # filled in by the test: collection may be long before


@pytest.mark.parametrize(
    ("status", "message", "headers", "kind", "wait"),
    [
        # https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api
        (403, "You have exceeded a secondary rate limit.", {"Retry-After": "30"}, TransientError, 30.0),
        (
            403,
            "You have exceeded a secondary rate limit.",
            {"x-ratelimit-remaining": "4000", "x-ratelimit-reset": IN_AN_HOUR},
            TransientError,
            60.0,
        ),  # not the reset an hour away: at least a minute
        (
            403,
            "API rate limit exceeded for installation ID 7.",
            {"x-ratelimit-remaining": "0", "x-ratelimit-reset": IN_AN_HOUR},
            TransientError,
            3600.0,
        ),
        (429, "", {"Retry-After": "5"}, TransientError, 5.0),
        (403, "Resource not accessible by integration", {}, PermissionRefused, None),
        (403, "Repository was archived so is read-only.", {}, RuleRefused, None),
        (
            422,
            "refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yaml` without "
            "`workflows` permission",
            {},
            PermissionRefused,
            None,
        ),
        (
            401,
            "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued",
            {},
            CredentialsError,
            None,
        ),
        (404, "Not Found", {}, ConfigError, None),
        (422, "Repository rule violations found\n\nCannot force-push to this branch\n\n", {}, RefusedError, None),
        (502, "Server Error", {}, TransientError, None),
    ],
)
def test_refusals_by_what_github_says(
    status: int, message: str, headers: dict[str, str], kind: type, wait: float | None
) -> None:
    headers = {key: str(int(time.time()) + 3600) if value == IN_AN_HOUR else value for key, value in headers.items()}
    error = refusal(Answer(status, message, headers), "doing it")
    assert type(error) is kind, error
    if message and status != 404:
        assert message.split("\n")[0] in error.message  # GitHub's own words are kept
    if wait is not None:
        assert isinstance(error, TransientError) and error.retry_after == pytest.approx(wait, abs=5 + wait * 0.05)


def test_kinds_for_the_dashboard() -> None:
    assert kind_of(PermissionRefused("x")) == "permission"
    assert kind_of(CredentialsError("x")) == "credentials"
    assert "clock" in refusal(Answer(401, "'Expiration time' claim ('exp') is too far in the future", {}), "x").message


def test_messages_and_too_large() -> None:
    body = b'{"message": "Validation Failed", "errors": [{"code": "too_large"}, "x"]}'
    assert message_of(body) == "Validation Failed too_large x"
    assert message_of(b"<html>") == "<html>" and message_of(b"[1]") == ""
    assert is_too_large(Answer(403, "This API returns blobs up to 1 MB in size. too_large", {}))
    assert not is_too_large(Answer(403, "Resource not accessible by integration", {}))


def test_the_dashboard_fits_githubs_cap() -> None:
    rows = [Row(f"component-{i:04}", last_error="x" * 400) for i in range(1000)]
    text = render(rows, repository="rocm/atom")
    assert len(text) <= MAX_BODY and "more component(s) left out" in text
    assert text.startswith("<!-- wheelpin: dashboard -->") and "component-0000" in text
    small = render(rows[:2], repository="rocm/atom")
    assert "left out" not in small and "component-0001" in small


# -- decipher: one answer → data and the next page, or the typed error it means ------------


def test_decipher_reads_data_and_the_next_page() -> None:
    # https://docs.github.com/en/rest/using-the-rest-api/using-pagination-in-the-rest-api#using-link-headers
    link = (
        '<https://api.github.com/repositories/1/issues?page=2>; rel="next", '
        '<https://api.github.com/repositories/1/issues?page=5>; rel="last"'
    )
    page = decipher(200, {"link": link}, b'[{"number": 1}]', "listing issues")
    assert page == Page([{"number": 1}], "https://api.github.com/repositories/1/issues?page=2")
    assert decipher(204, {}, b"", "labelling") == Page(None, None)  # no body, no next page
    assert decipher(200, {"Link": '<https://x/?page=1>; rel="prev"'}, b"[]", "x").next is None


def test_the_next_page_is_the_link_named_next_wherever_it_stands() -> None:
    """GitHub's documented example: the previous page first, then next, last and first
    (https://docs.github.com/en/rest/using-the-rest-api/using-pagination-in-the-rest-api#using-link-headers)."""
    link = (
        '<https://api.github.com/repositories/1300192/issues?page=2>; rel="prev", '
        '<https://api.github.com/repositories/1300192/issues?page=4>; rel="next", '
        '<https://api.github.com/repositories/1300192/issues?page=515>; rel="last", '
        '<https://api.github.com/repositories/1300192/issues?page=1>; rel="first"'
    )
    assert next_page({"Link": link}) == "https://api.github.com/repositories/1300192/issues?page=4"
    assert next_page({"LINK": link.split(", ")[0]}) is None  # the last page names no next
    assert next_page({}) is None and next_page({"link": "not a link"}) is None


@pytest.mark.parametrize(
    ("status", "headers", "body", "kind"),
    [
        (403, {"Retry-After": "7"}, b'{"message": "You have exceeded a secondary rate limit."}', TransientError),
        (403, {}, b'{"message": "Resource not accessible by integration"}', PermissionRefused),
        (404, {}, b'{"message": "Not Found"}', ConfigError),
        (401, {}, b'{"message": "Bad credentials"}', CredentialsError),
        (422, {}, b'{"message": "Validation Failed", "errors": [{"code": "invalid"}]}', RefusedError),
        (502, {}, b"<html>Bad gateway</html>", TransientError),
    ],
)
def test_decipher_raises_what_github_means(status: int, headers: dict[str, str], body: bytes, kind: type) -> None:
    with pytest.raises(kind) as raised:
        decipher(status, headers, body, "reading x")
    assert "reading x" in raised.value.message
    if status == 403 and kind is TransientError:
        assert raised.value.retry_after == 7.0  # type: ignore[attr-defined]

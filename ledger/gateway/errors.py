"""OpenAI-style error bodies; every refusal says whether a retry can help."""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse


class GatewayError(Exception):
    def __init__(
        self,
        status: int,
        message: str,
        *,
        type_: str,
        code: str,
        retryable: bool,
        close: bool = False,
    ) -> None:
        super().__init__(message)
        self.close = close
        self.status = status
        self.message = message
        self.type = type_
        self.code = code
        self.retryable = retryable

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "code": self.code,
                "param": None,
                "retryable": self.retryable,
            }
        }

    def response(self) -> JSONResponse:
        # The OpenAI SDKs honour x-should-retry, so a client never retries what cannot help.
        headers = {"x-should-retry": "true" if self.retryable else "false"}
        if self.close:
            headers["connection"] = "close"
        return JSONResponse(self.body(), status_code=self.status, headers=headers)


def bad_request(message: str, code: str = "invalid_request") -> GatewayError:
    return GatewayError(400, message, type_="invalid_request_error", code=code, retryable=False)


def too_large(limit: int) -> GatewayError:
    return GatewayError(
        413,
        f"request body is larger than the gateway accepts ({limit} bytes)",
        type_="invalid_request_error",
        code="request_too_large",
        retryable=False,
        # Closing the connection spares reading (and dropping) the rest of the body.
        close=True,
    )


def credential_mismatch(message: str) -> GatewayError:
    # The operator's affair, not the model's: retrying cannot help until the key is fixed.
    return GatewayError(
        502, message, type_="api_error", code="credential_mismatch", retryable=False
    )


def unauthorized(message: str) -> GatewayError:
    return GatewayError(
        401, message, type_="authentication_error", code="invalid_api_key", retryable=False
    )


def concluded(message: str) -> GatewayError:
    return GatewayError(
        403, message, type_="permission_error", code="realm_concluded", retryable=False
    )


def budget_exceeded(message: str, *, retryable: bool) -> GatewayError:
    # 402, not 429: SDKs retry 429 on their own, and an exhausted budget never recovers.
    return GatewayError(
        402, message, type_="insufficient_quota", code="budget_exceeded", retryable=retryable
    )


def from_upstream_status(status: int, detail: str) -> GatewayError:
    """Map a provider's HTTP failure to what our client should see."""
    if status == 429:
        return GatewayError(
            429,
            f"provider rate limit: {detail}",
            type_="rate_limit_error",
            code="upstream_rate_limited",
            retryable=True,
        )
    if status in (408, 504):
        return upstream_timeout()
    if status >= 500:
        return GatewayError(
            502,
            f"provider error {status}: {detail}",
            type_="api_error",
            code="upstream_unavailable",
            retryable=True,
        )
    if status in (401, 403):
        return GatewayError(
            502,
            f"provider refused the platform's credential ({status})",
            type_="api_error",
            code="upstream_auth",
            retryable=False,
        )
    if status == 404:
        return GatewayError(
            502,
            f"provider does not know the model: {detail}",
            type_="api_error",
            code="upstream_not_found",
            retryable=False,
        )
    # Other 4xx are about the request itself (too long, bad tool schema): the model's affair.
    return GatewayError(
        400,
        f"provider rejected the request: {detail}",
        type_="invalid_request_error",
        code="upstream_bad_request",
        retryable=False,
    )


def upstream_timeout() -> GatewayError:
    return GatewayError(
        504,
        "provider did not answer in time",
        type_="api_error",
        code="upstream_timeout",
        retryable=True,
    )


def upstream_unreachable(detail: str) -> GatewayError:
    return GatewayError(
        502,
        f"provider unreachable: {detail}",
        type_="api_error",
        code="upstream_unreachable",
        retryable=True,
    )

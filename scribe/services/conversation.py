"""One user message and Scribe's reply: model calls, tool calls, lines for the user.

The reply is a stream of lines ``{kind, text, name}``: ``text`` (the assistant's prose),
``tool`` (a tool it called), ``question`` (it waits for an answer), ``draft`` (it proposes
the draft for approval), ``error`` (something went wrong, said plainly) and a last
``done``. The draft survives whatever stops a reply: a spent cap, a bad model reply.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterator
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from scribe.models import ScribeSession
from scribe.services import drafts, history, model, tools
from scribe.services.errors import ScribeError, SessionBusy, SessionClosed
from scribe.services.prompt import system_prompt
from scribe.services.sessions import endpoint_of, get_session

MAX_TEXT = 20_000
# Proposals refused for validation errors, in a row, before Scribe gives up on a reply.
MAX_FAILED_PROPOSALS = 3
# Tool calls that are not calls at all (unknown tool, arguments not JSON) in one reply.
MAX_MALFORMED = 3
# The conversation sent to the model is kept under this many characters by leaving out
# the oldest tool results (the draft itself is always one read_draft_file away).
MAX_CONTEXT_CHARS = 300_000
KEEP_RECENT = 24
OMITTED = "[an earlier tool result, left out to keep the conversation short]"
# A reply that holds its session longer than this was cut off (its process died).
REPLY_LEASE = timedelta(minutes=15)

Line = dict[str, str]


def _line(kind: str, text: str = "", name: str = "") -> Line:
    return {"kind": kind, "text": text, "name": name}


@transaction.atomic
def start_message(session_id: str, text: str, *, direct: bool = False) -> ScribeSession:
    """Check and record the user's message; refused (nothing recorded) when it cannot go.

    The session is then held for the reply (``reply`` lets go of it when it ends), so a
    second message meanwhile is refused rather than interleaved with the first.
    """
    session = get_session(session_id, for_update=True)
    if session.state == ScribeSession.State.APPROVED:
        raise SessionClosed("this session's draft is approved and saved; start a new session")
    if session.state == ScribeSession.State.CAPPED:
        raise SessionClosed(
            "this session has spent its budget cap; its draft is kept and can still be read, "
            "and a new session continues with a new cap"
        )
    now = timezone.now()
    if session.replying_since is not None and now - session.replying_since < REPLY_LEASE:
        raise SessionBusy("Scribe is still replying to the previous message; wait for its end")
    if not direct and not session.key_secret:
        raise ScribeError("this session calls a direct endpoint; only its terminal can continue it")
    text = text.strip()
    if not text:
        raise ScribeError("text: must not be empty")
    if len(text) > MAX_TEXT:
        raise ScribeError(f"text: at most {MAX_TEXT} characters")
    session.messages = [*session.messages, {"role": "user", "content": text}]
    session.transcript = [*session.transcript, _line("user", text)]
    session.replying_since = now
    session.save(update_fields=["messages", "transcript", "replying_since", "updated_at"])
    history.record(session, "user", text)
    return session


def _summary(name: str, args: dict[str, Any]) -> str:
    if "path" in args:
        return f"{name} {args['path']}"
    if "scenario" in args:
        return f"{name} {args['scenario']}"
    if "name" in args:
        return f"{name} {args['name']}"
    return name


def _parse_call(call: object) -> tuple[str, str, dict[str, Any] | None, str]:
    """``(id, name, arguments or None, why not)`` for one tool call of the reply."""
    if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
        return "", "", None, "a tool call that is not a function call"
    call_id = str(call.get("id") or "")
    name = str(call["function"].get("name") or "")
    if name not in tools.NAMES:
        return call_id, name, None, f"the model called a tool that does not exist: {name!r}"
    raw = call["function"].get("arguments") or "{}"
    try:
        args = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return call_id, name, None, f"the model called {name} with arguments that are not JSON"
    if not isinstance(args, dict):
        return call_id, name, None, f"the model called {name} with arguments that are not an object"
    return call_id, name, args, ""


def reply(
    session: ScribeSession, endpoint: model.Endpoint | None = None
) -> Generator[Line, None, None]:
    """Scribe's answer to the messages so far, as lines; the session is saved as it goes.

    Each line but the last (``done``) is kept in the session's transcript as soon as it
    is sent, so a page reloaded mid-reply shows what was said so far.
    """
    try:
        for line in _reply(session, endpoint or endpoint_of(session)):
            if line["kind"] != "done":
                session.transcript = [*session.transcript, line]
                ScribeSession.objects.filter(pk=session.pk).update(transcript=session.transcript)
            yield line
    finally:
        # Also when the reader went away mid-reply (the generator is closed).
        ScribeSession.objects.filter(pk=session.pk).update(replying_since=None)
        session.replying_since = None


def _for_model(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    size = sum(len(str(m.get("content") or "")) for m in messages)
    if size <= MAX_CONTEXT_CHARS:
        return messages
    out = []
    for index, message in enumerate(messages):
        old = index < len(messages) - KEEP_RECENT
        if old and message.get("role") == "tool" and size > MAX_CONTEXT_CHARS:
            size -= len(str(message.get("content") or "")) - len(OMITTED)
            message = {**message, "content": OMITTED}
        out.append(message)
    return out


def _reply(session: ScribeSession, endpoint: model.Endpoint) -> Iterator[Line]:
    malformed = 0
    for _ in range(settings.BEARPIT_SCRIBE_MAX_STEPS):
        messages = [
            {"role": "system", "content": system_prompt(session)},
            *_for_model(session.messages),
        ]
        try:
            message = model.complete(endpoint, messages, tools.TOOLS)
        except model.BudgetExhausted as exc:
            session.state = ScribeSession.State.CAPPED
            session.save(update_fields=["state", "updated_at"])
            version = drafts.current(session)
            kept = f"the draft (v{version.number}) is kept" if version else "no draft was written"
            text = f"Scribe's budget cap is spent ({exc}); {kept}."
            history.record(session, "error", text)
            yield _line("error", text, "budget")
            break
        except model.ModelError as exc:
            yield _line("error", str(exc), "model")
            break
        content = message.get("content")
        content = content if isinstance(content, str) else ""
        calls = message.get("tool_calls") or []
        if not isinstance(calls, list):
            calls = []
        assistant: dict[str, Any] = {"role": "assistant", "content": content or None}
        if calls:
            assistant["tool_calls"] = calls
        session.messages = [*session.messages, assistant]
        if content:
            history.record(session, "text", content)
            yield _line("text", content)
        if not calls:
            session.save(update_fields=["messages", "updated_at"])
            break
        ends_turn = False
        for call in calls:
            call_id, name, args, why = _parse_call(call)
            if args is None:
                malformed += 1
                yield _line("error", why, name)
                result = f"error: {why}; call one of the listed tools with a JSON object"
            else:
                yield _line("tool", _summary(name, args), name)
                outcome = tools.run(session, name, args)
                result = outcome.result
                for line in outcome.lines:
                    history.record(session, line["kind"], line["text"], line["name"])
                    yield line
                if outcome.failed_proposal:
                    session.failed_proposals += 1
                if outcome.proposed:
                    session.failed_proposals = 0
                ends_turn = ends_turn or outcome.ends_turn
            session.messages = [
                *session.messages,
                {"role": "tool", "tool_call_id": call_id, "content": result},
            ]
        session.save(update_fields=["messages", "failed_proposals", "updated_at"])
        if session.failed_proposals >= MAX_FAILED_PROPOSALS:
            session.failed_proposals = 0
            session.save(update_fields=["failed_proposals", "updated_at"])
            text = (
                f"the draft still does not validate after {MAX_FAILED_PROPOSALS} proposals; "
                "it is kept as it is, with its errors listed beside it: say what to change"
            )
            yield _line("error", text, "propose_draft")
            break
        if malformed >= MAX_MALFORMED:
            yield _line("error", f"stopped: {malformed} malformed tool calls in one reply", "model")
            break
        if ends_turn:
            break
    else:
        yield _line(
            "error",
            f"stopped after {settings.BEARPIT_SCRIBE_MAX_STEPS} model calls in one reply",
            "model",
        )
    yield _line("done", session.state, "")

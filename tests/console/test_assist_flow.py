"""Scribe in the console as a new user meets it, under ``pit_serve`` with the offline
provider replaying a scripted conversation through the real gateway: a new scenario
drafted beside the chat, a located error fixed, a reload that keeps everything, the draft
launched before approval without reaching the library, approval with each file's diff,
then the saved package validated and launched; an edit of an existing scenario; and
model replies that cannot be used, shown plainly."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from playwright.sync_api import Page, expect

from tests.console.browser import Served, assert_accessible, serve

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

REPLY = 60_000  # ms a scripted reply may take on a busy machine


@pytest.fixture(scope="module")
def script_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("scribe") / "scribe-script.yaml"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, script_path: Path) -> Iterator[Served]:
    """``pit_serve`` whose Scribe answers from ``script_path``, read as each session opens."""
    script_path.write_text("steps: []\n")
    env = {"BEARPIT_SCRIBE_PROVIDER": "offline", "BEARPIT_SCRIBE_OFFLINE_SCRIPT": str(script_path)}
    with serve(tmp_path_factory.mktemp("served"), **env) as running:
        yield running


def use_script(path: Path, steps: list[dict[str, Any]], *, loop: bool = False) -> None:
    path.write_text(yaml.safe_dump({"steps": steps, "idle": "", "loop": loop}))


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def step(*calls: dict[str, Any], text: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"text": text}
    if calls:
        out["tool_calls"] = list(calls)
    return out


def api(page: Page, served: Served, method: str, path: str, data: Any = None) -> Any:
    token = (served.home / "api-token").read_text().strip()
    headers = {"Authorization": f"Bearer {token}"}
    url = f"{served.base_url}{path}"
    if method == "GET":
        return page.request.get(url, headers=headers)
    return page.request.post(url, headers=headers, data=json.dumps(data or {}))


def stop(page: Page, served: Served, realm_id: str) -> None:
    """Stop a realm the test launched: the page was the point, not the run."""
    assert api(page, served, "POST", f"/api/realms/{realm_id}/stop").ok


def agent(on_exhausted: str) -> str:
    data = {
        "id": "greeter",
        "name": "Greeter",
        "description": "Says hello to the realm.",
        "model_category": "small",
        "budget": {"max_usd": 0.2, "on_exhausted": on_exhausted},
    }
    return json.dumps(data, indent=2) + "\n"


PROJECT = json.dumps(
    {
        "apiVersion": "bearpit/v1alpha1",
        "kind": "Project",
        "metadata": {"name": "greeting", "description": "One agent greets the realm."},
        "spec": {
            "goals": ["Greet the realm in one line."],
            "termination": [{"type": "duration", "limit": "5m"}],
        },
    },
    indent=2,
)
PERSONA = "# Greeter\n\nYou greet the realm warmly, in one line.\n"
OFFLINE = 'idle: ""\nsteps:\n  - text: "Hello, realm."\n'


def write(path: str, content: str) -> dict[str, Any]:
    return call("write_draft_file", path=path, content=content)


def test_a_new_scenario_with_the_assistant_from_chat_to_launch(
    page: Page, served: Served, script_path: Path
) -> None:
    use_script(
        script_path,
        [
            step(
                call("read_format_reference"),
                write("project.json", PROJECT),
                write("agents/greeter/agent.json", agent("explode")),
                write("agents/greeter/persona.md", PERSONA),
                write("offline/greeter.yaml", OFFLINE),
                text="I'll draft a one-agent greeting realm.",
            ),
            step(call("validate_draft")),
            step(call("ask_user", question="What should happen when its budget runs out?")),
            step(write("agents/greeter/agent.json", agent("starve"))),
            step(call("validate_draft")),
            step(call("propose_draft", summary="greeting: one greeter, ends after 5 minutes")),
            step(text="Review the manifest and the persona, then approve."),
        ],
    )
    page.goto(f"{served.base_url}/scenarios/")
    page.get_by_role("link", name="New scenario with the assistant").click()
    expect(page.get_by_label("Provider profile")).to_have_value("offline")
    page.get_by_label("Name").fill("greeting")
    assert_accessible(page, "assist-start")
    page.get_by_role("button", name="Start the conversation").click()
    page.wait_for_url(re.compile(r"/assist/[0-9a-f]{16}/$"))
    session_url = page.url
    assert_accessible(page, "assist-empty")

    page.get_by_label("Your message").fill("A realm where one agent greets everyone.")
    page.get_by_role("button", name="Send").click()
    chat = page.get_by_role("list", name="Conversation with Scribe")
    expect(chat).to_contain_text("What should happen when its budget runs out?", timeout=REPLY)
    expect(chat).to_contain_text("write_draft_file agents/greeter/persona.md")
    # The draft is beside the chat, with its located error.
    draft = page.locator("#draft")
    listed = draft.get_by_role("list", name="Draft files")
    expect(listed).to_contain_text("agents/greeter/agent.json")
    problems = draft.get_by_role("list", name="Problems in the draft")
    expect(problems).to_contain_text("agents/greeter/agent.json, line 8")
    expect(problems).to_contain_text("budget.on_exhausted")
    expect(draft.locator("#approve")).to_contain_text("Nothing is saved yet")
    expect(page.locator("#spend")).to_contain_text("model calls")
    assert_accessible(page, "assist-question")

    # A reload rebuilds everything from the stored session.
    page.reload()
    expect(chat).to_contain_text("A realm where one agent greets everyone.")
    expect(chat).to_contain_text("I'll draft a one-agent greeting realm.")
    expect(chat).to_contain_text("What should happen when its budget runs out?")
    expect(problems).to_contain_text("agents/greeter/agent.json, line 8")
    expect(page.locator("#draft-state")).to_have_text("Drafting")

    page.get_by_label("Your message").fill("It should starve.")
    page.get_by_label("Your message").press("Enter")
    expect(chat).to_contain_text("Review the manifest and the persona", timeout=REPLY)
    expect(chat.locator(".line-draft")).to_contain_text("greeting: one greeter")
    expect(page.locator("#draft-state")).to_have_text("Waiting for your approval")
    expect(draft.locator("#validation")).to_contain_text("the draft is a valid package")
    diff = draft.get_by_label("Diff of agents/greeter/persona.md")
    expect(diff).to_contain_text("+You greet the realm warmly, in one line.")
    # The draft panel refreshes once the reply has ended; click on the panel it settles on.
    page.wait_for_load_state("networkidle")
    page.get_by_role("button", name="Validate the draft").click()
    expect(draft.locator("#validation")).to_contain_text("Checked just now")
    assert_accessible(page, "assist-proposed")

    # Nothing is in the library before approval, yet the draft launches as it is.
    assert api(page, served, "GET", "/api/packages/greeting").status == 404
    page.get_by_label("Realm id").fill("greeting-draft")
    page.get_by_role("button", name="Launch the draft (offline)").click()
    page.wait_for_url(f"{served.base_url}/realms/greeting-draft/")
    expect(page.get_by_role("heading", name="greeting-draft", level=1)).to_be_visible()
    realm = api(page, served, "GET", "/api/realms/greeting-draft").json()
    assert realm["config"]["provider"] == "offline", realm["config"]
    stop(page, served, "greeting-draft")
    assert api(page, served, "GET", "/api/packages/greeting").status == 404

    page.goto(session_url)
    page.get_by_role("button", name="Approve and save to the library").click()
    page.wait_for_url(f"{served.base_url}/scenarios/greeting/")
    expect(page.get_by_role("status").first).to_contain_text("Approved")
    expect(page.get_by_role("heading", name="Roster")).to_be_visible()
    saved = api(page, served, "GET", "/api/packages/greeting").json()
    assert saved["validation"]["ok"] is True, saved["validation"]
    assert saved["source"] == "user"
    assert saved["files"] == [
        "agents/greeter/agent.json",
        "agents/greeter/persona.md",
        "offline/greeter.yaml",
        "project.json",
    ]

    page.get_by_role("link", name="Launch", exact=True).click()
    page.get_by_label("Realm id").fill("greeting-saved")
    page.get_by_role("button", name="Launch").click()
    page.wait_for_url(f"{served.base_url}/realms/greeting-saved/")
    expect(page.get_by_role("heading", name="greeting-saved", level=1)).to_be_visible()
    stop(page, served, "greeting-saved")

    page.goto(session_url)
    expect(page.locator("#approved-note")).to_be_visible()
    expect(page.locator("#composer")).to_be_hidden()
    page.goto(f"{served.base_url}/assist/")
    expect(page.get_by_role("table", name="Your Scribe sessions")).to_contain_text("Approved")
    assert_accessible(page, "assist-sessions")


def test_editing_a_scenario_with_the_assistant(
    page: Page, served: Served, script_path: Path
) -> None:
    ping = Path(__file__).resolve().parents[2] / "examples/toolcheck/agents/ping/agent.json"
    before = ping.read_text()
    after = before.replace("First runner", "Lead runner")
    assert after != before
    use_script(
        script_path,
        [
            step(call("read_draft_file", path="agents/ping/agent.json")),
            step(write("agents/ping/agent.json", after), call("validate_draft")),
            step(call("propose_draft", summary="ping is now the lead runner")),
            step(text="One line changed; approve it if it reads right."),
        ],
    )
    page.goto(f"{served.base_url}/scenarios/toolcheck/")
    page.get_by_role("link", name="Edit with the assistant").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Edit toolcheck with the assistant")
    page.get_by_role("button", name="Start the conversation").click()
    page.wait_for_url(re.compile(r"/assist/[0-9a-f]{16}/$"))
    expect(page.locator("#draft")).to_contain_text("No changes: the draft is the saved package.")
    page.get_by_label("Your message").fill("Call ping the lead runner.")
    page.get_by_role("button", name="Send").click()
    expect(page.locator("#lines")).to_contain_text("One line changed", timeout=REPLY)
    diff = page.get_by_label("Diff of agents/ping/agent.json")
    expect(diff.locator(".d-del")).to_contain_text("First runner")
    expect(diff.locator(".d-add")).to_contain_text("Lead runner")
    expect(page.locator("#diff-agentspingagentjson")).to_contain_text("changed")
    assert_accessible(page, "assist-edit-proposed")
    assert api(page, served, "GET", "/api/packages/toolcheck").json()["source"] == "example"

    page.get_by_role("button", name="Approve and save to the library").click()
    page.wait_for_url(f"{served.base_url}/scenarios/toolcheck/")
    expect(page.get_by_text("Lead runner")).to_be_visible()
    expect(page.get_by_text("This is your copy: it shadows the bundled example")).to_be_visible()
    assert ping.read_text() == before  # the bundled example is untouched


def test_unusable_model_replies_are_shown_plainly(
    page: Page, served: Served, script_path: Path
) -> None:
    broken = agent("explode")
    use_script(
        script_path,
        [
            step(
                {"name": "write_draft_file", "arguments": "{not json"},
                call("save_settings", provider="evil"),
                write("project.json", PROJECT),
                write("agents/greeter/agent.json", broken),
            ),
            step(call("propose_draft", summary="first try")),
            step(call("propose_draft", summary="second try")),
            step(call("propose_draft", summary="third try")),
            step(text="unreachable"),
        ],
    )
    page.goto(f"{served.base_url}/assist/new")
    page.get_by_role("button", name="Start the conversation").click()
    page.wait_for_url(re.compile(r"/assist/[0-9a-f]{16}/$"))
    page.get_by_label("Your message").fill("Anything.")
    page.get_by_role("button", name="Send").click()
    chat = page.locator("#lines")
    expect(chat).to_contain_text("still does not validate after 3 proposals", timeout=REPLY)
    errors = chat.locator(".line-error")
    expect(errors.nth(0)).to_contain_text("arguments that are not JSON")
    expect(errors.nth(1)).to_contain_text("a tool that does not exist: 'save_settings'")
    expect(chat).not_to_contain_text("unreachable")
    expect(page.locator("#draft-state")).to_have_text("Drafting")
    expect(page.locator("#validation")).to_contain_text("1 problem")
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    assert_accessible(page, "assist-unusable")

    # A cap that allows about one call: the next is refused, said so, the draft kept.
    use_script(script_path, [step(write("notes.md", "draft notes\n"))], loop=True)
    page.goto(f"{served.base_url}/assist/new")
    page.get_by_label("Spend cap (USD)").fill("0.15")
    page.get_by_role("button", name="Start the conversation").click()
    page.wait_for_url(re.compile(r"/assist/[0-9a-f]{16}/$"))
    page.get_by_label("Your message").fill("Write forever.")
    page.get_by_role("button", name="Send").click()
    expect(chat.locator(".line-error")).to_contain_text("budget cap is spent", timeout=REPLY)
    expect(page.locator("#capped-note")).to_be_visible()
    expect(page.locator("#composer")).to_be_hidden()
    expect(page.locator("#draft-state")).to_have_text("Budget cap spent")
    expect(page.locator("#draft")).to_contain_text("draft notes")
    expect(page.locator("#spend")).to_contain_text("of $0.15 cap")
    assert_accessible(page, "assist-capped")
    page.reload()
    expect(page.locator("#capped-note")).to_be_visible()
    expect(chat.locator(".line-error")).to_contain_text("budget cap is spent")

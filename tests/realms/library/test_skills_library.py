"""Built-in skills as shipped files, and user skills reaching an agent by ref."""

from __future__ import annotations

import pytest

from realms.packages import load_package
from realms.packages.schema import BUILTIN_SKILLS
from realms.plan import PlanAgent, RealmPlan, SkillRef
from realms.services.birth import build_birth
from realms.skills import builtin
from realms.skills.builtin import BUILTIN_DIR
from realms.skills.skillfile import parse
from tests.realms.packages.helpers import base_agents, messages, write_package


@pytest.fixture(autouse=True)
def _home(settings, tmp_path):
    settings.BEARPIT_HOME = tmp_path / "home"


def test_every_builtin_skill_is_a_skill_md_with_front_matter():
    folders = sorted(p.name for p in BUILTIN_DIR.iterdir() if p.is_dir())
    assert folders == sorted(BUILTIN_SKILLS)
    assert {"agent-basics", "referee-basics", "competitor"} <= set(BUILTIN_SKILLS)
    for name in BUILTIN_SKILLS:
        text = (BUILTIN_DIR / name / "SKILL.md").read_text()
        doc = parse(text, default_name="")
        assert doc.name == name
        assert doc.description
        assert doc.body
        assert builtin.text(name) == doc.body
        assert "---" not in builtin.text(name)


def birth_skills(agent: PlanAgent) -> dict[str, str]:
    birth = build_birth(
        realm_id="r1",
        plan=RealmPlan(agents=(agent,)),
        agent_id=agent.id,
        mxid="@bp_r1=a:pit",
        access_token="t",
        commons_room_id="!c:pit",
        dm_rooms={},
        users={agent.id: "@bp_r1=a:pit"},
        system_mxid="@bp_system:pit",
        operator_mxid="@bp_operator:pit",
        virtual_key="k",
        model_name="scripted-medium",
        realmtools_token=None,
    )
    return {skill.name: skill.text for skill in birth.skills}


def test_birth_takes_builtin_texts_from_the_shipped_files():
    agent = PlanAgent(
        id="ping",
        skills=(SkillRef("builtin", "competitor"), SkillRef("user", "notes")),
        local_skills={"notes": "user text"},
    )
    skills = birth_skills(agent)
    assert list(skills) == ["agent-basics", "competitor", "notes"]
    assert skills["agent-basics"] == builtin.text("agent-basics")
    assert skills["agent-basics"].startswith("Everything that changes the game")
    assert skills["notes"] == "user text"
    referee = birth_skills(PlanAgent(id="ump", role="referee"))
    assert list(referee) == ["referee-basics"]


def test_an_agent_names_a_user_skill_and_gets_its_text(settings, tmp_path):
    skill = settings.BEARPIT_HOME / "skills" / "negotiator"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: negotiator\n---\nAsk for more.\n")
    agents = base_agents()
    agents["ping"]["skills"] = [{"source": "user", "ref": "negotiator"}]
    result = load_package(write_package(tmp_path / "pkg", agents=agents))
    assert result.ok, messages(result)
    assert result.project is not None
    ping = result.project.agent("ping")
    assert ping is not None
    assert ping.local_skills == {"negotiator": "---\nname: negotiator\n---\nAsk for more.\n"}


def test_a_missing_or_escaping_user_skill_is_a_located_error(settings, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "SKILL.md").write_text("secret")
    (settings.BEARPIT_HOME / "skills").mkdir(parents=True)
    (settings.BEARPIT_HOME / "skills" / "linked").symlink_to(outside)
    agents = base_agents()
    agents["ping"]["skills"] = [
        {"source": "user", "ref": "absent"},
        {"source": "user", "ref": "../outside"},
        {"source": "user", "ref": "linked"},
    ]
    result = load_package(write_package(tmp_path / "pkg", agents=agents))
    found = messages(result)
    assert found[0] == (
        "agents/ping/agent.json: skills[0].ref: expected a skill in the skills library; "
        'got "absent"'
    )
    assert found[1].startswith("agents/ping/agent.json: skills[1].ref: skill ref '../outside'")
    assert found[2].startswith("agents/ping/agent.json: skills[2].ref: skills library linked/")
    assert len(found) == 3

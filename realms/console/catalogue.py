"""What the scenario pages show of a library scenario: its card, its README, its cost note.

Everything here reads what the library and the package loader already decided; a
scenario that does not load still gets a card, from its manifest as written, marked with
its first error.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from realms.library import services as library
from realms.models import Scenario
from realms.packages import LoadResult
from realms.packages.schema.project import Project

README = "README.md"
# The first "≈ $0.66 …" of a README's "## Cost…" section: the figure its author estimated.
_COST_SECTION = re.compile(r"^##\s+Cost\b.*?$(.*?)(?=^##\s|\Z)", re.MULTILINE | re.DOTALL)
_COST_FIGURE = re.compile(r"≈\s*\$\s*\d+(?:\.\d+)?")


@dataclass(frozen=True)
class CostNote:
    text: str
    basis: str  # "README" (the author's estimate) or "budgets" (the caps the agents declare)


@dataclass
class Card:
    scenario: Scenario
    title: str
    description: str = ""
    tags: list[str] = field(default_factory=list)
    category: str = ""
    agents: int = 0
    cost: CostNote | None = None
    first_error: str = ""
    readme: str = ""

    @property
    def name(self) -> str:
        return self.scenario.name

    @property
    def editable(self) -> bool:
        return self.scenario.source == Scenario.Source.USER


def text_files(scenario: Scenario) -> dict[str, str]:
    """The scenario's files that are UTF-8 text, by path."""
    out: dict[str, str] = {}
    for path, content in library.scenario_files(scenario).items():
        try:
            out[path] = content.decode("utf-8")
        except UnicodeDecodeError:
            continue
    return out


def readme_cost(readme: str) -> str | None:
    section = _COST_SECTION.search(readme)
    if section is None:
        return None
    figure = _COST_FIGURE.search(section.group(1))
    return figure.group(0).replace(" ", "") if figure else None


def budget_cost(project: Project) -> CostNote:
    tiers: dict[str, int] = {}
    caps = 0.0
    uncapped = 0
    for agent in project.agents:
        tiers[agent.model_category] = tiers.get(agent.model_category, 0) + 1
        if agent.budget.max_usd is None:
            uncapped += 1
        else:
            caps += agent.budget.max_usd
    mix = ", ".join(f"{n} {tier}" for tier, n in sorted(tiers.items()))
    if uncapped == len(project.agents):
        return CostNote(f"no budget caps ({mix})", "budgets")
    text = f"at most ${caps:.2f} in budget caps ({mix})"
    if uncapped:
        text += f"; {uncapped} uncapped"
    return CostNote(text, "budgets")


def _raw_metadata(files: dict[str, str]) -> dict[str, Any]:
    """``metadata`` as written, for a card of a package that does not load."""
    try:
        doc = json.loads(files.get("project.json", ""))
    except ValueError:
        return {}
    metadata = doc.get("metadata") if isinstance(doc, dict) else None
    return metadata if isinstance(metadata, dict) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def card(scenario: Scenario, result: LoadResult | None = None) -> Card:
    result = result or library.load_scenario(scenario)
    files = text_files(scenario)
    readme = files.get(README, "")
    figure = readme_cost(readme)
    if result.project is not None:
        meta = result.project.metadata
        out = Card(
            scenario=scenario,
            title=meta.name,
            description=meta.description or "",
            tags=list(meta.tags),
            category=meta.category or "",
            agents=len(result.project.agents),
            cost=CostNote(figure, "README") if figure else budget_cost(result.project),
        )
    else:
        raw = _raw_metadata(files)
        tags = raw.get("tags")
        out = Card(
            scenario=scenario,
            title=_text(raw.get("name")) or scenario.title or scenario.name,
            description=_text(raw.get("description")),
            tags=[t for t in tags if isinstance(t, str)] if isinstance(tags, list) else [],
            category=_text(raw.get("category")),
            agents=sum(1 for p in files if re.fullmatch(r"agents/[^/]+/agent\.(json|ya?ml)", p)),
            cost=CostNote(figure, "README") if figure else None,
            first_error=str(result.errors[0]) if result.errors else "does not load",
        )
    out.readme = readme
    return out


def cards() -> list[Card]:
    """Every scenario of the library, examples refreshed from disk first."""
    library.sync_examples()
    return [card(scenario) for scenario in library.list_scenarios()]


def example_shadowed(name: str) -> bool:
    """Whether a bundled example of this name exists (a user copy would shadow it)."""
    return Scenario.objects.filter(name=name, source=Scenario.Source.EXAMPLE).exists()


def find(name: str) -> Scenario | None:
    """The scenario a name means (a user copy shadows an example), or None."""
    try:
        return library.resolve(name)
    except library.LibraryError:
        library.sync_examples()  # an example added to the folder since the list was read
    try:
        return library.resolve(name)
    except library.LibraryError:
        return None


def settings_of(model: Any, *, defaults: bool = True) -> list[tuple[str, str]]:
    """(name, value) of a schema model's fields that are set, for a definition list;
    without ``defaults``, only what the author wrote differently from the default."""
    out: list[tuple[str, str]] = []
    dumped = model.model_dump(mode="json", exclude_none=True, exclude_defaults=not defaults)
    for key, value in dumped.items():
        if value in ({}, []):
            continue
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        out.append((key, shown))
    return out

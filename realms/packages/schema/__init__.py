"""Pydantic models of the package format; every model refuses unknown keys."""

from realms.packages.schema.agent import (
    BUILTIN_SKILLS,
    Agent,
    AgentManifest,
    Budget,
    ModelRef,
    PrivateMessaging,
    RefereePowers,
    SkillRef,
    looks_like_secret,
)
from realms.packages.schema.common import parse_duration
from realms.packages.schema.machine import DataDef, MachineDef, PointerDef, RoleDef, WakeRule
from realms.packages.schema.project import (
    BUILTIN_RULESETS,
    Environment,
    Mechanic,
    ParameterSpec,
    Project,
    ProjectManifest,
    ProjectMeta,
    ProjectSpec,
    TerminationCondition,
    Turns,
)

__all__ = [
    "BUILTIN_RULESETS",
    "BUILTIN_SKILLS",
    "Agent",
    "AgentManifest",
    "Budget",
    "DataDef",
    "Environment",
    "MachineDef",
    "Mechanic",
    "ModelRef",
    "ParameterSpec",
    "PointerDef",
    "PrivateMessaging",
    "Project",
    "ProjectManifest",
    "ProjectMeta",
    "ProjectSpec",
    "RefereePowers",
    "RoleDef",
    "SkillRef",
    "TerminationCondition",
    "Turns",
    "WakeRule",
    "looks_like_secret",
    "parse_duration",
]

"""Scenario packages: the schema, the loader, parameters and tool grants.

``load_package(path)`` is the one way in: it returns a ``LoadResult`` with every located
problem of a package, or a validated ``Project`` that launch, Forge and the Warden read.
"""

from realms.packages.errors import PackageError, PackageWarning
from realms.packages.jsonschema import agent_json_schema, project_json_schema, write_json_schemas
from realms.packages.loader import LoadResult, load_package
from realms.packages.parameters import (
    ParameterBindingError,
    ParameterInfo,
    bind_parameters,
    missing_parameters,
    parse_placeholders,
    resolve_parameter_values,
    scan_parameters,
    substitute,
    validate_parameter_values,
)
from realms.packages.schema import (
    Agent,
    MachineDef,
    Mechanic,
    Project,
    TerminationCondition,
    Turns,
    parse_duration,
)
from realms.packages.tools import GRANTABLE_TOOLS, GrantableTool, canonical_tool_name

__all__ = [
    "GRANTABLE_TOOLS",
    "Agent",
    "GrantableTool",
    "LoadResult",
    "MachineDef",
    "Mechanic",
    "PackageError",
    "PackageWarning",
    "ParameterBindingError",
    "ParameterInfo",
    "Project",
    "TerminationCondition",
    "Turns",
    "agent_json_schema",
    "bind_parameters",
    "canonical_tool_name",
    "load_package",
    "missing_parameters",
    "parse_duration",
    "parse_placeholders",
    "project_json_schema",
    "resolve_parameter_values",
    "scan_parameters",
    "substitute",
    "validate_parameter_values",
    "write_json_schemas",
]

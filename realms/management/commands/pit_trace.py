"""``pit_trace [-r REALM] [-a AGENT] [-g TEXT] [--tool NAME] [-n 15] [--full]``: the agents'
trace records (model calls, tool calls, errors), one line each, from the Chronicle.

``pit_trace --as AGENT [--at T]``: the agent's own view instead, what its model saw in its
last call at or before T (an ISO time, a ms timestamp or an event id ``#N``) and the reply."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chronicle import selectors
from chronicle.agentview import BadMoment, agent_view, parse_moment, view_lines
from chronicle.tracelog import TraceQuery, trace_lines


class Command(BaseCommand):
    help = "Print the agents' trace records (model calls, tool calls, errors), one line each."
    requires_system_checks: list[str] = []  # read-only; the checks import every URL's views

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("-r", "--realm", help="realm id (default: the most recent realm)")
        parser.add_argument("-a", "--agent", help="only this agent's records")
        parser.add_argument("-g", "--grep", help="only records containing this text (any case)")
        parser.add_argument("--tool", help="only the calls and results of this tool")
        parser.add_argument(
            "-n", "--last", type=int, default=15, help="how many records (default 15)"
        )
        parser.add_argument("--full", action="store_true", help="print each record whole")
        parser.add_argument(
            "--as",
            dest="as_agent",
            metavar="AGENT",
            help="the agent's own view: the request its model saw and the reply",
        )
        parser.add_argument(
            "--at",
            metavar="T",
            help="with --as: the last call at or before T (ISO time, ms timestamp or event #N)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        last = options["last"]
        if last < 1:
            raise CommandError(f"--last: expected a positive number; got {last}")
        realm_id = options["realm"]
        if realm_id is None:
            known = selectors.chronicled_realm_ids()
            if not known:
                raise CommandError("no realm has been chronicled yet")
            realm_id = known[0]
            self.stdout.write(f"realm: {realm_id} (the most recent; -r picks another)")
        elif not selectors.realm_known(realm_id):
            raise CommandError(f"realm {realm_id!r}: no such realm")
        if options["as_agent"] is not None:
            self._view(realm_id, options["as_agent"], options["at"], full=options["full"])
            return
        if options["at"] is not None:
            raise CommandError("--at: needs --as AGENT (whose view at that moment)")
        query = TraceQuery(
            agent=options["agent"],
            grep=options["grep"],
            tool=options["tool"],
            last=last,
            full=options["full"],
        )
        lines = trace_lines(realm_id, query)
        if not lines:
            self.stdout.write("(no trace records match)")
        for line in lines:
            self.stdout.write(line)

    def _view(self, realm_id: str, agent: str, at: str | None, *, full: bool) -> None:
        roster = selectors.realm_plan(realm_id).roster
        if agent not in roster:
            raise CommandError(
                f"--as: no agent {agent!r} in realm {realm_id}; its agents: {', '.join(roster)}"
            )
        try:
            moment = parse_moment(realm_id, at) if at is not None else None
        except BadMoment as exc:
            raise CommandError(f"--at: {exc}") from None
        view = agent_view(realm_id, agent, moment)
        if view is None:
            when = f" at or before {at}" if at is not None else ""
            self.stdout.write(f"({agent} made no model call{when})")
            return
        for line in view_lines(view, full=full):
            self.stdout.write(line)

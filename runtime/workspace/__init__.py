"""The standalone coding agent: the runtime's loop over a workspace folder, in a terminal.

``manage.py pit_agent --workspace DIR`` (or ``pit agent --workspace DIR``) runs it. Its state
(task board, notebook, job logs, worktrees, trace and transcript) lives in ``DIR/.bearpit/``.
Like the rest of the runtime it imports nothing of the platform.
"""

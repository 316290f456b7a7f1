"""Skills: the built-in library shipped with Bearpit and the operator's own skills.

A skill is a folder holding a ``SKILL.md`` (front matter ``name`` and ``description``,
then the text an agent is given) and any files it refers to. This package only reads
skills; writing user skills is the library's job (``realms.library.skills``).
"""

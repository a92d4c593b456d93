"""The text of a jupysql ``%%sql`` cell that runs a query exactly as written (stdlib +
sqlparse, through :mod:`cadet_magic.sql.pretty`)."""

from __future__ import annotations

from cadet_magic.sql.pretty import format_sql

#: What starts a Jinja tag, expression or comment: jupysql renders every ``%%sql`` cell as a
#: Jinja template with the notebook's variables.
_JINJA_STARTS = ("{{", "{%", "{#")


def sql_cell(sql: str) -> str:
    """The text of a jupysql ``%%sql`` cell that runs ``sql`` exactly as written.

    jupysql renders a cell as a Jinja template before running it, so SQL holding ``{{``,
    ``{%`` or ``{#`` (in a string literal, say) goes inside ``{% raw %}`` blocks, which Jinja
    copies verbatim; each ``{%`` in the SQL is split across two blocks so that no text of the
    SQL can close a block early. SQL without them is inert already and stays as it is.

    Example:
        >>> print(sql_cell("SELECT 1;"), end="")
        %%sql
        SELECT 1
        >>> print(sql_cell("SELECT '{{ x }}', '{% endraw %}'"), end="")
        %%sql
        {% raw %}SELECT '{{ x }}', '{{% endraw %}{% raw %}% endraw %}'{% endraw %}
    """
    body = format_sql(sql.strip().rstrip(";").strip())
    if any(mark in body for mark in _JINJA_STARTS):
        body = "{% raw %}" + body.replace("{%", "{{% endraw %}{% raw %}%") + "{% endraw %}"
    return "%%sql\n" + body + "\n"

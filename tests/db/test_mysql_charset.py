"""MySQL/MariaDB character sets: whatever the user's connection speaks (``charset``,
``init_command``, ``SET NAMES``, a SQLAlchemy URL's ``?charset=``), the agent's own connection
speaks utf8mb4, checked on the driver and on the server; a literal the check reads as one
string is one string on the server too.

The hostile reply holds ``'C\\\\'``: one character C and an escaped backslash to the check, one
string. On a server reading another character set the same bytes end with an escaped quote, and
the hidden ``UNION`` after it runs:
- ``charset="sjis"``: PyMySQL encodes ``¥`` as the byte 0x5C, a backslash to the server;
- ``init_command="SET NAMES gbk"`` (or sjis, cp932, big5) with PyMySQL encoding UTF-8: the last
  byte of a three-byte UTF-8 character (``中``, ``ぁ``) starts a two-byte character on the
  server whose second byte is the 0x5C of the escaped backslash.
(``ujis`` has no such character: no second byte is 0x5C; it is checked all the same.)"""

from __future__ import annotations

import pytest

from cadet_magic.db.connect import resolve_runner
from cadet_magic.db.mysql import MySQLRunner, pymysql_opener
from cadet_magic.errors import ConfigurationError

pytestmark = pytest.mark.mysql

CHARSETS = ["sjis", "cp932", "gbk", "big5", "ujis"]
MARK = "LEAK:"
#: The character that hides the UNION per character set: driver encoding it, server reading it.
AS_CHARSET = {"sjis": "¥", "cp932": "ぁ", "gbk": "中", "big5": "中", "ujis": "ぁ"}
AS_UTF8 = {"sjis": "ぁ", "cp932": "ぁ", "gbk": "中", "big5": "中", "ujis": "ぁ"}


def hostile(c: str) -> str:
    """One string, then a second string holding a UNION, to the check (see the module)."""
    return (
        f"SELECT name FROM customers WHERE name = '{c}\\\\' OR name = "
        "' UNION SELECT CONCAT(0x4c45414b3a, USER(), @@datadir) -- '"
    )


@pytest.fixture
def shop(mysql_url):
    import pymysql

    from workloads.mariadb import connect_args

    args = connect_args(mysql_url.replace("mysql+pymysql://", "mysql://"))
    con = pymysql.connect(**args, autocommit=True)
    with con.cursor() as cur:
        cur.execute(
            "CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(50)) CHARACTER SET utf8mb4"
        )
        cur.execute("INSERT INTO customers VALUES (1, 'Ann'), (2, '表示')")
    con.close()
    return mysql_url, args


def _agent_charsets(runner: MySQLRunner) -> tuple:
    con = runner._connection()
    with con.cursor() as cur:
        cur.execute(
            "SELECT @@character_set_client, @@character_set_connection, @@character_set_results"
        )
        return cur.fetchone(), con.encoding


def _ask(con, sql: str):
    import cadet_magic
    from cadet_magic.llm import ScriptedModel

    model = ScriptedModel({"Names?": [f"```sql\n{sql}\n```", f"```sql\n{sql}\n```"]})
    return cadet_magic.ask("Names?", con=con, model=model, max_attempts=2, fallback=False)


def _leaked(r) -> bool:
    return any(MARK in str(v) for row in (r.rows or []) for v in row)


@pytest.mark.parametrize("charset", CHARSETS)
def test_user_charset_is_not_the_agents(shop, charset):
    """A PyMySQL connection in a multibyte character set: the hidden UNION never runs."""
    import pymysql

    _, args = shop
    raw = pymysql.connect(**args, charset=charset)
    r = _ask(raw, hostile(AS_CHARSET[charset]))
    assert not _leaked(r), r.rows
    runner = resolve_runner(raw)
    assert _agent_charsets(runner) == (("utf8mb4",) * 3, "utf8")
    # non-ASCII values still come back right
    assert runner.run("SELECT name FROM customers WHERE id = 2", limit=5, timeout=10).rows == [
        ("表示",)
    ]
    runner.close()
    cur = raw.cursor()  # the user's connection keeps its own character set
    cur.execute("SELECT @@character_set_client")
    assert cur.fetchone() == (charset,)
    raw.close()


@pytest.mark.parametrize("charset", CHARSETS)
def test_init_command_and_set_names(shop, charset):
    """``init_command`` runs on the agent's connection too (it may set a time zone), but its
    SET NAMES is overridden; a SET NAMES on the user's session is never copied."""
    import pymysql

    _, args = shop
    raw = pymysql.connect(**args, init_command=f"SET NAMES {charset}")
    raw.cursor().execute(f"SET NAMES {charset}")
    r = _ask(raw, hostile(AS_UTF8[charset]))
    assert not _leaked(r), r.rows
    runner = resolve_runner(raw)
    assert _agent_charsets(runner)[0] == ("utf8mb4",) * 3
    runner.close()
    raw.close()


def test_sqlalchemy_url_charset(shop):
    import sqlalchemy as sa

    url, _ = shop
    engine = sa.create_engine(url + "?charset=sjis")
    with engine.connect() as conn:
        assert not _leaked(_ask(conn, hostile(AS_CHARSET["sjis"])))
        runner = resolve_runner(conn)
        assert _agent_charsets(runner)[0] == ("utf8mb4",) * 3
        runner.close()
    engine.dispose()


def test_magic_with_a_sjis_connection(shop, ipython_shell):
    """Through ``%%ask`` in a real IPython shell: the answer holds no leaked row."""
    import pymysql

    from cadet_magic.llm import ScriptedModel

    _, args = shop
    ip = ipython_shell
    ip.run_line_magic("load_ext", "cadet_magic")
    raw = pymysql.connect(**args, charset="sjis")
    ip.user_ns["sjis_con"] = raw
    sql = hostile(AS_CHARSET["sjis"])
    ip.user_ns["sjis_model"] = ScriptedModel({"Names?": [f"```sql\n{sql}\n```"] * 2})
    result = ip.run_cell("%%ask --con sjis_con --model sjis_model --no-fallback\nNames?")
    assert result.success
    r = ip.user_ns["_ask"]  # the last run
    assert r.question == "Names?" and not _leaked(r), r.rows
    raw.close()


def test_a_driver_that_is_not_utf8mb4_is_refused_in_one_line(shop):
    """A connection whose driver encodes in another character set (what an unknown driver or
    a pool event could leave) is refused before any SQL of the model runs."""
    import pymysql

    _, args = shop
    runner = MySQLRunner(lambda: pymysql.connect(**args, charset="sjis"), key=object())
    with pytest.raises(ConfigurationError) as caught:
        runner.run("SELECT 1", limit=5, timeout=10)
    text = str(caught.value)
    assert "\n" not in text and "utf8mb4" in text and "sjis" in text


def test_opener_forces_utf8mb4(shop):
    import pymysql

    _, args = shop
    raw = pymysql.connect(**args, charset="big5")
    agent = pymysql_opener(raw)()
    assert agent.charset == "utf8mb4" and agent.encoding == "utf8"
    agent.close()
    raw.close()

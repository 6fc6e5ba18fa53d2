"""The little SQL this package runs, on any DB-API 2 connection
(sqlite3, psycopg, PyMySQL): reads of ward's own tables."""

from __future__ import annotations

import re
from typing import Any, Sequence

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


def ident(name: str) -> str:
    """A table name ward may interpolate: letters, digits and underscores."""
    if not _IDENT.match(name):
        raise ValueError(f"not a plain SQL identifier: {name[:40]!r}")
    return name


def _placeholders(conn: Any, sql: str) -> str:
    # sqlite3 takes qmark; psycopg and the MySQL drivers take format
    if type(conn).__module__.split(".")[0] == "sqlite3":
        return sql
    return sql.replace("?", "%s")


def query(conn: Any, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
    """Rows of a query written with ``?`` placeholders."""
    cur = conn.cursor()
    try:
        cur.execute(_placeholders(conn, sql), tuple(args))
        return list(cur.fetchall())
    finally:
        cur.close()


def table_exists(conn: Any, table: str) -> bool:
    """Whether a table exists (a read of it that fails means no)."""
    try:
        query(conn, f"SELECT 1 FROM {ident(table)} WHERE 1 = 0")
        return True
    except Exception:
        rollback = getattr(conn, "rollback", None)
        if rollback is not None:  # psycopg aborts the transaction on an error
            rollback()
        return False

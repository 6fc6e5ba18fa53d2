"""SQLAlchemy: a ward column as a ``TypeDecorator``.

The stored value is bound to its row and bound columns, which a type alone
never sees, so sealing happens in the session's flush, where the instance
is known; the type itself refuses any plaintext that reaches it another
way (Core ``insert()``/``update()``, ORM bulk statements), and
:func:`install` refuses every INSERT or UPDATE, through a session or a bare
connection, that would put an SQL expression into a ward column
(``literal()``, ``func``, ``cast()``, ``literal_column()``, arithmetic on
the column, ``from_select()``, an upsert's ``set_``): the database would
store what the expression computes, which no one sealed. What passes is a
bound value (checked by the type), ``NULL`` and, in an upsert, the
inserted row's own value (``excluded.c`` / ``inserted.c``). Only text SQL
(``text()``) is not seen. So no write path stores plaintext::

    titles = ward.Column("notes", "title", kr, bind=["user_id"])

    class Note(Base):
        __tablename__ = "notes"
        id: Mapped[int] = mapped_column(primary_key=True)       # set by the application
        user_id: Mapped[int]
        title: Mapped[str] = mapped_column(WardText(titles, row="id"))

    install(session_or_sessionmaker)   # once

Loaded instances hold plaintext; a value that does not open raises a
typed error (:class:`ward.WrongContextError`: moved to another row or
owner), never a ciphertext in its place. Row keys must be known before the
flush: database-assigned keys are refused (:class:`ward.BindingError`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from sqlalchemy import String, event, inspect
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Mapper, Session, attributes
from sqlalchemy.sql.dml import ValuesBase
from sqlalchemy.sql.elements import BindParameter, ClauseElement, ColumnClause, Null
from sqlalchemy.types import TypeDecorator

from ._wire import encode_text
from .errors import BindingError, WardError
from .field import Column


class _Sealed(str):
    """A ciphertext's text form on its way to the database."""


class PlaintextRefused(WardError):
    """Plaintext reached a ward column outside the session's flush."""


class WardText(TypeDecorator):
    """A ward column stored as its text form (``w4:…``)."""

    impl = String
    cache_ok = False

    def __init__(self, column: Column, row: str = "id", **kw: Any):
        super().__init__(**kw)
        self.column, self.row = column, row

    def process_bind_param(self, value: Any, dialect: Any) -> str | None:
        if value is None or isinstance(value, _Sealed):
            return value
        raise PlaintextRefused(f"{self.column.table}.{self.column.column}: plaintext reached the database outside a session flush "
                               "(Core insert/update and ORM bulk statements cannot bind a value to its row): add the object to a session")

    def process_result_value(self, value: Any, dialect: Any) -> Any:
        return None if value is None else _Sealed(value)


def _ward_columns(mapper: Mapper) -> list[tuple[str, WardText]]:
    return [(attr.key, attr.columns[0].type) for attr in mapper.column_attrs
            if len(attr.columns) == 1 and isinstance(attr.columns[0].type, WardText)]


def _bound(obj: Any, t: WardText) -> tuple[Any, list[Any]]:
    row = getattr(obj, t.row)
    if row is None:
        raise BindingError(f"{t.column.table}.{t.column.column}: the row key {t.row!r} must be set before the flush "
                           "(a database-assigned key is not known when the value is sealed)")
    return row, [getattr(obj, name) for name in t.column.bind]


def _seal_pending(session: Session, flush_context: Any, instances: Any) -> None:
    for obj in list(session.new) + list(session.dirty):
        mapper = inspect(obj).mapper
        for key, t in _ward_columns(mapper):
            value = getattr(obj, key)
            if value is None or isinstance(value, _Sealed):
                continue
            row, values = _bound(obj, t)
            ct = _Sealed(encode_text(t.column.seal(value, row, *values)))
            obj.__dict__.setdefault("_ward_plain", {})[key] = value
            setattr(obj, key, ct)


def _restore_plaintext(session: Session, flush_context: Any) -> None:
    for obj in list(session.identity_map.values()):
        plain = obj.__dict__.pop("_ward_plain", None)
        for key, value in (plain or {}).items():
            attributes.set_committed_value(obj, key, value)


def _open_loaded(obj: Any, *_: Any) -> None:
    for key, t in _ward_columns(inspect(obj).mapper):
        value = obj.__dict__.get(key)
        if isinstance(value, _Sealed):
            row, values = _bound(obj, t)
            attributes.set_committed_value(obj, key, t.column.open_text(str(value), row, *values))


def _key_name(key: Any) -> str:
    return key if isinstance(key, str) else str(getattr(key, "key", None) or getattr(key, "name", key))


def _assignments(stmt: ValuesBase) -> Iterator[tuple[str, Any, bool]]:
    """(column name, value, in an upsert's update) for every value stmt
    writes; a from_select's columns come with the select as their value."""
    for key, value in (stmt._values or {}).items():
        yield _key_name(key), value, False
    for row in stmt._multi_values or ():
        for values in row:
            items: Iterable[tuple[Any, Any]] = values.items() if isinstance(values, dict) else zip(stmt.table.c, values)
            for key, value in items:
                yield _key_name(key), value, False
    select = getattr(stmt, "select", None)
    if select is not None:
        for name in getattr(stmt, "_select_names", None) or ():
            yield _key_name(name), select, False
    post = getattr(stmt, "_post_values_clause", None)
    update = getattr(post, "update_values_to_set", None) or getattr(post, "update", None)
    if isinstance(update, dict):
        update = update.items()
    for key, value in update or ():
        yield _key_name(key), value, True


def _carries_no_plaintext(stmt: ValuesBase, name: str, value: Any, upsert: bool) -> bool:
    if value is None or isinstance(value, Null):
        return True
    if isinstance(value, BindParameter):  # typed by the column, so the type checks it, unless typed otherwise
        return value.type._isnull or isinstance(value.type, WardText)
    if upsert and isinstance(value, ColumnClause) and value.name == name:  # the inserted row's own value
        alias = value.table
        return getattr(alias, "name", None) in ("excluded", "inserted") and getattr(alias, "element", None) is stmt.table
    return not isinstance(value, (ColumnClause, ClauseElement)) and not upsert


def _refuse_expressions(conn: Any, stmt: Any, *_: Any) -> None:
    if not isinstance(stmt, ValuesBase):
        return
    ward = {c.name: c.type for c in getattr(stmt.table, "c", ()) if isinstance(c.type, WardText)}
    if not ward:
        return
    for name, value, upsert in _assignments(stmt):
        t = ward.get(name)
        if t is not None and not _carries_no_plaintext(stmt, name, value, upsert):
            raise PlaintextRefused(f"{t.column.table}.{t.column.column}: an SQL expression would be written to a ward column "
                                   f"({type(value).__name__}); the database would store what it computes, which no one sealed: "
                                   "set the attribute on the object and flush")


def install(target: Any) -> None:
    """Seal on flush and open on load for every mapped class with a
    WardText column; target is a Session, a sessionmaker or Session. It
    also refuses, on every engine, an INSERT or UPDATE that writes an SQL
    expression to a WardText column."""
    event.listen(target, "before_flush", _seal_pending)
    event.listen(target, "after_flush_postexec", _restore_plaintext)
    if not getattr(install, "_mapper_events", False):
        event.listen(Mapper, "load", _open_loaded)
        event.listen(Mapper, "refresh", _open_loaded)
        event.listen(Engine, "before_execute", _refuse_expressions)
        install._mapper_events = True  # type: ignore[attr-defined]

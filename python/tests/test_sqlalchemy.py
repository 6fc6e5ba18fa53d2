"""The SQLAlchemy type on SQLite (PostgreSQL through psycopg when
WARD_TEST_POSTGRES_URL is set, MariaDB through PyMySQL when
WARD_TEST_MYSQL_URL is): every write path seals or is refused."""

from __future__ import annotations

import json
import os
import urllib.parse
import uuid

import pytest

sqlalchemy = pytest.importorskip("sqlalchemy")
from sqlalchemy import create_engine, insert, select, text, update  # noqa: E402
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column  # noqa: E402

from conftest import vectors  # noqa: E402
from ward import Column, Keyring, MasterKey, WrongContextError  # noqa: E402
from ward.sqlalchemy import PlaintextRefused, WardText, install  # noqa: E402
from ward.errors import BindingError  # noqa: E402

V = vectors("keyring/testdata/v4-vectors.json")
KR = Keyring.loads(json.dumps(V["keyring"]), MasterKey.parse(V["master_key"]))
TITLES = Column("notes", "title", KR, bind=["user_id"])
TABLE = "notes_" + uuid.uuid4().hex[:8]


class Base(DeclarativeBase):
    pass


class Note(Base):
    __tablename__ = TABLE
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    user_id: Mapped[int]
    title: Mapped[str | None] = mapped_column(WardText(TITLES, row="id", length=400), nullable=True)


def engines():
    out = ["sqlite://"]
    for name in ("WARD_TEST_POSTGRES_URL", "WARD_TEST_MYSQL_URL"):
        if os.environ.get(name):
            out.append(os.environ[name])
    return out


def sa_url(url: str) -> str:
    """The CI's URLs in SQLAlchemy's spelling (MariaDB: its socket, the
    password in MYSQL_PWD)."""
    if url.startswith("postgres"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    if url.startswith("mysql"):
        u = urllib.parse.urlsplit(url)
        q = urllib.parse.parse_qs(u.query)
        pw = urllib.parse.quote(os.environ.get("MYSQL_PWD", ""), safe="")
        return f"mysql+pymysql://{u.username}:{pw}@localhost/?unix_socket={q['socket'][0]}"
    return url


@pytest.fixture(params=engines(), ids=lambda u: u.split(":")[0])
def engine(request):
    eng = create_engine(sa_url(request.param))
    if eng.dialect.name == "mysql":  # a database of its own, strict as ward requires
        db = "ward_py_" + uuid.uuid4().hex[:8]
        with eng.begin() as c:
            c.execute(text(f"CREATE DATABASE {db}"))
        eng.dispose()
        eng = create_engine(sa_url(request.param).replace("/?", f"/{db}?"))
    Base.metadata.create_all(eng)
    yield eng
    Base.metadata.drop_all(eng)
    if eng.dialect.name == "mysql":
        with eng.begin() as c:
            c.execute(text(f"DROP DATABASE {eng.url.database}"))
    eng.dispose()


def stored(engine, id_: int) -> str:
    with engine.connect() as c:
        return c.execute(text(f"SELECT title FROM {TABLE} WHERE id = :i"), {"i": id_}).scalar_one()


def test_session_seals_and_loads(engine):
    with Session(engine) as s:
        install(s)
        s.add_all([Note(id=1, user_id=7, title="first"), Note(id=2, user_id=8, title=None)])
        s.commit()
        n = s.get(Note, 1)
        assert n.title == "first"  # plaintext after the flush
        n.title = "renamed"
        s.commit()
    assert stored(engine, 1).startswith("w4:") and "renamed" not in stored(engine, 1)
    with Session(engine) as s:
        install(s)
        assert [n.title for n in s.scalars(select(Note).order_by(Note.id))] == ["renamed", None]
        merged = s.merge(Note(id=3, user_id=7, title="merged"))
        s.commit()
        assert merged.title == "merged"
    assert stored(engine, 3).startswith("w4:")


def test_moved_value_refused(engine):
    with Session(engine) as s:
        install(s)
        s.add_all([Note(id=1, user_id=7, title="alice's"), Note(id=2, user_id=8, title="bob's")])
        s.commit()
    with engine.begin() as c:  # a database writer re-points the owner
        c.execute(text(f"UPDATE {TABLE} SET user_id = 8 WHERE id = 1"))
    with Session(engine) as s:
        install(s)
        with pytest.raises(WrongContextError):
            s.get(Note, 1)


def test_paths_that_cannot_bind_are_refused(engine):
    with Session(engine) as s:
        install(s)
        with pytest.raises(Exception) as e:
            s.execute(insert(Note), [{"id": 5, "user_id": 1, "title": "bulk plaintext"}])
        assert isinstance(e.value, PlaintextRefused) or isinstance(e.value.__cause__, PlaintextRefused)
        s.rollback()
        with pytest.raises(Exception) as e:
            s.execute(update(Note).where(Note.id == 1).values(title="core plaintext"))
        assert isinstance(e.value, PlaintextRefused) or isinstance(e.value.__cause__, PlaintextRefused)
        s.rollback()
        s.add(Note(id=None, user_id=1, title="no row key yet"))
        with pytest.raises(BindingError):
            s.flush()
        s.rollback()
    with engine.connect() as c:
        assert c.execute(text(f"SELECT count(*) FROM {TABLE}")).scalar_one() == 0


def _expression_writes():
    """Every way an SQL expression, not a bound value, reaches the column."""
    from sqlalchemy import String, cast, func, literal, literal_column
    from sqlalchemy.dialects.mysql import insert as my_insert
    from sqlalchemy.dialects.postgresql import insert as pg_insert
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    t = Note.__table__
    upsert = {"sqlite": sqlite_insert, "postgresql": pg_insert}
    return {
        "literal": lambda d: update(Note).where(Note.id == 1).values(title=literal("plain literal")),
        "func": lambda d: update(Note).where(Note.id == 1).values(title=func.lower("PLAIN FUNC")),
        "cast": lambda d: update(Note).where(Note.id == 1).values(title=cast("plain cast", String)),
        "literal_column": lambda d: update(Note).where(Note.id == 1).values(title=literal_column("'plain column'")),
        "concat": lambda d: update(Note).where(Note.id == 1).values(title=Note.title + literal("!")),
        "ordered": lambda d: update(Note).where(Note.id == 1).ordered_values((t.c.title, literal("plain ordered"))),
        "multi": lambda d: insert(Note).values([{"id": 5, "user_id": 1, "title": literal("plain multi")}]),
        "insert_literal": lambda d: insert(Note).values(id=6, user_id=1, title=literal("plain insert")),
        "from_select": lambda d: insert(Note).from_select(
            ["id", "user_id", "title"], select(Note.id + 10, Note.user_id, literal("plain select"))),
        "upsert_set": lambda d: (upsert[d](Note).values(id=1, user_id=7).on_conflict_do_update(
            index_elements=["id"], set_={"title": literal("plain upsert")})
            if d in upsert else my_insert(Note).values(id=1, user_id=7).on_duplicate_key_update(title=literal("plain upsert"))),
        "upsert_set_value": lambda d: (upsert[d](Note).values(id=1, user_id=7).on_conflict_do_update(
            index_elements=["id"], set_={"title": "plain upsert value"})
            if d in upsert else my_insert(Note).values(id=1, user_id=7).on_duplicate_key_update(title="plain upsert value")),
    }


@pytest.mark.parametrize("path", sorted(_expression_writes()))
def test_expression_writes_are_refused(engine, path):
    with Session(engine) as s:
        install(s)
        s.add(Note(id=1, user_id=7, title="sealed"))
        s.commit()
    before = stored(engine, 1)
    stmt = _expression_writes()[path](engine.dialect.name)
    for run in (lambda: Session(engine).execute(stmt), lambda: engine.connect().execute(stmt)):
        with pytest.raises(Exception) as e:
            run()
        assert isinstance(e.value, PlaintextRefused) or isinstance(e.value.__cause__, PlaintextRefused), e.value
    with engine.connect() as c:
        rows = c.execute(text(f"SELECT id, title FROM {TABLE}")).all()
    assert rows == [(1, before)], rows


def test_expression_writes_that_carry_no_plaintext_pass(engine):
    from sqlalchemy import null
    from sqlalchemy.dialects.mysql import insert as my_insert
    from sqlalchemy.dialects.postgresql import insert as pg_insert
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    with Session(engine) as s:
        install(s)
        s.add_all([Note(id=1, user_id=7, title="sealed"), Note(id=2, user_id=7, title="kept")])
        s.commit()
        s.execute(update(Note).where(Note.id == 1).values(title=null()))
        s.execute(update(Note).where(Note.id == 1).values(user_id=9))
        s.commit()
    assert stored(engine, 1) is None
    with engine.begin() as c:  # the inserted row's own column: what the insert (checked) carries
        if engine.dialect.name == "mysql":
            stmt = my_insert(Note).values(id=2, user_id=7)
            c.execute(stmt.on_duplicate_key_update(user_id=8, title=stmt.inserted.title))
        else:
            stmt = {"sqlite": sqlite_insert, "postgresql": pg_insert}[engine.dialect.name](Note).values(id=2, user_id=7)
            c.execute(stmt.on_conflict_do_update(index_elements=["id"], set_={"user_id": 8, "title": stmt.excluded.title}))
    assert stored(engine, 2) is None  # the inserted row carried no title

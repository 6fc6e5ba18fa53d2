"""The SQLAlchemy type on SQLite (and PostgreSQL through psycopg when
WARD_TEST_POSTGRES_URL is set): every write path seals or is refused."""

from __future__ import annotations

import json
import os
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
    title: Mapped[str | None] = mapped_column(WardText(TITLES, row="id"), nullable=True)


def engines():
    out = ["sqlite://"]
    pg = os.environ.get("WARD_TEST_POSTGRES_URL")
    if pg:
        out.append(pg)
    return out


def pg_url(url: str) -> str:
    if url.startswith("postgres"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


@pytest.fixture(params=engines(), ids=lambda u: u.split(":")[0])
def engine(request):
    eng = create_engine(pg_url(request.param))
    Base.metadata.create_all(eng)
    yield eng
    Base.metadata.drop_all(eng)
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

"""The examples run: sqlite3 always, psycopg with WARD_TEST_POSTGRES_URL."""

from __future__ import annotations

import importlib.util
import json
import os
import uuid

import pytest

from conftest import REPO, vectors
from ward import Column, Grant, Keyring, MasterKey

GRANT = vectors("keyring/testdata/grant-v1.json")


def example(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "python" / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def files(tmp_path):
    kr = tmp_path / "kr.json"
    kr.write_text(json.dumps(GRANT["keyring"]))
    mk = tmp_path / "mk.b64"
    mk.write_text(GRANT["master_key"])
    reader = tmp_path / "reader.b64"
    reader.write_text(GRANT["reader_master_key"])
    grant = tmp_path / "titles.grant"
    grant.write_text(json.dumps(GRANT["grant"]))
    return kr, mk, reader, grant


def test_notes_sqlite(files, tmp_path):
    kr, mk, _, _ = files
    db = tmp_path / "notes.db"
    assert example("notes_sqlite").main(str(kr), str(mk), str(db)) == ["alice: Dentist on Monday", "bob: dentist on monday"]
    assert b"Dentist" not in db.read_bytes() and b"Groceries" not in db.read_bytes()


def test_analytics_psycopg(files):
    url = os.environ.get("WARD_TEST_POSTGRES_URL")
    if not url:
        pytest.skip("WARD_TEST_POSTGRES_URL is not set (.ci/run sets it)")
    psycopg = pytest.importorskip("psycopg")
    kr_path, mk, reader, grant = files
    kr = Keyring.load(str(kr_path), MasterKey.load(str(mk)))
    schema = "ward_py_" + uuid.uuid4().hex[:8]
    titles, bodies = Column("notes", "title", kr), Column("notes", "body", kr)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        try:
            conn.execute(f"SET search_path TO {schema}")
            conn.execute("CREATE TABLE notes (id BIGINT PRIMARY KEY, title TEXT NOT NULL)")
            for i, t in enumerate(["Dentist Monday", "dentist friday", "Library"]):
                conn.execute("INSERT INTO notes VALUES (%s, %s)", (i, titles.seal_text(t, i)))
            conn.execute("INSERT INTO notes VALUES (%s, %s)", (9, bodies.seal_text("a body in the title column", 9)))
            out = example("analytics_psycopg").main(str(grant), str(reader), url + ("&" if "?" in url else "?") + f"options=-csearch_path%3D{schema}")
        finally:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
    assert out["dentist"] == 2 and out["library"] == 1 and out["(refused)"] == 1
    assert Grant.load(str(grant), MasterKey.load(str(reader))).scopes == ["notes.title"]

"""Indexer: a blind index the ledger records with a spare column, computed
as recorded and followed through a re-key (Go: ledger.Indexer,
lifecycle.Reindex), each phase read from a ledger planted here under
the keyring's state key."""

from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3

import pytest

from conftest import vectors
from ward import BlindIndex, Indexer, Keyring, LedgerError, MasterKey, WardError

G = vectors("field/testdata/blind-index-v2.json")  # a keyring with two epochs, anchoring no database


@pytest.fixture
def kr():
    return Keyring.loads(json.dumps(G["keyring"]), MasterKey.parse(G["master_key"]))


def plant(conn, kr, indexes):
    """A first ledger of the vectors' database recording indexes, MAC'd as
    the keyring's holder writes it."""
    body = {"database": G["database"], "keyring": kr.id, "keys": [], "generation": kr.generation, "counter": 1,
            "epoch": max(kr.state_keys), "indexes": indexes}
    text = json.dumps(body, separators=(",", ":"))
    key = kr.state_mac_key(int(body["epoch"]))
    mac = hmac.new(key, b"ward ledger state v1\x00" + text.encode(), hashlib.sha256).hexdigest()
    conn.execute("DELETE FROM ward_ledger")
    conn.execute("INSERT INTO ward_ledger (id, counter, body, mac) VALUES (1, ?, ?, ?)", (body["counter"], text, mac))
    return body["database"]


@pytest.fixture
def conn():
    c = sqlite3.connect(":memory:", isolation_level=None)
    c.execute("CREATE TABLE ward_ledger (id INTEGER PRIMARY KEY, counter BIGINT NOT NULL, body TEXT NOT NULL, mac TEXT NOT NULL)")
    return c


def record(epoch, slot=0, rekey=None, normalizer="fold"):
    r = {"table": "users", "column": "email", "name": "email", "index": "email_idx", "spare": "email_idx2",
         "normalizer": normalizer, "normalizer_version": 1, "size": 16, "epoch": epoch}
    if slot:
        r["slot"] = slot
    if rekey:
        r["rekey"] = rekey
    return r


def epochs(kr):
    ids = sorted(kr.keys)
    assert len(ids) >= 2, "the vectors' keyring has two keys"
    return ids[0], ids[1]


def v2(kr, db, epoch, value):
    return BlindIndex(kr, "users", "email", normalize="fold", database=db, name="email", epoch=epoch).compute(value)


def test_follows_a_rekey(conn, kr):
    """Between re-keys one column; in the first phase writes fill both; once
    filled, writes fill the new one alone; look-ups try both throughout; after
    the switch the spare column holds the values (Go: TestReindex)."""
    e1, e2 = epochs(kr)
    x = Indexer(kr, "users", "email")
    db = plant(conn, kr, [record(e1)])
    assert x.lookup(conn, "Alice@Example.com") == (v2(kr, db, e1, "alice@example.com"), None)
    assert x.write(conn, "alice@example.com") == (v2(kr, db, e1, "alice@example.com"), None)
    plant(conn, kr, [record(e1, rekey={"epoch": e2, "phase": "both"})])
    both = (v2(kr, db, e1, "a@x"), v2(kr, db, e2, "a@x"))
    assert x.lookup(conn, "A@X") == both and x.write(conn, "a@x") == both
    plant(conn, kr, [record(e1, rekey={"epoch": e2, "phase": "filled"})])
    assert x.lookup(conn, "a@x") == both
    assert x.write(conn, "a@x") == (None, both[1])
    plant(conn, kr, [record(e2, slot=1)])
    assert x.lookup(conn, "a@x") == (None, both[1]) and x.write(conn, "a@x") == (None, both[1])
    assert x.columns(conn) == ("email_idx", "email_idx2")


def test_v1_record(conn, kr):
    """An index recorded as v1 (epoch 0, the values of field.NewBlindIndex)
    is computed as v1 until its re-key."""
    x = Indexer(kr, "users", "email")
    plant(conn, kr, [record(0)])
    assert x.lookup(conn, "Bob@x") == (BlindIndex(kr, "users", "email", normalize="fold").compute("bob@x"), None)


def test_refusals(conn, kr):
    """No record, an application's own normaliser, and a ledger a database
    writer altered are refused with typed errors."""
    e1, _ = epochs(kr)
    x = Indexer(kr, "users", "email")
    plant(conn, kr, [])
    with pytest.raises(WardError, match="records no blind index"):
        x.lookup(conn, "a@x")
    plant(conn, kr, [record(e1, normalizer="app-trim")])
    with pytest.raises(WardError, match="app-trim"):
        x.lookup(conn, "a@x")
    plant(conn, kr, [record(e1)])
    conn.execute("UPDATE ward_ledger SET body = replace(body, '\"slot\"', '\"x\"'), mac = '00'")
    with pytest.raises(LedgerError):
        x.write(conn, "a@x")


def test_the_go_cli_rekeys_while_a_python_process_follows(tmp_path):
    """Go's indexer vector (ledger/testdata/indexer-v1.json) in SQLite: after
    a rotation, ``ward keyring reindex`` gives up naming a Python process that
    joined and follows nothing, and completes once it follows the indexer;
    every row is then found in the spare column, the old one empty."""
    from test_fleet import go
    from ward import Column, FleetMember
    g = vectors("ledger/testdata/indexer-v1.json")
    mk, kr_file, db = tmp_path / "mk", tmp_path / "kr.json", tmp_path / "app.db"
    mk.write_text(g["master_key"])
    kr_file.write_text(json.dumps(g["keyring"]))
    with sqlite3.connect(db) as c:
        c.execute(g["schema"])
        c.execute("CREATE TABLE ward_ledger (id INTEGER PRIMARY KEY, counter BIGINT NOT NULL, body TEXT NOT NULL, mac TEXT NOT NULL)")
        c.execute("INSERT INTO ward_ledger (id, counter, body, mac) VALUES (1, ?, ?, ?)", (g["ledger"]["counter"], g["ledger"]["body"], g["ledger"]["mac"]))
    kr = Keyring.load(str(kr_file), MasterKey.load(str(mk)))
    x, email = Indexer(kr, "users", "email"), Column("users", "email", kr)
    emails = ["a@example.com", "B@example.com", "c@example.com"]

    def insert(i: int, e: str) -> None:
        c = sqlite3.connect(db, isolation_level=None, timeout=30)
        try:
            c.execute("BEGIN IMMEDIATE")
            a, b = x.write(c, e)
            c.execute("INSERT INTO users (id, email, email_idx, email_idx2) VALUES (?, ?, ?, ?)", (i, email.seal(e, i), a, b))
            c.execute("COMMIT")
        finally:
            c.close()

    for i, e in enumerate(emails):
        insert(i, e)
    keys = ("--keyring", str(kr_file), "--master-key-file", str(mk), "--db", f"sqlite:{db}")
    go("keyring", "rotate", *keys)
    errors: list[Exception] = []
    m = FleetMember.join(lambda: sqlite3.connect(db, timeout=30), kr, ["sealed:users.email"], heartbeat=0.2, on_error=errors.append)
    try:
        waited = go("keyring", "reindex", "--wait", "1500ms", *keys, ok=False)
        assert waited.returncode == 1 and m.id in waited.stderr, waited.stderr
        m.follow(x)
        done = go("keyring", "reindex", "--wait", "100s", *keys)
        assert "3 rows indexed, now in email_idx2" in done.stdout, done.stdout
    finally:
        m.close()
    assert errors == [], errors
    insert(3, "d@example.com")
    with sqlite3.connect(db) as c:
        for i, e in enumerate([*emails, "d@example.com"]):
            a, b = x.lookup(c, e.upper())
            assert a is None
            assert c.execute("SELECT id, email_idx FROM users WHERE email_idx2 = ?", (b,)).fetchone() == (i, None), e

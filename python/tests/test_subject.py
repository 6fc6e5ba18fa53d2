"""Subject keys: opening class-2 values, and sealing only where ward's
rules allow it (each refusal planted in the database)."""

from __future__ import annotations

import json
import sqlite3

import pytest

from conftest import vectors
from ward import Column, Keyring, LedgerError, MasterKey, SubjectRefusedError
from ward.ciphertext import parse_header
from ward.ledger import LedgerState
from ward.subject import SubjectKeys

G = vectors("field/subject/testdata/subject-v4.json")

SCHEMA = """
CREATE TABLE ward_subject_keys (namespace TEXT, subject TEXT, version BIGINT, first SMALLINT,
  wrapped BLOB, created_at BIGINT, held SMALLINT DEFAULT 0, recovery BLOB,
  PRIMARY KEY (namespace, subject, version));
CREATE TABLE ward_subject_tombstones (namespace TEXT, subject TEXT, forgotten_at BIGINT, epoch BIGINT, mac TEXT,
  PRIMARY KEY (namespace, subject));
CREATE TABLE ward_ledger (id INTEGER PRIMARY KEY, counter BIGINT NOT NULL, body TEXT NOT NULL, mac TEXT NOT NULL);
"""


@pytest.fixture
def db():
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA)
    for k in G["keys"]:
        conn.execute("INSERT INTO ward_subject_keys (namespace, subject, version, wrapped, created_at, held) VALUES (?, ?, ?, ?, 0, ?)",
                     (G["namespace"], k["subject"], k["version"], bytes.fromhex(k["wrapped_hex"]), k["held"]))
    plant_ledger(conn, G["ledger"])
    return conn


def plant_ledger(conn, row):
    conn.execute("DELETE FROM ward_ledger")
    conn.execute("INSERT INTO ward_ledger (id, counter, body, mac) VALUES (1, ?, ?, ?)", (row["counter"], row["body"], row["mac"]))


@pytest.fixture
def kr():
    return Keyring.loads(json.dumps(G["keyring"]), MasterKey.parse(G["master_key"]))


def column(conn, kr):
    subjects = SubjectKeys(conn, kr, G["namespace"])
    return Column(G["table"], G["column"], kr, bind=G["bind"], subjects=subjects, subject_column=G["bind"][0])


def test_opens_v4_values_of_present_subjects(db, kr):
    col = column(db, kr)
    for v in G["values"]:
        ct = bytes.fromhex(v["ciphertext_hex"])
        assert parse_header(ct).version == 4 and parse_header(ct).key_class == 2
        if v["subject"] == "carol":  # forgotten: her key is gone
            with pytest.raises(SubjectRefusedError):
                col.open(ct, v["row"], v["subject"])
        else:
            assert col.open_text(ct, v["row"], v["subject"]) == v["plaintext"]


def test_seals_v4_into_an_existing_key(db, kr):
    col = column(db, kr)
    ct = col.seal("from python", 7, "alice")
    h = parse_header(ct)
    assert (h.version, h.key_class) == (4, 2)
    assert h.key_id == next(k["version"] for k in G["keys"] if k["subject"] == "alice")
    assert col.open_text(ct, 7, "alice") == "from python"
    before = db.execute("SELECT count(*) FROM ward_subject_keys").fetchone()
    with pytest.raises(SubjectRefusedError):
        col.seal("to a subject without a key", 8, "dave")
    assert db.execute("SELECT count(*) FROM ward_subject_keys").fetchone() == before


def test_rolled_back_ledger_refused(db, kr):
    plant_ledger(db, G["older_ledger"])
    with pytest.raises(LedgerError, match="older copy"):
        column(db, kr).seal("x", 7, "alice")


def test_tampered_or_missing_ledger_refused(db, kr):
    row = dict(G["ledger"])
    row["body"] = row["body"].replace('"opened":1796000001000', '"opened":1796000001001')
    plant_ledger(db, row)
    with pytest.raises(LedgerError, match="MAC"):
        column(db, kr).seal("x", 7, "alice")
    db.execute("DROP TABLE ward_ledger")
    with pytest.raises(LedgerError, match="no ledger"):
        column(db, kr).seal("x", 7, "alice")


def test_tombstone_refused(db, kr):
    db.execute("INSERT INTO ward_subject_tombstones VALUES (?, 'alice', 0, 1, '00')", (G["namespace"],))
    with pytest.raises(SubjectRefusedError, match="forgotten"):
        column(db, kr).seal("x", 7, "alice")


def test_private_key_refused(db, kr):
    db.execute("UPDATE ward_subject_keys SET held = 1 WHERE subject = 'bob'")
    col = column(db, kr)
    with pytest.raises(SubjectRefusedError, match="private"):
        col.seal("x", 7, "bob")
    v = next(v for v in G["values"] if v["subject"] == "bob")
    with pytest.raises(SubjectRefusedError):
        col.open(bytes.fromhex(v["ciphertext_hex"]), v["row"], "bob")


def test_v3_until_the_fleet_opens_v4(db, kr):
    body = json.loads(G["ledger"]["body"])
    assert LedgerState(body["database"], 3, 1, frozenset()).allows("ciphertext:v4") is False
    keys = SubjectKeys(db, kr, G["namespace"])
    keys._ledger = LedgerState(body["database"], 3, 1, frozenset())
    col = Column(G["table"], G["column"], kr, bind=G["bind"], subjects=keys, subject_column=G["bind"][0])
    ct = col.seal("while a v3-only process runs", 9, "alice")
    assert parse_header(ct).version == 3
    assert col.open_text(ct, 9, "alice") == "while a v3-only process runs"


def test_subject_grant_opens_one_subjects_values_of_one_column():
    from ward import NotGrantedError, WrongContextError
    from ward.errors import UnsupportedVersionError
    from ward.subject import SubjectGrant

    g = SubjectGrant.loads(G["subject_grant_alice"])
    col = Column(G["table"], G["column"], None, bind=G["bind"], subjects=g, subject_column=G["bind"][0])
    for v in G["values"]:
        ct = bytes.fromhex(v["ciphertext_hex"])
        if v["subject"] == "alice":
            assert col.open_text(ct, v["row"], "alice") == v["plaintext"]
            with pytest.raises(WrongContextError):  # presented as another user's
                col.open(ct, v["row"], "bob")
        else:
            with pytest.raises(WrongContextError):
                col.open(ct, v["row"], v["subject"])
    other = Column("conversations", "title", None, bind=G["bind"], subjects=g, subject_column=G["bind"][0])
    alice = bytes.fromhex(G["values"][0]["ciphertext_hex"])
    with pytest.raises(WrongContextError):
        other.open(alice, 1, "alice")
    with pytest.raises(UnsupportedVersionError):
        col.seal("a grant never seals", 1, "alice")
    v3 = bytes.fromhex(vectors("field/subject/testdata/store-v1.json")["values"][0]["ciphertext_hex"])
    with pytest.raises(NotGrantedError):
        col.open(v3, 1, "alice")


def forge_ledger(kr, database, epoch, key=None):
    """A ledger row as the holder of a keyring file would forge it."""
    import hmac as _hmac
    import hashlib
    body = json.dumps({"database": database, "keyring": kr.id, "keys": [], "generation": 1, "counter": 1, "epoch": epoch}, separators=(",", ":"))
    k = key if key is not None else kr.state_mac_key(epoch)
    mac = _hmac.new(k, b"ward ledger state v1\x00" + body.encode(), hashlib.sha256).hexdigest()
    return {"counter": 1, "body": body, "mac": mac}


def test_forged_unanchored_ledger_refused(db, kr):
    """A ledger under a database ID the keyring does not anchor, at counter
    1, is refused while the keyring anchors another (Go: ledger
    TestForgedUnanchoredLedger)."""
    epoch = max(kr.state_keys)
    plant_ledger(db, forge_ledger(kr, "db-00000000feedbeef", epoch))
    with pytest.raises(LedgerError, match="does not anchor"):
        column(db, kr).seal("x", 7, "alice")


def test_epoch_zero_ledger_refused(db, kr):
    """A ledger MAC'd under the root alone (epoch 0) is refused in a keyring
    with state keys (Go: keycore TestStateMACEpochZero)."""
    from ward import aead
    anchored = next(iter(kr.anchors))
    root_only = aead.hkdf(kr._root, b"ward keyring state mac v1\x000", 32, salt=None)
    plant_ledger(db, forge_ledger(kr, anchored, 0, key=root_only))
    with pytest.raises(LedgerError, match="epoch 0"):
        column(db, kr).seal("x", 7, "alice")


def test_epoch_zero_ledger_of_a_database_anchored_there(kr):
    """A keyring file from before state keys anchors its database at epoch
    0, and its first key change gives it state keys while the ledger is
    still there: that ledger verifies; once the anchor records a later
    epoch it is refused (Go: ledger TestKeyringBeforeStateKeys)."""
    from ward import aead
    from ward.ledger import verify_row
    anchored = next(iter(kr.anchors))
    root_only = aead.hkdf(kr._root, b"ward keyring state mac v1\x000", 32, salt=None)
    row = forge_ledger(kr, anchored, 0, key=root_only)
    kr.anchors[anchored] = dict(kr.anchors[anchored], epoch=0, counter=1)
    assert verify_row(kr, row["counter"], row["body"], row["mac"]).epoch == 0
    kr.anchors[anchored] = dict(kr.anchors[anchored], epoch=max(kr.state_keys))
    with pytest.raises(LedgerError, match="epoch 0"):
        verify_row(kr, row["counter"], row["body"], row["mac"])


def test_seal_refused_under_the_key_floor(db, kr):
    """After a revocation raised the namespace's key floor, a subject whose
    newest version is under it (the revocation's versions deleted by a
    database writer) is not sealed for (Go: cmd/ward TestGrantRevokeKeyFloor)."""
    import hashlib
    import hmac as _hmac
    body = json.loads(G["ledger"]["body"])
    body["counter"] += 1
    body.setdefault("counters", {})["subject.floor:" + G["namespace"]] = 1
    text = json.dumps(body, separators=(",", ":"))
    mac = _hmac.new(kr.state_mac_key(int(body["epoch"])), b"ward ledger state v1\x00" + text.encode(), hashlib.sha256).hexdigest()
    col = column(db, kr)
    col.seal("before", 7, "alice")  # the golden ledger: no floor
    plant_ledger(db, {"counter": body["counter"], "body": text, "mac": mac})
    with pytest.raises(SubjectRefusedError, match="key floor"):
        column(db, kr).seal("after", 8, "alice")


def test_forget_elsewhere_takes_effect_within_the_ttl(db, kr, monkeypatch):
    """A long-running reader cached unwrapped keys for ever, so a subject
    another process forgot kept opening here; the cache now lives ttl
    seconds (30 by default, as Go's), then the key row is read again."""
    import time

    subjects = SubjectKeys(db, kr, G["namespace"], ttl=60)
    col = Column(G["table"], G["column"], kr, bind=G["bind"], subjects=subjects, subject_column=G["bind"][0])
    v = next(v for v in G["values"] if v["subject"] == "alice")
    ct = bytes.fromhex(v["ciphertext_hex"])
    assert col.open_text(ct, v["row"], "alice") == v["plaintext"]
    db.execute("DELETE FROM ward_subject_keys WHERE subject = 'alice'")  # forgotten by another process
    assert col.open_text(ct, v["row"], "alice") == v["plaintext"]  # within the TTL, as in Go
    later = time.monotonic() + 61
    monkeypatch.setattr(time, "monotonic", lambda: later)
    with pytest.raises(SubjectRefusedError):
        col.open(ct, v["row"], "alice")

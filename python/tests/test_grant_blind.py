"""Grants open their own columns only; blind indexes match Go's."""

from __future__ import annotations

import json

import pytest

from conftest import vectors
from ward import BlindIndex, Column, Grant, Keyring, MasterKey, NotGrantedError, WrongContextError, WrongWrapperError
from ward.errors import WardError

GRANT = vectors("keyring/testdata/grant-v1.json")


def grant() -> Grant:
    return Grant.loads(json.dumps(GRANT["grant"]), MasterKey.parse(GRANT["reader_master_key"]))


def test_grant_needs_the_readers_key():
    with pytest.raises(WrongWrapperError):
        Grant.loads(json.dumps(GRANT["grant"]), MasterKey.parse(GRANT["master_key"]))


def test_titles_grant_opens_titles_only():
    g = grant()
    assert g.scopes == ["notes.title"] and g.covers("notes", "title") and not g.covers("notes", "body")
    title = Column("notes", "title", g)
    body = Column("notes", "body", g)
    opened = 0
    for v in GRANT["values"]:
        ct = bytes.fromhex(v["ciphertext_hex"])
        col = title if v["column"] == "title" else body
        if v["opens"]:
            assert col.open(ct, 42) == v["plaintext"].encode()
            opened += 1
        elif v["error"] == "not-granted":
            with pytest.raises(NotGrantedError):
                col.open(ct, 42)
        else:
            with pytest.raises(WrongContextError):
                col.open(ct, 42)
            with pytest.raises(WardError):  # nor under the title's scope
                title.open(ct, 42)
    assert opened == 1
    with pytest.raises(WardError):
        title.seal("a grant never seals", 42)


def test_tampered_grant_refused():
    doc = dict(GRANT["grant"])
    doc["scopes"] = ["notes.body"]
    with pytest.raises(WardError):
        Grant.loads(json.dumps(doc), MasterKey.parse(GRANT["reader_master_key"]))


def test_blind_index_vectors():
    v = vectors("field/testdata/blind-index-v1.json")
    kr = Keyring.loads(json.dumps(v["keyring"]), MasterKey.parse(v["master_key"]))
    for vec in v["vectors"]:
        bi = BlindIndex(kr, vec["table"], vec["column"], size=vec["size"], normalize=vec["normalize"])
        assert bi.compute(bytes.fromhex(vec["value"])).hex() == vec["index_hex"], vec


def test_grant_of_a_per_subject_column():
    """A grant of messages.body sealed under users' keys: alice's body
    opens from her key row's wrap; bob (private since) has none."""
    import sqlite3

    from ward import SubjectRefusedError
    from ward.subject import GrantSubjects

    v = vectors("field/subject/testdata/grant-subject-v1.json")
    g = Grant.loads(json.dumps(v["grant"]), MasterKey.parse(v["reader_master_key"]))
    assert g.subject_columns == {("messages", "body"): "users"}
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE ward_subject_keys (namespace TEXT, subject TEXT, version BIGINT, held SMALLINT, scoped BLOB)")
    for k in v["keys"]:
        db.execute("INSERT INTO ward_subject_keys VALUES (?, ?, ?, ?, ?)", (v["namespace"], k["subject"], k["version"], k["held"], bytes.fromhex(k["scoped_hex"])))
    col = Column(v["table"], v["column"], g, bind=v["bind"], subjects=GrantSubjects(db, g, v["table"], v["column"]), subject_column=v["bind"][0])
    for val in v["values"]:
        ct = bytes.fromhex(val["ciphertext_hex"])
        if val["opens"]:
            assert col.open_text(ct, val["row"], val["subject"]) == val["plaintext"]
            with pytest.raises(WardError):  # presented as another user's: no such key of bob's
                col.open(ct, val["row"], "bob")
        else:
            with pytest.raises(SubjectRefusedError):
                col.open(ct, val["row"], val["subject"])
    db.execute("DELETE FROM ward_subject_keys WHERE subject = 'alice'")  # forgotten
    alice = next(x for x in v["values"] if x["subject"] == "alice")
    with pytest.raises(SubjectRefusedError):
        col.open(bytes.fromhex(alice["ciphertext_hex"]), alice["row"], "alice")


def test_blind_index_v2_vectors():
    """Go's field.NewIndex: a key per index from the epoch each vector
    names, bound to the database; another database indexes differently."""
    v = vectors("field/testdata/blind-index-v2.json")
    kr = Keyring.loads(json.dumps(v["keyring"]), MasterKey.parse(v["master_key"]))
    assert len({vec["epoch"] for vec in v["vectors"]}) == 2
    for vec in v["vectors"]:
        assert vec["normalizer_version"] == 1
        args = dict(size=vec["size"], normalize=vec["normalizer"], name=vec["name"], epoch=int(vec["epoch"], 16))
        bi = BlindIndex(kr, vec["table"], vec["column"], database=v["database"], **args)
        value = bytes.fromhex(vec["value_hex"])
        assert bi.compute(value).hex() == vec["index_hex"], vec
        other = BlindIndex(kr, vec["table"], vec["column"], database=v["database"] + "0", **args)
        assert other.compute(value).hex() != vec["index_hex"]

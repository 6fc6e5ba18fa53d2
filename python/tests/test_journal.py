"""The forget journal's reader over Go's vectors: every line of
forgetlog/testdata/vectors.json parses and verifies, with its subject hash
and tallies; the private rule (current epoch, chain, v1 until the mark);
files read as Go's reader reads them; and Go's store's vector
(field/subject/testdata/private-journal-v1.json), where a seal under a key
a database writer put back is refused only with the journal."""

from __future__ import annotations

import base64
import json
import os
import sqlite3

import pytest

from conftest import vectors
from test_subject import SCHEMA
from ward import Column, CorruptFileError, ForgetJournal, Keyring, MasterKey, SubjectRefusedError
from ward.journal import MAX_LINE, _Records, parse, subject_hash
from ward.ledger import LedgerState, Tally, verify
from ward.subject import SubjectKeys

V = vectors("forgetlog/testdata/vectors.json")
P = vectors("field/subject/testdata/private-journal-v1.json")
DB = "db-0123456789abcdef"
MARK = "integrity:private-v2:users"


class RawKeys:
    """The vectors' keys, their epoch current or not."""

    def __init__(self, current: int):
        self.hash, self.mac = bytes.fromhex(V["hash_key"]), bytes.fromhex(V["mac_key"])
        self._current = current

    def current(self) -> int:
        return self._current

    def at(self, epoch: int) -> bytes | None:
        return bytes.fromhex(V["epoch_key"]) if epoch == V["epoch"] else None

    def ended(self, epoch: int) -> bool:
        return False


def tally(t) -> Tally:
    return Tally(t["count"], t["since"], bytes.fromhex(t["head"]))


def folder(tmp_path, text: str) -> str:
    d = tmp_path / "journal"
    d.mkdir()
    (d / "forgets-test.wfj").write_bytes(text.encode())
    return str(d)


def ledger(t: Tally, *marks: str):
    body = {"marks": list(marks), "tallies": {"subject.private:users": {"count": t.count, "since": t.since, "head": base64.b64encode(t.head).decode()}}}
    return lambda: LedgerState(DB, 1, 1, frozenset(), body)


def never() -> LedgerState:
    raise AssertionError("the ledger was asked: a current epoch's record needs no tally")


def record(subject: str):
    return next(r for r in V["records"] if r["subject"] == subject)


def test_every_vector_line_verifies_and_chains():
    keys = RawKeys(0)
    for r in V["records"]:
        line = r["line"].encode()
        f = r["line"][:-1].split(" ")
        assert subject_hash(keys.hash, r["namespace"], r["subject"]).hex() == f[3], r["subject"]
        recs = _Records(r["database"], lambda rec: keys.at(rec.epoch) if rec.chained else keys.mac, keys.ended)
        recs.add(line)
        assert recs.invalid == 0, r["line"]
        if r.get("chain"):
            rec = parse(f)
            assert rec is not None and rec.prev == tally(r["prev"]) and rec.next() == tally(r["next"]), r["subject"]
        for i in (0, 20, len(line) - 3):  # a changed byte: the tag, the database or namespace, the MAC
            bad = _Records(r["database"], lambda rec: keys.at(rec.epoch) if rec.chained else keys.mac, keys.ended)
            bad.add(line[:i] + bytes([line[i] ^ 1]) + line[i + 1:])
            assert bad.invalid == 1, (i, r["line"])


def test_private_records_count_under_the_current_epoch_or_on_the_chain(tmp_path):
    d = folder(tmp_path, "".join(r["line"] for r in V["records"]))
    current = ForgetJournal.with_keys(d, RawKeys(V["epoch"]))
    assert current.is_private(DB, "users", "heidi", never)
    assert current.is_private(DB, "users", "ivan", never)
    assert not current.is_private(DB, "users", "erin", never), "a forget is not a subject gone private"
    assert not current.is_private(DB, "users", "nobody", never)
    assert not current.is_private("db-other", "users", "heidi", never)
    older = ForgetJournal.with_keys(d, RawKeys(V["epoch"] + 1))
    zero, heidi, ivan = Tally(0, 0), tally(record("heidi")["next"]), tally(record("ivan")["next"])
    assert not older.is_private(DB, "users", "heidi", ledger(zero, MARK)), "off the chain, not current"
    assert older.is_private(DB, "users", "heidi", ledger(heidi, MARK))
    assert not older.is_private(DB, "users", "ivan", ledger(heidi, MARK))
    assert older.is_private(DB, "users", "ivan", ledger(ivan, MARK))
    assert record("bob")["line"].startswith("ward-private-v1 ")
    assert older.is_private(DB, "users", "bob", ledger(zero)), "v1 counts until the mark"
    assert not older.is_private(DB, "users", "bob", ledger(zero, MARK))
    assert older.invalid == 0


def test_reads_complete_lines_only_and_bounds_what_a_writer_plants(tmp_path):
    heidi = record("heidi")["line"]
    d = folder(tmp_path, "ward-private-v2 " + "x" * (MAX_LINE + 10) + "\n" + heidi[:40])
    j = ForgetJournal.with_keys(d, RawKeys(V["epoch"]))
    assert not j.is_private(DB, "users", "heidi", never), "a torn last line"
    assert j.invalid == 1, "the overlong line"
    with open(os.path.join(d, "forgets-test.wfj"), "a") as f:
        f.write(heidi[40:])
    assert j.is_private(DB, "users", "heidi", never), "the line once complete"
    os.mkdir(os.path.join(d, "planted.wfj"))
    with pytest.raises(CorruptFileError, match="planted.wfj"):
        j.is_private(DB, "users", "heidi", never)
    with pytest.raises(CorruptFileError):
        ForgetJournal(str(tmp_path / "missing"), None)  # type: ignore[arg-type]


def test_mutated_lines_are_refused_never_raised():
    import random
    keys = RawKeys(V["epoch"])
    recs = _Records(DB, lambda rec: keys.at(rec.epoch) if rec.chained else keys.mac, lambda e: e % 2 == 0)
    rnd = random.Random(5)
    for _ in range(5000):
        b = bytearray(rnd.choice(V["records"])["line"].encode()[:-1])
        for _ in range(rnd.randint(1, 4)):
            i = rnd.randrange(len(b))
            op = rnd.randrange(3)
            if op == 0:
                b[i] = rnd.randrange(256)
            elif op == 1:
                del b[i]
            else:
                b.insert(i, rnd.choice(b" /,-*0af"))
        recs.add(bytes(b) + b"\n")
        recs.committed("7573657273", Tally(rnd.randrange(3), 0, bytes(32) if rnd.random() < 0.6 else b""))


def test_refuses_a_seal_under_a_put_back_key_of_a_private_subject(tmp_path):
    kr = Keyring.loads(json.dumps(P["keyring"]), MasterKey.parse(P["master_key"]))
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA)
    conn.execute("INSERT INTO ward_ledger (id, counter, body, mac) VALUES (1, ?, ?, ?)", (P["ledger"]["counter"], P["ledger"]["body"], P["ledger"]["mac"]))
    for k in P["keys"]:
        conn.execute("INSERT INTO ward_subject_keys (namespace, subject, version, wrapped, created_at, held) VALUES (?, ?, ?, ?, 0, ?)",
                     (P["namespace"], k["subject"], k["version"], bytes.fromhex(k["wrapped_hex"]), k["held"]))
    journal = ForgetJournal(folder(tmp_path, "".join(P["journal"])), kr)
    with_journal = Column("messages", "body", kr, bind=["user_id"], subjects=SubjectKeys(conn, kr, "users", journal=journal), subject_column="user_id")
    without = Column("messages", "body", kr, bind=["user_id"], subjects=SubjectKeys(conn, kr, "users"), subject_column="user_id")
    for c in P["subjects"]:
        why = f"{c['subject']}: {c['why']}"
        assert journal.is_private(P["database"], "users", c["subject"], lambda: verify(conn, kr)) == c["private"], why
        if c["refused"]:
            with pytest.raises(SubjectRefusedError):
                with_journal.seal(b"from python", 9, c["subject"])
        else:
            ct = with_journal.seal(b"from python", 9, c["subject"])
            assert with_journal.open(ct, 9, c["subject"]) == b"from python", why
    # Without the journal, alice's put-back key (and bob's) would take the seal: what the journal is for.
    without.seal(b"x", 9, "alice")
    without.seal(b"x", 9, "bob")
    assert journal.invalid == 0

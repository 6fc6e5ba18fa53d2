"""Column's kept keys: the common case (no bound columns, bytes in, a
keyring key) seals and opens through a ScopeKey and the last value's key
kept; every other case, and every failure, goes the general way and says
why with the same typed error."""

from __future__ import annotations

import json
import threading

import pytest

from conftest import vectors
from ward import Column, Keyring, MasterKey, WrongContextError
from ward.errors import MalformedError, WardError

V = vectors("keyring/testdata/v4-vectors.json")


def keyring() -> Keyring:
    return Keyring.loads(json.dumps(V["keyring"]), MasterKey.parse(V["master_key"]))


def column_vectors() -> list[tuple[bytes, bytes]]:
    """The vectors of messages.body row 42: (ciphertext, plaintext), one per key."""
    scope = b"ward/field/v4\x00\x08messages\x04body"
    return [(bytes.fromhex(v["ciphertext_hex"]), v["plaintext"].encode()) for v in V["vectors"] if bytes.fromhex(v["scope_hex"]) == scope]


def test_open_switches_keys():
    """Values under each of three keys, in turns: the kept key of the last
    value never opens the next one under another key, nor a wrong row."""
    col = Column("messages", "body", keyring())
    vs = column_vectors()
    assert len(vs) == 3
    for _ in range(3):
        for ct, pt in vs + vs[::-1]:
            assert col.open(ct, 42) == pt
            assert col.open(ct, "42") == pt
            with pytest.raises(WrongContextError):
                col.open(ct, 43)
            assert col.open(ct, 42) == pt


def test_open_refuses_damage_typed():
    """A value cut short, or damaged, after its header was kept: a typed
    error, never the AEAD's own ValueError or InvalidTag."""
    col = Column("messages", "body", keyring())
    ct, pt = column_vectors()[1]
    assert col.open(ct, 42) == pt
    for n in range(len(ct)):
        with pytest.raises(WardError):
            col.open(ct[:n], 42)
    damaged = bytearray(ct)
    damaged[-1] ^= 1
    with pytest.raises(WardError) as e:
        col.open(bytes(damaged), 42)
    assert not isinstance(e.value, WrongContextError)
    with pytest.raises(MalformedError):
        col.open(ct[:7], 42)


def test_seal_common_and_general():
    """The kept ScopeKey's values and the general path's open alike, for
    int and str row keys, bytes and str plaintext, long row keys (a
    two-byte length) and a column with bound columns."""
    kr = keyring()
    col = Column("messages", "body", kr)
    other = Column("messages", "body", kr)
    bound = Column("messages", "body", kr, bind=["owner"])
    long_row = "r" * 200
    for row in (1, 42, 2**62, "42", long_row):
        for pt in (b"", b"hello", "h\u00e9llo", b"x" * 1000):
            want = pt if isinstance(pt, bytes) else pt.encode()
            ct = col.seal(pt, row)
            assert ct[0] == 4
            assert other.open(ct, row) == want
            assert col.open(ct, row) == want
            with pytest.raises(WrongContextError):
                other.open(ct, "x")
            b = bound.seal(pt, row, "alice")
            assert bound.open(b, row, "alice") == want
            with pytest.raises(WrongContextError):
                bound.open(b, row, "bob")


def test_seal_from_threads():
    """Each thread keeps its own encryptor of the check key: values sealed
    from eight threads at once all open, with a check that diagnoses."""
    kr = keyring()
    col = Column("messages", "body", kr)
    out: list[tuple[int, bytes]] = []
    lock = threading.Lock()

    def work(t: int) -> None:
        got = [(t * 1000 + i, col.seal(b"m%d" % i, t * 1000 + i)) for i in range(300)]
        with lock:
            out.extend(got)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(out) == 2400
    reader = Column("messages", "body", kr)
    for row, ct in out:
        assert reader.open(ct, row) == b"m%d" % (row % 1000)
        with pytest.raises(WrongContextError):  # the check says: another row
            reader.open(ct, row + 1)


def test_common_sealer_hands_off_bound_values():
    """Once a column seals through its common-case function, a call with
    bound values on a column that binds none is refused as before: the
    same typed error as a column's first seal."""
    kr = keyring()
    fresh = Column("messages", "body", kr)
    with pytest.raises(WardError) as first:
        fresh.seal(b"x", 1, "alice")
    col = Column("messages", "body", kr)
    col.seal(b"x", 1)
    with pytest.raises(WardError) as later:
        col.seal(b"x", 1, "alice")
    assert type(later.value) is type(first.value)

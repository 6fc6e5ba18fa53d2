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
from ward._wire import encode_text
from ward.errors import MalformedError, WardError

V = vectors("keyring/testdata/v4-vectors.json")


def keyring() -> Keyring:
    return Keyring.loads(json.dumps(V["keyring"]), MasterKey.parse(V["master_key"]))


def sealing(kr: Keyring, how: str, bind: tuple[str, ...] = ()) -> Column:
    """messages.body sealing under the keyring's primary (XChaCha20-Poly1305,
    the general way) or, for "aes", under its AES-256-GCM key through a
    ScopeKey: the common case's own sealer, as a column whose primary is
    AES-GCM seals."""
    col = Column("messages", "body", kr, bind=bind)
    if how == "aes":
        aes = next(k for k in kr.keys.values() if k.alg.name == "AES-256-GCM")
        sk = kr.scope_key(col.scope, aes.id)
        assert sk is not None
        col._keep_sealer(sk)
    return col


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


@pytest.mark.parametrize("how", ["primary", "aes"])
def test_seal_common_and_general(how):
    """The kept ScopeKey's values and the general path's open alike, for
    int and str row keys, bytes and str plaintext, long row keys (a
    two-byte length) and a column with bound columns."""
    kr = keyring()
    col = sealing(kr, how)
    assert ("seal" in col.__dict__) == (how == "aes")  # the common case's sealer, or the method
    other = Column("messages", "body", kr)
    bound = sealing(kr, how, bind=("owner",))
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


@pytest.mark.parametrize("how", ["primary", "aes"])
def test_seal_from_threads(how):
    """Threads share the check key's encryptor, each taking its own when
    another is inside it: values sealed from eight threads at once all
    open, with a check that diagnoses."""
    kr = keyring()
    col = sealing(kr, how)
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


def _opens_and_diagnoses(kr: Keyring, out: list[tuple[int, bytes]], pt: bytes) -> None:
    reader = Column("messages", "body", kr)
    for row, ct in out:
        assert reader.open(ct, row) == pt
        with pytest.raises(WrongContextError):  # the check says: another row
            reader.open(ct, row + 1)


def test_seal_when_the_shared_encryptor_refuses():
    """The shared encryptor of the check key refusing a call (another
    thread inside it): the seal takes this thread's own, and its values
    open with a check that diagnoses, through the column's sealer and
    ScopeKey.seal alike."""
    kr = keyring()
    col = Column("messages", "body", kr)
    aes = next(k for k in kr.keys.values() if k.alg.name == "AES-256-GCM")
    sk = kr.scope_key(col.scope, aes.id)
    assert sk is not None

    def busy(data: bytes) -> bytes:
        raise RuntimeError("Already borrowed")

    sk._block = busy
    col._keep_sealer(sk)
    out = [(i, col.seal(b"m", i)) for i in range(1, 4)]
    out += [(i, sk.seal(b"m", col.context(4, i, ()))) for i in range(4, 7)]
    assert hasattr(sk._threads, "update")
    _opens_and_diagnoses(kr, out, b"m")


def test_seal_while_another_thread_is_inside_the_shared_encryptor():
    """A thread inside the shared encryptor (a 1 MiB update, run without
    the GIL) while this one seals: the seal meets pyo3's refusal and takes
    this thread's own encryptor; every value opens and diagnoses. Skipped
    where the installed cryptography never releases the GIL in an update,
    the one case where two threads cannot meet inside it."""
    kr = keyring()
    col = sealing(kr, "aes")
    sk = col._seal_key
    assert sk is not None
    stop = threading.Event()

    def hog() -> None:
        big = bytes(1 << 20)
        while not stop.is_set():
            sk._block(big)

    t = threading.Thread(target=hog)
    t.start()
    try:
        met = False
        for _ in range(20000):  # can two threads meet inside it here?
            try:
                sk._block(bytes(16))
            except RuntimeError:
                met = True
                break
        if not met:
            pytest.skip("this cryptography never releases the GIL inside an update")
        out = []
        for i in range(1, 200001):
            out.append((i, col.seal(b"m", i)))
            if hasattr(sk._threads, "update"):
                break
    finally:
        stop.set()
        t.join()
    assert hasattr(sk._threads, "update"), "no seal met the other thread inside the shared encryptor"
    _opens_and_diagnoses(kr, out, b"m")


def test_common_case_stays_on_its_own_functions(monkeypatch):
    """Once installed, the common case's sealer and opener serve int and
    str row keys of a column binding no other column without the general
    way (which would open them too, only slower); another row, a text
    value and bound values still go the general way."""
    general = {"seal": 0, "open": 0}
    for name in general:
        method = getattr(Column, name)

        def counted(self, *args, _name=name, _method=method, **kw):
            general[_name] += 1
            return _method(self, *args, **kw)

        monkeypatch.setattr(Column, name, counted)
    kr = keyring()
    col = sealing(kr, "aes")
    reader = Column("messages", "body", kr)
    first = col.seal(b"first", 1)
    assert reader.open(first, 1) == b"first"
    assert general == {"seal": 0, "open": 1}  # the reader's first value installs its opener
    for row in (2, -7, 2**70, "row-2", "r" * 0x7F):
        ct = col.seal(b"v", row)
        assert reader.open(ct, row) == b"v"
    assert general == {"seal": 0, "open": 1}
    with pytest.raises(WrongContextError):
        reader.open(first, 2)
    assert reader.open(encode_text(first), 1) == b"first"
    assert general == {"seal": 0, "open": 3}
    long = col.seal(b"v", "r" * 0x80)  # a row key of 0x80 bytes: a two-byte length
    assert general["seal"] == 1
    assert reader.open(long, "r" * 0x80) == b"v"
    assert general["open"] == 4

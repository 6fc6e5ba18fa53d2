"""Blind indexes: a keyed digest of a column's normalised value, for
equality look-ups without decryption (FORMAT.md)."""

from __future__ import annotations

import unicodedata

import hashlib
import re
import struct

from typing import Any

from . import aead
from ._wire import lp, uvarint
from .errors import WardError
from .keyring import Keyring


def normalize_nfc(s: str) -> str:
    """Unicode normalisation form C (the default)."""
    return unicodedata.normalize("NFC", s)


def normalize_fold(s: str) -> str:
    """Trim, NFKC, then full case folding (e-mail addresses, user names)."""
    return unicodedata.normalize("NFKC", s.strip()).casefold()


NORMALIZERS = {"nfc": normalize_nfc, "fold": normalize_fold}
NORMALIZER_VERSION = 1
_PREFIX = re.compile(r"^(nfc|fold)\+prefix-([1-9][0-9]{0,2})$")


def normalizer(name: str):
    """The normalisation a recorded name names: ``nfc``, ``fold``, or
    either followed by ``+prefix-N`` (the first N code points, 1 to 256)."""
    if name in NORMALIZERS:
        return NORMALIZERS[name]
    m = _PREFIX.match(name)
    if m is None or int(m.group(2)) > 256:
        raise WardError(f"normaliser {name[:70]!r} is not one of ward's (nfc, fold, with +prefix-N)")
    base, n = NORMALIZERS[m.group(1)], int(m.group(2))
    return lambda s: base(s)[:n]


class BlindIndex:
    """``HMAC-SHA-256(K_col, normalize(value))`` truncated to ``size`` bytes.

    With ``database`` (the ledger's database ID) it is Go's
    ``field.NewIndex``, the v2 index: a key of its own per index ``name``
    (default: the column), normaliser and size, from the integrity
    ``epoch`` (default: the primary key's), bound to the database, and
    stored as ``0x02`` ‖ epoch ‖ digest. Without, it is the v1 index,
    keyed by the keyring's root."""

    def __init__(self, keyring: Keyring, table: str, column: str, size: int = 16, normalize: str = "nfc",
                 *, database: str | None = None, name: str | None = None, epoch: int | None = None):
        if not 4 <= size <= 32:
            raise WardError(f"blind index size {size} out of range [4, 32]")
        self.size = size
        self._prefix = self._header = b""
        if database is None:
            if normalize not in NORMALIZERS:
                raise WardError("normalize is 'nfc' or 'fold'")
            self._key = keyring.derive(b"blind-index\x00" + lp(table) + lp(column), 32)
            self._norm = NORMALIZERS[normalize]
            return
        if not database:
            raise WardError("a v2 blind index needs the database's ID")
        self._norm = normalizer(normalize)
        epoch = keyring.primary.id if epoch is None else epoch
        purpose = b"blind-index v2\x00" + lp(table) + lp(column) + lp(name or column) + lp(normalize)
        purpose += uvarint(NORMALIZER_VERSION) + uvarint(size)
        self._key = keyring.integrity_key(epoch, purpose)
        self._prefix = b"\x02" + struct.pack(">I", epoch)
        self._header = b"ward blind index v2\x00" + self._prefix + lp(database)

    def __repr__(self) -> str:
        return f"BlindIndex(size={self.size})"

    def compute(self, value: str | bytes) -> bytes:
        """The index of value; bytes that are not UTF-8 are indexed as given."""
        if isinstance(value, str):
            b = self._norm(value).encode()
        else:
            try:
                b = self._norm(bytes(value).decode()).encode()
            except UnicodeDecodeError:
                b = bytes(value)
        return self._prefix + aead.hmac_sha256(self._key, self._header + b)[: self.size]


class Indexer:
    """A blind index the database's ledger records with a spare column
    (Go: ``ledger.Ledger.Indexer``): computed as recorded (v1, or v2 under
    its epoch and bound to the database), and followed through its
    re-keys (``ward keyring reindex``). Every call reads the ledger again,
    so a process of this package follows each phase of a re-key at once and
    needs no registration in the fleet:

        a, b = x.lookup(conn, email)  # SELECT ... WHERE email_idx = a OR email_idx2 = b
        a, b = x.write(conn, email)   # INSERT ... (email_idx, email_idx2) VALUES (..., a, b), same transaction

    ``None`` is SQL NULL, which matches nothing. The index must be recorded
    by a Go process first (the application's ``Indexer``); an index
    computed with an application's own normaliser is refused."""

    def __init__(self, keyring: Keyring, table: str, column: str, name: str | None = None,
                 ledger_table: str | None = None):
        self._kr, self.table, self.column, self.name = keyring, table, column, name or column
        self._ledger_table = ledger_table

    def __repr__(self) -> str:
        return f"Indexer({self.table}.{self.column}, {self.name})"

    def columns(self, conn: Any) -> tuple[str, str]:
        """The index's two columns, in the order lookup and write return
        their values."""
        rec, _ = self._record(conn, False)
        return rec["index"], rec["spare"]

    def lookup(self, conn: Any, value: str | bytes) -> tuple[bytes | None, bytes | None]:
        """The values that find ``value``'s row, one per column: the
        current one's, and during a re-key the new one's too."""
        rec, db = self._record(conn, False)
        cur = self._index(rec, db, int(rec["epoch"])).compute(value)
        rk = rec.get("rekey")
        nxt = self._index(rec, db, int(rk["epoch"])).compute(value) if rk else None
        return self._slots(rec, cur, nxt)

    def write(self, conn: Any, value: str | bytes) -> tuple[bytes | None, bytes | None]:
        """What a row whose value is ``value`` stores in each column, for a
        write in the caller's open transaction on ``conn``: the ledger is
        read in it under a shared lock (on SQLite the transaction must have
        begun with ``BEGIN IMMEDIATE``), so a re-key moves to its next
        phase only after the transaction ends. Call it after the look-up
        that checks the value is free, in the same transaction."""
        rec, db = self._record(conn, True)
        rk = rec.get("rekey")
        cur = None if rk and rk.get("phase") == "filled" else self._index(rec, db, int(rec["epoch"])).compute(value)
        nxt = self._index(rec, db, int(rk["epoch"])).compute(value) if rk else None
        return self._slots(rec, cur, nxt)

    def _record(self, conn: Any, share: bool) -> tuple[dict, str]:
        from .ledger import DEFAULT_TABLE, verify
        st = verify(conn, self._kr, self._ledger_table or DEFAULT_TABLE, share=share)
        for rec in st.body.get("indexes") or []:
            if rec.get("table") == self.table and rec.get("column") == self.column and rec.get("name") == self.name:
                if not rec.get("spare"):
                    raise WardError(f"blind index {self.name} of {self.table}.{self.column} has no spare column: compute it with BlindIndex(database=..., epoch=...)")
                return rec, st.database
        raise WardError(f"the ledger records no blind index {self.name} of {self.table}.{self.column}: a Go process records it at its first use")

    def _index(self, rec: dict, database: str, epoch: int) -> BlindIndex:
        name, version, size = str(rec.get("normalizer", "")), int(rec.get("normalizer_version", 0)), int(rec.get("size", 16))
        if version != NORMALIZER_VERSION:
            raise WardError(f"blind index {self.name}: normaliser {name[:40]} version {version} is not this package's")
        if epoch == 0:
            return BlindIndex(self._kr, self.table, self.column, size, name)
        return BlindIndex(self._kr, self.table, self.column, size, name, database=database, name=self.name, epoch=epoch)

    def acks(self, st: Any) -> list[str]:
        """The forms a process following this index declares under the
        ledger state ``st``: Go's ``ledger.IndexAck`` of the re-key's
        phases so far (none between re-keys)."""
        for rec in st.body.get("indexes") or []:
            if rec.get("table") == self.table and rec.get("column") == self.column and rec.get("name") == self.name:
                rk = rec.get("rekey")
                if not rk or not rec.get("spare"):
                    return []
                h = hashlib.sha256(f"{self.table}\x00{self.column}\x00{self.name}".encode()).digest()[:8].hex()
                phases = ["both", "filled"] if rk.get("phase") == "filled" else ["both"]
                return [f"integrity:index.{h}@{int(rk['epoch']):08x}.{p}" for p in phases]
        return []

    @staticmethod
    def _slots(rec: dict, cur: bytes | None, nxt: bytes | None) -> tuple[bytes | None, bytes | None]:
        return (nxt, cur) if int(rec.get("slot", 0)) == 1 else (cur, nxt)

"""Blind indexes: a keyed digest of a column's normalised value, for
equality look-ups without decryption (FORMAT.md)."""

from __future__ import annotations

import unicodedata

import re
import struct

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

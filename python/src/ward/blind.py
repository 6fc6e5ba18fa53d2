"""Blind indexes: a keyed digest of a column's normalised value, for
equality look-ups without decryption (FORMAT.md)."""

from __future__ import annotations

import unicodedata

from . import aead
from ._wire import lp
from .errors import WardError
from .keyring import Keyring


def normalize_nfc(s: str) -> str:
    """Unicode normalisation form C (the default)."""
    return unicodedata.normalize("NFC", s)


def normalize_fold(s: str) -> str:
    """Trim, NFKC, then full case folding (e-mail addresses, user names)."""
    return unicodedata.normalize("NFKC", s.strip()).casefold()


NORMALIZERS = {"nfc": normalize_nfc, "fold": normalize_fold}


class BlindIndex:
    """``HMAC-SHA-256(K_col, normalize(value))`` truncated to ``size`` bytes."""

    def __init__(self, keyring: Keyring, table: str, column: str, size: int = 16, normalize: str = "nfc"):
        if not 4 <= size <= 32:
            raise WardError(f"blind index size {size} out of range [4, 32]")
        if normalize not in NORMALIZERS:
            raise WardError("normalize is 'nfc' or 'fold'")
        self._key = keyring.derive(b"blind-index\x00" + lp(table) + lp(column), 32)
        self._norm = NORMALIZERS[normalize]
        self.size = size

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
        return aead.hmac_sha256(self._key, b)[: self.size]

"""The AEADs and derivations ward's ciphertexts use, from ``cryptography``
and PyNaCl (libsodium); nothing here is a primitive of its own."""

from __future__ import annotations

import functools
import hmac
import os
import struct
import threading
from dataclasses import dataclass
from hashlib import sha256
from typing import Any, Callable

import google_crc32c
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF, HKDFExpand
from cryptography.exceptions import InvalidTag
from nacl import bindings as sodium
from nacl.exceptions import CryptoError

from .errors import AuthenticationError, UnsupportedVersionError


@dataclass(frozen=True)
class Algorithm:
    """One of ward's AEAD algorithms, by its header byte."""

    code: int
    name: str
    key_size: int
    nonce_size: int


AES128GCM = Algorithm(1, "AES-128-GCM", 16, 12)
AES256GCM = Algorithm(2, "AES-256-GCM", 32, 12)
XCHACHA20POLY1305 = Algorithm(3, "XChaCha20-Poly1305", 32, 24)
ALGORITHMS = {a.code: a for a in (AES128GCM, AES256GCM, XCHACHA20POLY1305)}
BY_NAME = {a.name: a for a in ALGORITHMS.values()}
TAG_SIZE = 16


def algorithm(code: int) -> Algorithm:
    """The algorithm of a header byte, or UnsupportedVersionError."""
    a = ALGORITHMS.get(code)
    if a is None:
        raise UnsupportedVersionError(f"algorithm byte {code:#04x}")
    return a


def by_name(name: str) -> Algorithm:
    """The algorithm of a keyring file's ``alg`` name."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise UnsupportedVersionError(f"algorithm {name[:40]!r}") from None


def hkdf(ikm: bytes, info: bytes, length: int, salt: bytes | None = None) -> bytes:
    """HKDF-SHA-256 (RFC 5869); salt None is no salt (zeros)."""
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=salt or None, info=info).derive(ikm)


def hkdf_expand(prk: bytes, info: bytes, length: int) -> bytes:
    """HKDF-Expand alone, for formats that derive from an existing PRK."""
    return HKDFExpand(algorithm=hashes.SHA256(), length=length, info=info).derive(prk)


def hmac_sha256(key: bytes, msg: bytes) -> bytes:
    """HMAC-SHA-256 of msg under key."""
    return hmac.new(key, msg, sha256).digest()


@functools.lru_cache(maxsize=1024)
def _aesgcm(key: bytes) -> AESGCM:
    # building the cipher context costs about as much as a 500-byte open:
    # one per key, as Go keeps one cipher.AEAD per key
    return AESGCM(key)


def seal(alg: Algorithm, key: bytes, nonce: bytes, plaintext: bytes, ad: bytes) -> bytes:
    """ciphertext ‖ tag of plaintext under key and nonce, bound to ad."""
    if alg is XCHACHA20POLY1305:
        return sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(plaintext, ad, nonce, key)
    return _aesgcm(key).encrypt(nonce, plaintext, ad)


def open_(alg: Algorithm, key: bytes, nonce: bytes, sealed: bytes, ad: bytes) -> bytes:
    """The plaintext of ciphertext ‖ tag, or AuthenticationError."""
    try:
        if alg is XCHACHA20POLY1305:
            return sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(sealed, ad, nonce, key)
        return _aesgcm(key).decrypt(nonce, sealed, ad)
    except (InvalidTag, CryptoError):
        raise AuthenticationError("the value failed authentication") from None


def random_nonce(alg: Algorithm) -> bytes:
    """A fresh random nonce for alg."""
    return os.urandom(alg.nonce_size)


_local = threading.local()


def ecb_encryptor(key: bytes) -> Callable[[bytes], bytes]:
    """A new AES-ECB encryptor of key (its ``update``): ECB encrypts each
    block on its own, so one encryptor serves every check, and building an
    OpenSSL context per value cost as much as the seal itself. Not safe to
    share between threads."""
    return Cipher(algorithms.AES(key), modes.ECB()).encryptor().update  # type: ignore[no-any-return]


def _ecb(key: bytes) -> Callable[[bytes], bytes]:
    """This thread's AES-ECB encryptor of key, kept: at most 1,024 keys
    per thread."""
    cache = getattr(_local, "ecb", None)
    if cache is None:
        cache = _local.ecb = {}
    e = cache.get(key)
    if e is None:
        if len(cache) >= 1024:
            cache.clear()
        e = cache[key] = ecb_encryptor(key)
    return e  # type: ignore[no-any-return]


def masked_check(alg: Algorithm, check_key: bytes, nonce: bytes, context: bytes) -> bytes:
    """The 4-byte context check of ciphertext v3 and v4 (FORMAT.md)."""
    if alg is XCHACHA20POLY1305:
        return seal(alg, check_key, nonce, b"", context)[:4]
    block = _ecb(check_key)(nonce + bytes(16 - len(nonce)))
    return (google_crc32c.value(context) ^ int.from_bytes(block[:4], "big")).to_bytes(4, "big")


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), v1's unkeyed context check."""
    return google_crc32c.value(data)

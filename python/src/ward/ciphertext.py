"""Ciphertext v1–v4 (FORMAT.md): parsing headers, opening and sealing
against whatever holds the keys (a keyring, a grant, a subject's key)."""

from __future__ import annotations

import functools
import os
import struct
import threading
from typing import Callable, NamedTuple

import google_crc32c

from . import aead
from .aead import Algorithm
from .errors import (
    AuthenticationError,
    MalformedError,
    UnsupportedVersionError,
    WrongContextError,
)

CLASS_KEYRING = 1
CLASS_SUBJECT = 2
V3_HEADER = 11
V4_AD_HEADER = 7
V2_HEADER = 10

V2_CHECK_INFO = b"ward ciphertext v2 context check"
V3_CHECK_INFO = b"ward ciphertext v3 context check"
V4_CHECK_INFO = b"ward ciphertext v4 context check"
V4_SCOPE_INFO = b"ward ciphertext v4 scope\x00"

_U32 = struct.Struct(">I")
_V4_PREFIX = struct.Struct(">7sI12s")  # a v4 AES-GCM value's header, check and nonce
_PAD = bytes(4)  # a 12-byte nonce to the AES block of the check
_urandom = os.urandom
_crc32c = google_crc32c.value
_crc32c_extend = google_crc32c.extend


class Header(NamedTuple):
    """A parsed ciphertext header."""

    version: int
    key_class: int
    alg: Algorithm
    key_id: int
    check: bytes
    size: int  # header bytes before the nonce
    nonce_end: int  # header and nonce


def parse_header(ct: bytes) -> Header:
    """Parse the header of a binary ciphertext of any version."""
    if not ct:
        raise MalformedError("an empty ciphertext")
    v = ct[0]
    if v == 3 or v == 4:
        if len(ct) < V3_HEADER:
            raise MalformedError("ciphertext truncated")
        cls = ct[1]
        if cls != CLASS_KEYRING and cls != CLASS_SUBJECT:
            raise UnsupportedVersionError(f"key class {cls}")
        alg = aead.algorithm(ct[2])
        h = Header(v, cls, alg, int.from_bytes(ct[3:7], "big"), ct[7:11], V3_HEADER, V3_HEADER + alg.nonce_size)
    elif v == 1 or v == 2:
        if len(ct) < V2_HEADER:
            raise MalformedError("ciphertext truncated")
        alg = aead.algorithm(ct[1])
        h = Header(v, CLASS_KEYRING, alg, int.from_bytes(ct[2:6], "big"), ct[6:10], V2_HEADER, V2_HEADER + alg.nonce_size)
    else:
        raise UnsupportedVersionError(f"ciphertext version {v}")
    if len(ct) < h.nonce_end + aead.TAG_SIZE:
        raise MalformedError("ciphertext truncated")
    return h


def scoped_key(alg: Algorithm, material: bytes, scope: bytes) -> bytes:
    """K_scope of ciphertext v4: HKDF-SHA-256(K, info = label 0 ‖ scope)."""
    return aead.hkdf(material, V4_SCOPE_INFO + scope, alg.key_size)


def _ad(h: Header, ct: bytes, context: bytes) -> bytes:
    if h.version == 4:
        return ct[:V4_AD_HEADER] + context
    return ct[: h.size] + context


@functools.lru_cache(maxsize=1024)
def check_key(key: bytes, info: bytes, size: int) -> bytes:
    """K_check of a key (HKDF, cached: one per key as Go keeps it)."""
    return aead.hkdf(key, info, size)


def _check(h: Header, key: bytes, nonce: bytes, context: bytes) -> bytes:
    """The header's context check recomputed for context (diagnosis only)."""
    if h.version == 1:
        return struct.pack(">I", aead.crc32c(context))
    if h.version == 2:
        k = aead.hkdf(key, V2_CHECK_INFO, 32)
        return aead.hmac_sha256(k, nonce + context)[:4]
    info = V4_CHECK_INFO if h.version == 4 else V3_CHECK_INFO
    return aead.masked_check(h.alg, check_key(key, info, h.alg.key_size), nonce, context)


def open_with(ct: bytes, context: bytes, h: Header, key: bytes) -> bytes:
    """Open ct, whose header is h, under key (K_scope for v4, the key's
    material before), bound to context."""
    nonce = ct[h.size : h.nonce_end]
    try:
        return aead.open_(h.alg, key, nonce, ct[h.nonce_end :], _ad(h, ct, context))
    except AuthenticationError:
        import hmac as _h

        if _h.compare_digest(_check(h, key, nonce, context), h.check):
            raise AuthenticationError("the value was damaged: it fails authentication under its own context") from None
        raise WrongContextError("the value belongs to another row, column, owner or key") from None


def seal_v3(alg: Algorithm, key_class: int, key_id: int, material: bytes, plaintext: bytes, context: bytes) -> bytes:
    """A v3 ciphertext under material (a keyring key, or a subject key)."""
    nonce = aead.random_nonce(alg)
    check = aead.masked_check(alg, check_key(material, V3_CHECK_INFO, alg.key_size), nonce, context)
    head = bytes([3, key_class, alg.code]) + struct.pack(">I", key_id) + check
    return head + nonce + aead.seal(alg, material, nonce, plaintext, head + context)


class ScopeKey:
    """A v4 K_scope of an AES-GCM key with what every value under it
    reuses: its AEAD object, its check key and, for sealing, its header
    and an AES encryptor of the check key. Sealing and opening through one
    cost what the AEAD costs plus the context check; building these per
    value cost as much again. Column opens with its ``aead`` directly
    (FORMAT.md is the layout: header, check, 12-byte nonce, sealed)."""

    __slots__ = ("alg", "aead", "check_key", "head", "_encrypt", "_block", "_threads")

    def __init__(self, alg: Algorithm, key_class: int, key_id: int, k_scope: bytes):
        if alg.nonce_size != 12:
            raise UnsupportedVersionError("a ScopeKey is for AES-GCM")
        self.alg = alg
        self.aead = aead._aesgcm(k_scope)
        self._encrypt = self.aead.encrypt
        self.check_key = check_key(k_scope, V4_CHECK_INFO, alg.key_size)
        self.head = bytes((4, key_class, alg.code)) + key_id.to_bytes(4, "big")
        # The check's AES block of a nonce: one AES-ECB encryptor shared by
        # every thread, and each thread's own when another is inside it
        # (own_block).
        self._block = aead.ecb_encryptor(self.check_key)
        self._threads = threading.local()

    def seal(self, plaintext: bytes, context: bytes) -> bytes:
        """A v4 ciphertext of plaintext bound to context (seal_v4)."""
        nonce = _urandom(12)
        try:
            block = self._block(nonce + _PAD)
        except RuntimeError:  # another thread is inside the shared encryptor
            block = self.own_block(nonce + _PAD)
        # masked_check's formula, inlined: the call and its look-ups cost
        # ~0.07x of a raw seal here (docs/LAB.md, "ward in Python")
        check = _crc32c(context) ^ _U32.unpack_from(block)[0]
        return _V4_PREFIX.pack(self.head, check, nonce) + self._encrypt(nonce, plaintext, self.head + context)

    def own_block(self, data: bytes) -> bytes:
        """data under this thread's own AES-ECB encryptor of the check key,
        made on the thread's first use. The shared encryptor serves every
        thread while they take turns: a 16-byte update never releases the
        GIL, and an encryptor another thread is inside refuses the call
        (pyo3's borrow check raises RuntimeError, before any byte is
        touched), which happens where threads run at once (a free-threaded
        build); that thread's value then takes this way, one kept
        encryptor per thread."""
        try:
            return self._threads.update(data)  # type: ignore[no-any-return]
        except AttributeError:  # this thread's first
            u = self._threads.update = aead.ecb_encryptor(self.check_key)
            return u(data)


def seal_v4(alg: Algorithm, key_class: int, key_id: int, k_scope: bytes, plaintext: bytes, context: bytes) -> bytes:
    """A v4 ciphertext under K_scope: the AD is 7 header bytes and context,
    the check is computed after sealing and stays outside the AD."""
    head = bytes([4, key_class, alg.code]) + struct.pack(">I", key_id)
    nonce = aead.random_nonce(alg)
    sealed = aead.seal(alg, k_scope, nonce, plaintext, head + context)
    check = aead.masked_check(alg, check_key(k_scope, V4_CHECK_INFO, alg.key_size), nonce, context)
    return head + check + nonce + sealed


#: Resolves a header to the AEAD key that opens it: K_scope for v4 (of the
#: given scope), the key's material for v1–v3; raises a typed error when
#: the holder lacks it.
Resolver = Callable[[Header, bytes], bytes]


def open_value(ct: bytes, context: bytes, scope: bytes, resolve: Resolver) -> bytes:
    """Parse, resolve the key and open: the whole read path of one value."""
    h = parse_header(ct)
    return open_with(ct, context, h, resolve(h, scope))

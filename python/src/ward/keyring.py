"""Keyring files (``ward-keyring/v2``, v1 read only): loading, opening
values under any of the keyring's keys, sealing under its primary."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from hashlib import sha256
from typing import Any, Mapping

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from . import aead
from ._wire import b64std, read_bounded
from .aead import Algorithm
from .ciphertext import (
    CLASS_KEYRING,
    Header,
    ScopeKey,
    open_value,
    scoped_key,
    seal_v3,
    seal_v4,
)
from .errors import (
    CorruptFileError,
    KeyDisabledError,
    UnknownKeyError,
    UnsupportedVersionError,
    WardError,
    WrongWrapperError,
)
from .kms import KeyService, MasterKey


@dataclass(frozen=True)
class Key:
    """One data key of a keyring: its ID, algorithm, state and material."""

    id: int
    alg: Algorithm
    state: str  # "primary", "decrypt-only" or "disabled"
    material: bytes

    def __repr__(self) -> str:  # never the material
        return f"Key(id={self.id:08x}, alg={self.alg.name}, state={self.state})"


def _file_key_context(aad: bytes, purpose: str) -> dict[str, str]:
    return {"ward:purpose": purpose, "ward:aad-sha256": sha256(aad).hexdigest()}


def wrap_of(doc: Mapping[str, Any]) -> dict[str, str]:
    """A file's ``wrap`` header: strings only, else a typed error."""
    wrap = doc.get("wrap") or {}
    if not isinstance(wrap, dict) or not all(isinstance(v, str) for v in wrap.values()):
        raise CorruptFileError("a file's wrap header is not an object of strings")
    return wrap


def unwrap_file(doc: Mapping[str, Any], aad: bytes, ks: KeyService, purpose: str, v1_raw: bool = False) -> bytes:
    """Unwrap a keyring or grant file's key with ks and open its payload."""
    wrap = wrap_of(doc)
    provider = wrap.get("provider", "")
    if provider.startswith("kms:"):  # keyring v1's name for a KMS provider
        provider = provider[4:]
    if provider != ks.provider or wrap.get("key_id") != ks.key_id:
        raise WrongWrapperError(f"the file is sealed under {provider[:20]}:{str(wrap.get('key_id'))[:40]}, given {ks.provider}:{ks.key_id}")
    wrapped = b64std(doc.get("wrapped_key", ""), "wrapped_key")
    sealed = b64std(doc.get("sealed", ""), "sealed")
    if len(wrapped) > 1024:
        raise CorruptFileError("a wrapped key longer than 1024 bytes")
    try:
        if v1_raw and isinstance(ks, MasterKey):
            file_key = ks.decrypt_raw(wrapped, aad)
        else:
            file_key = ks.decrypt(wrapped, _file_key_context(aad, purpose))
    except WardError as e:
        raise CorruptFileError(f"unwrapping the file key: {e}") from None
    if len(file_key) != 32 or len(sealed) < 28:
        raise CorruptFileError("a file key or sealed payload of the wrong size")
    try:
        return AESGCM(file_key).decrypt(sealed[:12], sealed[12:], aad)
    except InvalidTag:
        raise CorruptFileError("the file failed authentication") from None


# MAX_RETAINED bounds a keyring's removed keys, as Go's keyring.
MAX_RETAINED = 4096


def _removed(ids: Any, held: Mapping[int, Any]) -> frozenset[int]:
    """The IDs of keys ``ward keyring retire`` removed for good (their
    integrity epochs ended): never a held key's."""
    if ids is None:
        return frozenset()
    if not isinstance(ids, list) or len(ids) > MAX_RETAINED:
        raise CorruptFileError("a keyring's removed keys: not a list, or too many")
    if any(type(i) is not int or not 0 < i <= 0xFFFFFFFF or i in held for i in ids):
        raise CorruptFileError("a keyring's removed keys: a bad ID")
    return frozenset(ids)


class Keyring:
    """A loaded keyring. Opens ciphertext v1–v4 of class 1 under its keys,
    seals under its primary, derives blind-index and ledger keys."""

    def __init__(self, payload: Mapping[str, Any]):
        try:
            self.generation = int(payload.get("generation", 0))
            self._root = b64std(payload["root"], "root")
            self._root_salt = b64std(payload["root_salt"], "root_salt")
            self.keys: dict[int, Key] = {}
            for k in payload["keys"]:
                key = Key(int(k["id"]), aead.by_name(k["alg"]), k["state"], b64std(k["material"], "material"))
                if len(key.material) != key.alg.key_size:
                    raise CorruptFileError(f"key {key.id:08x}: material of the wrong size")
                self.keys[key.id] = key
            self.state_keys = {int(s["epoch"]): b64std(s["secret"], "secret") for s in payload.get("state_keys") or []}
            self.anchors: dict[str, dict[str, Any]] = dict(payload.get("anchors") or {})
            self.removed = _removed(payload.get("removed"), self.keys)
        except (KeyError, TypeError, ValueError) as e:
            raise CorruptFileError(f"a keyring payload: {type(e).__name__}") from None
        if len(self._root) != 32 or len(self._root_salt) != 32:
            raise CorruptFileError("a keyring root of the wrong size")
        primaries = [k for k in self.keys.values() if k.state == "primary"]
        if len(primaries) != 1:
            raise CorruptFileError("a keyring needs exactly one primary key")
        self.primary = primaries[0]
        self._scoped: dict[tuple[int, bytes], bytes] = {}
        # (key ID, algorithm, scope) -> K_scope of an enabled key: a loaded
        # keyring never changes, so a resolution holds for its life
        self._resolved: dict[tuple[int, int, bytes], bytes] = {}
        self._scope_keys: dict[tuple[int, bytes], ScopeKey] = {}
        # The file it was loaded from (Keyring.load), read again by refresh.
        self._source: tuple[str, KeyService] | None = None
        self._refreshed = 0.0
        self._refresh_lock = threading.Lock()

    @classmethod
    def loads(cls, data: bytes | str, ks: KeyService) -> "Keyring":
        """Open a keyring file's bytes with the key service that wraps it."""
        try:
            doc = json.loads(data)
        except ValueError:
            raise CorruptFileError("a keyring file that is not JSON") from None
        fmt = doc.get("format") if isinstance(doc, dict) else None
        if fmt not in ("ward-keyring/v1", "ward-keyring/v2"):
            raise UnsupportedVersionError(f"keyring format {str(fmt)[:40]!r}")
        wrap = wrap_of(doc)
        aad = f"{fmt}\x00{wrap.get('provider', '')}\x00{wrap.get('key_id', '')}".encode()
        v1_raw = fmt == "ward-keyring/v1" and wrap.get("provider") == "local"
        plain = unwrap_file(doc, aad, ks, "keyring", v1_raw)
        try:
            return cls(json.loads(plain))
        except (KeyError, TypeError, AttributeError, ValueError) as e:  # JSON, or a field of the wrong type
            raise CorruptFileError(f"a keyring payload: {type(e).__name__}") from None

    @classmethod
    def load(cls, path: str, ks: KeyService) -> "Keyring":
        """Read and open a keyring file; :meth:`refresh` reads it again."""
        kr = cls.loads(read_bounded(path, "a keyring file"), ks)
        kr._source = (path, ks)
        return kr

    def refresh(self) -> bool:
        """Read the file this keyring was loaded from again, at most once a
        second, and take it if it is a newer generation of the same keyring
        (Go's ``Keyring.Reload``: it never goes back). Whether it moved on;
        False for a keyring not loaded from a file. A key ID the keyring
        lacks and a ledger written under a newer file call it, so that a
        long-running process follows another's rotation, as Go's do."""
        if self._source is None:
            return False
        with self._refresh_lock:
            now = time.monotonic()
            if now - self._refreshed < 1.0:
                return False
            self._refreshed = now
            path, ks = self._source
            new = Keyring.loads(read_bounded(path, "a keyring file"), ks)
            if new.id != self.id:
                raise CorruptFileError(f"{path[:80]} now holds keyring {new.id}, not {self.id}")
            if new.generation <= self.generation:
                return False
            state = dict(new.__dict__)
            state.update(_source=self._source, _refreshed=now, _refresh_lock=self._refresh_lock)
            self.__dict__.update(state)
            return True

    def __repr__(self) -> str:
        return f"Keyring({self.id}, generation {self.generation}, {len(self.keys)} keys)"

    @property
    def id(self) -> str:
        """``kr-`` and 16 hex digits, stable across rotations."""
        return "kr-" + sha256(b"ward keyring id v1\x00" + self._root_salt).digest()[:8].hex()

    def derive(self, purpose: bytes, length: int) -> bytes:
        """``Keyring.Derive``: HKDF-SHA-256 of the root for a named purpose."""
        return aead.hkdf(self._root, b"ward keyring derive v1\x00" + purpose, length, salt=self._root_salt)

    def state_mac_key(self, epoch: int, root: bool = False) -> bytes | None:
        """K_state of an epoch for the ledger's and tombstones' MACs, or
        None when the file lacks that epoch (written under a newer file).
        ``root`` gives epoch 0 even in a file with state keys, for state
        the file anchors at epoch 0 (the ledger's check decides)."""
        if epoch == 0:
            # The root alone, which any copy of the keyring file derives:
            # only a file from before state keys verifies under it.
            if self.state_keys and not root:
                return None
            salt = None
        else:
            salt = self.state_keys.get(epoch)
            if salt is None:
                return None
        return aead.hkdf(self._root, b"ward keyring state mac v1\x00" + str(epoch).encode(), 32, salt=salt)

    def integrity_key(self, epoch: int, purpose: bytes) -> bytes:
        """``Keyring.IntegrityKeyAt``: the integrity key of purpose in an
        epoch (the ID of the key primary when the record was written),
        HKDF-SHA-256 of that key's material (FORMAT.md, "Integrity
        epochs"); a typed error for a key the keyring lacks or disabled."""
        k = self.key(epoch)
        return aead.hkdf(k.material, b"ward keyring key-derive v1\x00ward integrity v1\x00" + purpose, 32)

    def key(self, key_id: int) -> Key:
        """The enabled key of an ID, or a typed error."""
        k = self.keys.get(key_id)
        if k is None and self._refresh_quietly():
            k = self.keys.get(key_id)
        if k is None:
            raise UnknownKeyError(f"key {key_id:08x} is not in this keyring")
        if k.state == "disabled":
            raise KeyDisabledError(f"key {key_id:08x} is disabled")
        return k

    def _refresh_quietly(self) -> bool:
        """refresh, for a caller that reports its own error if it fails."""
        try:
            return self.refresh()
        except (OSError, WardError):
            return False

    def scoped(self, key: Key, scope: bytes) -> bytes:
        """K_scope of a key for a scope (cached)."""
        ck = (key.id, scope)
        v = self._scoped.get(ck)
        if v is None:
            v = self._scoped[ck] = scoped_key(key.alg, key.material, scope)
        return v

    def resolve(self, h: Header, scope: bytes) -> bytes:
        """The AEAD key that opens a class-1 value of header h."""
        if h.version == 4 and h.key_class == CLASS_KEYRING:  # the common case, cached
            got = self._resolved.get((h.key_id, h.alg.code, scope))
            if got is not None:
                return got
        if h.key_class != CLASS_KEYRING:
            raise UnknownKeyError("a subject key sealed this value, not a keyring key")
        k = self.key(h.key_id)
        if k.alg != h.alg:
            raise UnknownKeyError(f"the value's algorithm is not key {k.id:08x}'s")
        if h.version != 4:
            return k.material
        got = self._resolved[(h.key_id, h.alg.code, scope)] = self.scoped(k, scope)
        return got

    def open(self, ct: bytes, context: bytes = b"", scope: bytes = b"") -> bytes:
        """Open a binary ciphertext bound to context (v4: under scope)."""
        return open_value(ct, context, scope, self.resolve)

    def seal(self, plaintext: bytes, context: bytes = b"") -> bytes:
        """Seal under the primary as ciphertext v3, as Go's ``Keyring.Seal``."""
        p = self.primary
        return seal_v3(p.alg, CLASS_KEYRING, p.id, p.material, plaintext, context)

    def seal_scoped(self, plaintext: bytes, scope: bytes, context: bytes = b"") -> bytes:
        """Seal under the primary's K_scope as ciphertext v4."""
        p = self.primary
        return seal_v4(p.alg, CLASS_KEYRING, p.id, self.scoped(p, scope), plaintext, context)

    def scope_key(self, scope: bytes, key_id: int | None = None) -> ScopeKey | None:
        """The ScopeKey of a key (the primary by default) for a scope, kept
        for the keyring's life; None for an XChaCha20-Poly1305 key, which
        seal_scoped and open serve. A typed error for a key it lacks."""
        k = self.primary if key_id is None else self.key(key_id)
        if k.alg.nonce_size != 12:
            return None
        sk = self._scope_keys.get((k.id, scope))
        if sk is None:
            sk = self._scope_keys[(k.id, scope)] = ScopeKey(k.alg, CLASS_KEYRING, k.id, self.scoped(k, scope))
        return sk

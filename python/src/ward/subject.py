"""Subject keys (keys per user, FORMAT.md): opening values under a
subject's keyring-wrapped key, and sealing into an existing one — never
creating one, never for a forgotten, private or lost subject, and only
after the ledger verifies."""

from __future__ import annotations

import struct
import threading
import time
from typing import Any

from . import aead
from ._db import query
from ._wire import lp
from .ciphertext import CLASS_SUBJECT, Header, scoped_key, seal_v3, seal_v4
from .errors import SubjectRefusedError, UnknownKeyError, WardError
from .journal import ForgetJournal
from .keyring import Keyring
from .ledger import DEFAULT_TABLE, LedgerState, verify

KEYS_TABLE = "ward_subject_keys"
TOMBSTONES_TABLE = "ward_subject_tombstones"
HELD = {1: "private (the key is wrapped under the user's password)", 2: "lost (a password reset without the recovery code)"}


def wrap_context(namespace: str, subject: str, version: int) -> bytes:
    """W(ns, subject, version)."""
    return lp(namespace) + lp(subject) + struct.pack(">I", version)


def unwrap(kr: Keyring, namespace: str, subject: str, version: int, wrapped: bytes) -> tuple[aead.Algorithm, bytes]:
    """A keyring-wrapped subject key's algorithm and material."""
    payload = kr.open(bytes(wrapped), b"ward subject key v1\x00" + wrap_context(namespace, subject, version))
    if len(payload) < 6 or payload[0] != 1:
        raise WardError("a subject key payload of an unknown version")
    alg = aead.algorithm(payload[1])
    if struct.unpack(">I", payload[2:6])[0] != version or len(payload) != 6 + alg.key_size:
        raise WardError("a subject key payload that does not match its row")
    return alg, payload[6:]


# DEFAULT_TTL bounds, in seconds, how long an unwrapped key stays cached
# (Go's subject.DefaultTTL): a forget made by another process takes effect
# in a long-running reader within it. MAX_ENTRIES bounds the cache.
DEFAULT_TTL = 30.0
MAX_ENTRIES = 100_000


class SubjectKeys:
    """The subject keys of one namespace in a database (any DB-API 2
    connection): what a per-subject :class:`ward.Column` opens and seals with.

    Unwrapped keys are cached for ``ttl`` seconds (30, as in Go), never
    longer: a subject forgotten by another process stops opening here
    within it, however long the job runs.

    With the fleet's forget ``journal`` (:class:`ward.ForgetJournal`), a
    seal is also refused for a subject the journal records as private whose
    newest key in the database is keyring-wrapped: a database writer
    deleted the user-held key rows or put back older ones (Go's
    ``subject.ErrPrivateKeysChanged``). Without it, such a seal goes under
    the put-back key, which the keyring's holder can open."""

    def __init__(self, conn: Any, keyring: Keyring, namespace: str, ledger_table: str = DEFAULT_TABLE, ttl: float = DEFAULT_TTL,
                 journal: ForgetJournal | None = None):
        self.conn, self.keyring, self.namespace = conn, keyring, namespace
        self.journal = journal
        self.ledger_table = ledger_table
        self.ttl = ttl
        self._keys: dict[tuple[str, int], tuple[aead.Algorithm, bytes, float]] = {}
        self._ledger: LedgerState | None = None
        self._mu = threading.Lock()

    def __repr__(self) -> str:
        return f"SubjectKeys({self.namespace})"

    def _row(self, subject: str, version: int | None) -> tuple[int, int, bytes]:
        if version is None:
            rows = query(self.conn, f"SELECT version, held, wrapped FROM {KEYS_TABLE} WHERE namespace = ? AND subject = ? ORDER BY version DESC LIMIT 1", (self.namespace, subject))
        else:
            rows = query(self.conn, f"SELECT version, held, wrapped FROM {KEYS_TABLE} WHERE namespace = ? AND subject = ? AND version = ?", (self.namespace, subject, version))
        if not rows:
            raise SubjectRefusedError("the subject has no such key: forgotten, or never given one (this package never creates a subject key)")
        v, held, wrapped = rows[0]
        if int(held or 0) != 0:
            raise SubjectRefusedError(f"the subject's key is {HELD.get(int(held), 'not keyring-wrapped')}: it opens only inside the user's session")
        return int(v), 0, bytes(wrapped)

    def key(self, subject: str, version: int | None = None) -> tuple[int, aead.Algorithm, bytes]:
        """A subject's key of a version (the latest when None), unwrapped."""
        now = time.monotonic()
        if version is not None:
            got = self._keys.get((subject, version))
            if got is not None and now < got[2]:
                return version, got[0], got[1]
        v, _, wrapped = self._row(subject, version)
        alg, material = unwrap(self.keyring, self.namespace, subject, v, wrapped)
        self._cache(subject, v, alg, material, now)
        return v, alg, material

    def _cache(self, subject: str, version: int, alg: aead.Algorithm, material: bytes, now: float) -> None:
        """Keep an unwrapped key until now + ttl, within MAX_ENTRIES."""
        if len(self._keys) >= MAX_ENTRIES:
            for k in [k for k, e in self._keys.items() if e[2] <= now]:
                del self._keys[k]
            while len(self._keys) >= MAX_ENTRIES:  # the oldest first
                del self._keys[next(iter(self._keys))]
        self._keys[(subject, version)] = (alg, material, now + self.ttl)

    def resolve_for(self, subject: str, h: Header, scope: bytes) -> bytes:
        """The AEAD key of a class-2 value of subject."""
        if h.key_class != CLASS_SUBJECT:
            raise UnknownKeyError("a keyring key sealed this value")
        _, alg, material = self.key(subject, h.key_id)
        if alg != h.alg:
            raise UnknownKeyError("the value's algorithm is not the subject key's")
        return scoped_key(alg, material, scope) if h.version == 4 else material

    def ledger(self) -> LedgerState:
        """The verified ledger (read once, before the first seal)."""
        with self._mu:
            if self._ledger is None:
                self._ledger = verify(self.conn, self.keyring, self.ledger_table)
            return self._ledger

    def _refuse_forgotten(self, subject: str) -> None:
        rows = query(self.conn, f"SELECT 1 FROM {TOMBSTONES_TABLE} WHERE namespace = ? AND subject = ?", (self.namespace, subject))
        if rows:
            raise SubjectRefusedError("the subject was forgotten: nothing is sealed for them again")

    def version_for(self, write_version: int) -> int:
        """The version a seal writes: 4 only when the column asks for it and
        the verified ledger records that every process of the fleet reads it
        (the form ``ciphertext:v4`` opened), else 3."""
        return 4 if write_version == 4 and self.ledger().allows("ciphertext:v4") else 3

    def seal_for(self, subject: str, plaintext: bytes, scope: bytes, context: bytes, version: int) -> bytes:
        """Seal for subject under their latest keyring-wrapped key, as
        ciphertext ``version`` (from version_for, which verified the ledger)."""
        st = self.ledger()
        self._refuse_forgotten(subject)
        v, alg, material = self.key(subject)
        if self.journal is not None and self.journal.is_private(st.database, self.namespace, subject, lambda: verify(self.conn, self.keyring, self.ledger_table)):
            raise SubjectRefusedError("the forget journal records the subject as private, but its newest key in the database is keyring-wrapped "
                                      "(a database writer deleted its user-held keys or put back older ones): nothing is sealed under it")
        if v < key_floor(int((st.body.get("counters") or {}).get("subject.floor:" + self.namespace, 0))):
            raise SubjectRefusedError("the subject's newest key version is under the namespace's key floor, which a grant's revocation raised "
                                      "(a database writer deleted the newer ones, or restored the key table): a Go process gives the subject a new version first")
        if version == 4:
            return seal_v4(alg, CLASS_SUBJECT, v, scoped_key(alg, material, scope), plaintext, context)
        return seal_v3(alg, CLASS_SUBJECT, v, material, plaintext, context)


def key_floor(raises: int) -> int:
    """The lowest key version a seal may use after ``raises`` raises of the
    namespace's key floor (Go: ``subject.KeyFloor``): 0, or 2^31 + k·2^23."""
    if raises == 0:
        return 0
    if not 0 < raises <= 255:
        raise SubjectRefusedError(f"the key floor was raised {raises} times, past the 255 versions have room for")
    return (1 << 31) + (raises << 23)


class SubjectGrant:
    """A service's grant of one subject's ciphertext v4 values of one
    column (``ward-subject-grant/v1``, FORMAT.md): K_scope per key version.
    It opens that subject's values of that column and nothing else, and
    never seals. Build it with :meth:`loads` from what the service sent."""

    FORMAT = "ward-subject-grant/v1"

    def __init__(self, table: str, column: str, subject: str, keys: dict[int, tuple[aead.Algorithm, bytes]]):
        from .field import field_scope

        self.table, self.column, self.subject = table, column, subject
        self._scope = field_scope(table, column)
        self._keys = keys

    @classmethod
    def loads(cls, doc: dict[str, Any] | str | bytes) -> "SubjectGrant":
        """Parse the grant's JSON form (a dict, or its text)."""
        import json

        from ._wire import b64std
        from .errors import CorruptFileError, UnsupportedVersionError

        if not isinstance(doc, dict):
            try:
                doc = json.loads(doc)
            except ValueError:
                raise CorruptFileError("a subject grant that is not JSON") from None
        if not isinstance(doc, dict) or doc.get("format") != cls.FORMAT:
            raise UnsupportedVersionError("not a ward-subject-grant/v1")
        keys: dict[int, tuple[aead.Algorithm, bytes]] = {}
        try:
            for k in doc["keys"]:
                alg = aead.by_name(k["alg"])
                m = b64std(k["material"], "material")
                if len(m) != alg.key_size:
                    raise CorruptFileError("a subject grant key of the wrong size")
                keys[int(k["version"])] = (alg, m)
            return cls(str(doc["table"]), str(doc["column"]), str(doc["subject"]), keys)
        except (KeyError, TypeError, ValueError) as e:
            raise CorruptFileError(f"a subject grant: {type(e).__name__}") from None

    def __repr__(self) -> str:
        return f"SubjectGrant({self.table}.{self.column}, {len(self._keys)} keys)"

    def resolve_for(self, subject: str, h: Header, scope: bytes) -> bytes:
        """K_scope of a v4 class-2 value of the granted subject and column."""
        from .errors import NotGrantedError, WrongContextError

        if h.version != 4 or h.key_class != CLASS_SUBJECT:
            raise NotGrantedError("a subject grant opens ciphertext v4 under the subject's key only")
        if scope != self._scope:
            raise WrongContextError("the grant does not name this column")
        if subject != self.subject:
            raise WrongContextError("the grant names another subject")
        got = self._keys.get(h.key_id)
        if got is None or got[0] != h.alg:
            raise UnknownKeyError("the grant does not hold this key version")
        return got[1]



def parse_scoped(b: bytes | None) -> dict[str, bytes]:
    """A key row's ``scoped`` column: the grants' wraps by ``table.column``."""
    from ._wire import read_uvarint

    out: dict[str, bytes] = {}
    b = bytes(b or b"")
    i = 0
    while i < len(b):
        try:
            n, i = read_uvarint(b, i)
            name, i = b[i : i + n], i + n
            m, i = read_uvarint(b, i)
            wrap, i = b[i : i + m], i + m
        except ValueError:
            break
        if len(name) != n or len(wrap) != m:
            break
        out[name.decode(errors="replace")] = wrap
    return out


class GrantSubjects:
    """What a grant of a per-subject column opens: each subject's key of
    that column, unwrapped from the subject's key row (its ``scoped``
    column) on every use, so that a forgotten user's values (rows deleted)
    and a private user's (rows without wraps) never open."""

    def __init__(self, conn: Any, grant: Any, table: str, column: str, keys_table: str = KEYS_TABLE):
        from ._db import ident

        ns = grant.subject_columns.get((table, column))
        if ns is None:
            raise SubjectRefusedError(f"the grant does not open {table}.{column} under subjects' keys")
        self.conn, self.grant, self.namespace = conn, grant, ns
        self.table, self.column, self.keys_table = table, column, ident(keys_table)

    def __repr__(self) -> str:
        return f"GrantSubjects({self.table}.{self.column})"

    def resolve_for(self, subject: str, h: Header, scope: bytes) -> bytes:
        """K_scope of a class-2 v4 value of subject in the granted column."""
        from .errors import NotGrantedError
        from .field import field_scope

        if h.version != 4 or h.key_class != CLASS_SUBJECT:
            raise NotGrantedError("a grant opens ciphertext v4 under the subject's key only")
        if scope != field_scope(self.table, self.column):
            raise NotGrantedError("the grant does not name this column")
        rows = query(self.conn, f"SELECT scoped FROM {self.keys_table} WHERE namespace = ? AND subject = ? AND version = ? AND held = 0",
                     (self.namespace, subject, h.key_id))
        wrap = parse_scoped(rows[0][0] if rows else None).get(f"{self.table}.{self.column}")
        if wrap is None:
            raise SubjectRefusedError("the subject's key holds no wrap for this grant: forgotten, private, or not sealed since the grant")
        payload = self.grant.open_wrap(self.table, self.column, wrap, wrap_context(self.namespace, subject, h.key_id))
        if len(payload) < 6 or payload[0] != 1:
            raise WardError("a granted key payload of an unknown version")
        alg = aead.algorithm(payload[1])
        if struct.unpack(">I", payload[2:6])[0] != h.key_id or len(payload) != 6 + alg.key_size or alg != h.alg:
            raise WardError("a granted key that does not match its row")
        return payload[6:]

"""The field layer: values bound to their table, column, row and bound
columns (field contexts v1–v4, FORMAT.md), as Go's ``field.Column``."""

from __future__ import annotations

import functools
import uuid
from datetime import date, datetime, timezone
from typing import Any, Callable, Protocol, Sequence

from ._wire import as_binary, encode_text, lp, uvarint
from cryptography.exceptions import InvalidTag

from .ciphertext import _PAD, _U32, _V4_PREFIX, CLASS_KEYRING, CLASS_SUBJECT, V3_HEADER, V4_AD_HEADER, Header, ScopeKey, _crc32c, _crc32c_extend, _urandom, open_with, parse_header
from .errors import BindingError, UnsupportedVersionError

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_V4_KEYRING = bytes((4, CLASS_KEYRING))  # the first bytes of a v4 value under a keyring key
_unpack_from = _U32.unpack_from
_OPEN_FROM = V3_HEADER + 12  # where a v4 AES-GCM value's sealed bytes start
_prefix = _V4_PREFIX.pack  # header, check and nonce of a v4 AES-GCM value in one call
_LENGTHS = [bytes((n,)) for n in range(0x80)]  # uvarint(n) of n < 0x80, kept: ℓ() of a row key


def field_scope(table: str, column: str) -> bytes:
    """The v4 scope of a column: ``"ward/field/v4" 0 ‖ ℓ(table) ‖ ℓ(column)``."""
    return b"ward/field/v4\x00" + lp(table) + lp(column)


def _micros(t: datetime) -> int:
    if t.tzinfo is None:  # a timestamp column without a zone holds UTC
        t = t.replace(tzinfo=timezone.utc)
    d = t - _EPOCH
    # exact integer arithmetic: floor towards the past, as Go's UnixMicro
    return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds


def encode_bound(v: Any) -> bytes | None:
    """A bound value's canonical bytes (None is SQL NULL), as field context v3."""
    if v is None:
        return None
    if isinstance(v, bool):  # before int: bool is an int in Python
        return b"1" if v else b"0"
    if isinstance(v, int):
        return str(v).encode()
    if isinstance(v, str):
        return v.encode()
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, datetime):
        return str(_micros(v)).encode()
    if isinstance(v, uuid.UUID):
        return str(v).encode()
    if isinstance(v, date):
        raise BindingError("a date without a time has no canonical encoding: bind a datetime")
    raise BindingError(f"a bound value of type {type(v).__name__} has no canonical encoding (int, str, bytes, bool, datetime, UUID or None)")


def row_text(row: Any) -> bytes:
    """A row key's text: an integer in decimal, a string as given."""
    t = type(row)
    if t is int or t is str:
        return str(row).encode()
    if isinstance(row, bool) or not isinstance(row, (int, str, bytes)):
        raise BindingError(f"a row key of type {type(row).__name__}: use an int or a str")
    return row if isinstance(row, bytes) else str(row).encode()


def _names(bind: Sequence[str]) -> bytes:
    return uvarint(len(bind)) + b"".join(lp(n) for n in bind)


def _tail(bind: Sequence[str], row: Any, values: Sequence[Any], names: bytes | None = None) -> bytes:
    if len(values) != len(bind):
        raise BindingError(f"the column binds {len(bind)} columns, {len(values)} values given")
    out = bytearray(_names(bind) if names is None else names)
    out += lp(row_text(row))
    for v in values:
        b = encode_bound(v)
        out += b"\x00" if b is None else uvarint(len(b) + 1) + b
    return bytes(out)


def context_v4(bind: Sequence[str], row: Any, values: Sequence[Any]) -> bytes:
    """Field context v4: the part of v3's after the column."""
    return _tail(bind, row, values)


def context_v3(table: str, column: str, bind: Sequence[str], row: Any, values: Sequence[Any]) -> bytes:
    """Field context v3."""
    return b"ward/field/v3\x00" + lp(table) + lp(column) + _tail(bind, row, values)


def context_legacy(table: str, column: str, bind: Sequence[str], row: Any, values: Sequence[Any]) -> bytes:
    """The context of v1 and v2 values: layout v1 without bound columns, v2 with."""
    if not bind:
        return b"ward/field/v1\x00" + lp(table) + lp(column) + row_text(row)
    return b"ward/field/v2\x00" + lp(table) + lp(column) + _tail(bind, row, values)


class KeySource(Protocol):
    """What holds a column's keys: a Keyring, a Grant, or subject keys."""

    def resolve(self, h: Header, scope: bytes) -> bytes: ...


class Column:
    """One encrypted column. ``keys`` opens class-1 values (a Keyring or a
    Grant); ``subjects`` (a :class:`ward.subject.SubjectKeys`) opens and
    seals class-2 values, the subject being the bound column named
    ``subject_column``. Seals write ciphertext v4 unless ``write_version``
    is 3 or ``ledger`` (a verified :class:`ward.ledger.LedgerState`) says
    the fleet has not opened v4; a per-subject column asks its ledger."""

    def __init__(self, table: str, column: str, keys: KeySource | None, bind: Sequence[str] = (),
                 subjects: Any = None, subject_column: str | None = None, write_version: int = 4,
                 ledger: Any = None):
        if not table or not column:
            raise BindingError("a column needs a table and a column name")
        if subjects is not None and subject_column not in bind:
            raise BindingError("a per-subject column binds its subject column")
        if write_version not in (3, 4):
            raise UnsupportedVersionError(f"writing ciphertext v{write_version}")
        self.table, self.column, self.bind = table, column, tuple(bind)
        self.keys, self.subjects, self.subject_column = keys, subjects, subject_column
        self.scope = field_scope(table, column)
        self._names = _names(self.bind)
        self._v3_head = b"ward/field/v3\x00" + lp(table) + lp(column)
        if ledger is not None and not ledger.allows("ciphertext:v4"):
            write_version = 3  # the fleet has not opened v4: some process reads v3 only
        self.write_version = write_version
        # The common case's keys, kept for the column's life (a loaded
        # keyring or grant never changes): v4 under keyring keys, AES-GCM.
        self._open_keys: dict[bytes, ScopeKey] = {}  # by the value's algorithm byte and key ID
        self._seal_key: ScopeKey | None = None
        # A column binding no other column: by a value's 7-byte header, the
        # AD before its row key (by the key's length) and its key's decrypt,
        # which the common case's opener tries first (_common_opener).
        self._open_heads: dict[bytes, tuple[list[bytes], Callable[[bytes, bytes, bytes], bytes]]] = {}

    def __repr__(self) -> str:
        return f"Column({self.table}.{self.column})"

    def context(self, version: int, row: Any, values: Sequence[Any]) -> bytes:
        """The context a value of this version is bound to."""
        if version == 4:
            if not self.bind and not values:  # the common column: names' count 0, the row
                return self._names + lp(row_text(row))
            return _tail(self.bind, row, values, self._names)
        if version == 3:
            return self._v3_head + _tail(self.bind, row, values, self._names)
        return context_legacy(self.table, self.column, self.bind, row, values)

    def _subject(self, values: Sequence[Any]) -> str:
        v = values[self.bind.index(self.subject_column)]
        b = encode_bound(v)
        if b is None:
            raise BindingError("a per-subject value needs its subject")
        return b.decode()

    def open(self, value: bytes | str, row: Any, *values: Any) -> bytes:
        """Open a stored value (text or binary form) of row, with the values
        of the bound columns in the column's bind order."""
        ct = value if type(value) is bytes and value[:1] != b"w" else as_binary(value)
        if ct[:2] == _V4_KEYRING and len(ct) > V3_HEADER + 12 and self.keys is not None:
            # The common case in one step, with the value's kept ScopeKey; a
            # value that fails here goes the general way, which says why.
            sk = self._open_keys.get(ct[2:7]) or self._scope_key_of(ct)
            if sk is not None:
                if not self.bind:
                    self._keep_opener(ct[:V4_AD_HEADER], sk)
                ctx = self._row_context(row) if not values and not self.bind else _tail(self.bind, row, values, self._names)
                try:
                    return sk.aead.decrypt(ct[V3_HEADER : V3_HEADER + 12], ct[V3_HEADER + 12 :], ct[:V4_AD_HEADER] + ctx)
                except InvalidTag:
                    pass
        h = parse_header(ct)
        ctx = self.context(h.version, row, values)
        if h.key_class == CLASS_SUBJECT and self.subjects is not None:
            key = self.subjects.resolve_for(self._subject(values), h, self.scope)
        elif self.keys is None:
            raise UnsupportedVersionError("a value of a key class this column has no keys for")
        else:
            key = self.keys.resolve(h, self.scope)
        return open_with(ct, ctx, h, key)

    def _scope_key_of(self, ct: bytes) -> ScopeKey | None:
        """The ScopeKey that opens a v4 value under a keyring key, kept;
        None for XChaCha20-Poly1305, which open's general path serves. A
        key the column's keys lack is their typed error."""
        h = parse_header(ct)
        if h.alg.nonce_size != 12:
            return None
        sk = ScopeKey(h.alg, CLASS_KEYRING, h.key_id, self.keys.resolve(h, self.scope))  # type: ignore[union-attr]
        if len(self._open_keys) < 1024:
            self._open_keys[ct[2:7]] = sk
        return sk

    def _keep_sealer(self, sk: ScopeKey) -> None:
        """Seal under sk from now on; a column that binds no other column
        through the common case's own function (_common_sealer), which
        hands every other case to Column.seal."""
        self._seal_key = sk
        if not self.bind:
            self.seal = _common_sealer(sk, self._names, functools.partial(Column.seal, self))  # type: ignore[method-assign]

    def _keep_opener(self, head: bytes, sk: ScopeKey) -> None:
        """Keep head's key for the common case's opener (at most 1,024
        headers), and install that opener as this column's open."""
        if head not in self._open_heads and len(self._open_heads) < 1024:
            pre = head + self._names
            self._open_heads[head] = ([pre + _LENGTHS[n] for n in range(0x80)], sk.aead.decrypt)
        if "open" not in self.__dict__:
            # From now on this column's open is the common case's own
            # function, which hands every other case to this method.
            self.open = _common_opener(self._open_heads, functools.partial(Column.open, self))  # type: ignore[method-assign]

    def _row_context(self, row: Any) -> bytes:
        """context(4, row, ()) of a column that binds no other column."""
        r = b"%d" % row if type(row) is int else row_text(row)
        return self._names + (_LENGTHS[len(r)] if len(r) < 0x80 else uvarint(len(r))) + r

    def open_text(self, value: bytes | str, row: Any, *values: Any) -> str:
        """open, decoded as UTF-8."""
        return self.open(value, row, *values).decode()

    def seal(self, plaintext: bytes | str, row: Any, *values: Any) -> bytes:
        """Seal for row: under the subject's current key on a per-subject
        column, else the keyring's primary; v4 unless the column writes v3."""
        pt = plaintext if type(plaintext) is bytes else plaintext.encode() if isinstance(plaintext, str) else bytes(plaintext)
        if self.subjects is not None:
            if not hasattr(self.subjects, "seal_for"):
                raise UnsupportedVersionError("a grant opens values and never seals")
            version = self.subjects.version_for(self.write_version)
            ctx = self.context(version, row, values)
            return self.subjects.seal_for(self._subject(values), pt, self.scope, ctx, version)
        if self.write_version == 4:
            sk = self._seal_key
            if sk is None and hasattr(self.keys, "scope_key"):
                sk = self.keys.scope_key(self.scope)  # type: ignore[union-attr]
                if sk is not None:
                    self._keep_sealer(sk)
            if sk is not None:
                return sk.seal(pt, self._row_context(row) if not values and not self.bind else _tail(self.bind, row, values, self._names))
        ctx = self.context(self.write_version, row, values)
        seal_scoped = getattr(self.keys, "seal_scoped", None)
        if seal_scoped is None:
            raise UnsupportedVersionError("a grant opens values and never seals")
        return seal_scoped(pt, self.scope, ctx) if self.write_version == 4 else self.keys.seal(pt, ctx)  # type: ignore[union-attr]

    def seal_text(self, plaintext: bytes | str, row: Any, *values: Any) -> str:
        """seal, in the text form (``w4:…``)."""
        return encode_text(self.seal(plaintext, row, *values))


def _no_key(nonce: bytes, sealed: bytes, ad: bytes) -> bytes:
    """The common case's opener before its first value: never reached (no
    header equals its empty one), and would go the general way."""
    raise InvalidTag


def _common_opener(heads: dict[bytes, tuple[list[bytes], Callable[[bytes, bytes, bytes], bytes]]], general: Callable[..., bytes]) -> Callable[..., bytes]:
    """Column.open for a column that binds no other column, once it has
    opened a v4 AES-GCM value under a keyring key: bytes whose 7-byte
    header is one of heads (kept by Column._keep_opener), with a row key
    shorter than 0x80 bytes, open with the AD before the row key kept per
    length; everything else, and every failure, goes to general
    (Column.open), which says why. The last header's key is kept in the
    closure: a dict look-up per value cost ~0.15x of a raw open here, the
    method call and its look-ups ~0.1x (docs/LAB.md, "ward in Python
    within 2x raw"). Threads may interleave the three assignments that switch
    keys; a header paired with another key's decrypt fails authentication
    and goes the general way, so no value opens under a wrong key."""
    head, pres = b"", [b""]  # no 7-byte header equals b"": the first value looks its key up
    decrypt: Callable[[bytes, bytes, bytes], bytes] = _no_key

    def open(value: bytes | str, row: Any, *values: Any) -> bytes:
        nonlocal head, pres, decrypt
        if type(value) is bytes and not values and len(value) > _OPEN_FROM:
            if value[:V4_AD_HEADER] != head:
                kept = heads.get(value[:V4_AD_HEADER])
                if kept is None:
                    return general(value, row, *values)
                head, (pres, decrypt) = value[:V4_AD_HEADER], kept
            r = b"%d" % row if type(row) is int else row_text(row)
            try:
                return decrypt(value[V3_HEADER:_OPEN_FROM], value[_OPEN_FROM:], pres[len(r)] + r)
            except (InvalidTag, IndexError):  # IndexError: a row key of 0x80 bytes or more
                pass  # the general way says why, or opens it
        return general(value, row, *values)

    open.__doc__ = Column.open.__doc__
    return open


def _common_sealer(sk: ScopeKey, names: bytes, general: Callable[..., bytes]) -> Callable[..., bytes]:
    """Column.seal for a column that binds no other column, once its seal
    key is known: bytes sealed under sk for a row key shorter than 0x80
    bytes, ScopeKey.seal inlined, with the AD before the row key and the
    context's CRC-32C before the row key kept per row-key length;
    everything else goes to general (Column.seal). The method call, the
    look-ups and the joins this spares cost ~0.3x of a raw seal here
    (docs/LAB.md, "ward in Python")."""
    encrypt, head, shared, own = sk._encrypt, sk.head, sk._block, sk.own_block
    # By a row key's length: the AD before the row key and the CRC-32C of
    # the context before it.
    before = [(head + c, _crc32c(c)) for c in (names + _LENGTHS[n] for n in range(0x80))]

    def seal(plaintext: bytes | str, row: Any, *values: Any) -> bytes:
        if type(plaintext) is bytes and not values:
            r = b"%d" % row if type(row) is int else row_text(row)
            try:
                ad, crc = before[len(r)]
            except IndexError:  # a row key of 0x80 bytes or more: a longer length
                return general(plaintext, row)
            nonce = _urandom(12)
            try:
                block = shared(nonce + _PAD)
            except RuntimeError:  # another thread is inside it (ScopeKey.own_block)
                block = own(nonce + _PAD)
            # the check's block before the AEAD, and the AEAD inside the
            # return: ~0.06x of a raw seal less here than the other order
            return _prefix(head, _crc32c_extend(crc, r) ^ _unpack_from(block)[0], nonce) + encrypt(nonce, plaintext, ad + r)
        return general(plaintext, row, *values)

    seal.__doc__ = Column.seal.__doc__
    return seal


class RowMAC:
    """``field.RowMAC``: authenticates plain columns of a row that must not
    be re-pointed (a session's user, a password hash and its account).

    With ``database`` (the ledger's database ID) it is Go's
    ``NewRowMACFor``: ``sum`` writes v2 (``0x02`` ‖ epoch ‖ HMAC, bound to
    the database, under the primary key's integrity epoch) and ``verify``
    accepts v2 of any epoch the keyring holds and, unless ``refuse_v1``, v1.
    Without it, v1 only (keyed by the keyring's root, bound to no
    database)."""

    def __init__(self, keyring: Any, table: str, *columns: str, database: str | None = None, refuse_v1: bool = False):
        if not table or not columns:
            raise BindingError("a row MAC needs a table and columns")
        if database is not None and not database:
            raise BindingError("a v2 row MAC needs the database's ID")
        self._purpose = b"row-mac\x00" + lp(table) + uvarint(len(columns)) + b"".join(lp(c) for c in columns)
        self._keyring = keyring
        self._key = keyring.derive(self._purpose, 32)
        self._database = database
        self._refuse_v1 = refuse_v1

    def __repr__(self) -> str:
        return "RowMAC()"

    @staticmethod
    def _message(values: tuple[Any, ...]) -> bytes:
        out = bytearray(uvarint(len(values)))
        for v in values:
            b = encode_bound(v)
            out += b"\x00" if b is None else uvarint(len(b) + 1) + b
        return bytes(out)

    def _v2(self, epoch: int, msg: bytes) -> bytes:
        from . import aead

        head = b"\x02" + epoch.to_bytes(4, "big")
        key = self._keyring.integrity_key(epoch, self._purpose)
        return head + aead.hmac_sha256(key, b"ward row mac v2\x00" + head + lp(self._database or "") + msg)

    def sum(self, *values: Any) -> bytes:
        """The MAC of the values, in the columns' order."""
        from . import aead

        msg = self._message(values)
        if self._database is None:
            return aead.hmac_sha256(self._key, msg)
        return self._v2(self._keyring.primary.id, msg)

    def verify(self, tag: bytes, *values: Any) -> bool:
        """Whether tag is the values' MAC (constant time); False for an
        epoch the keyring lacks or disabled, and for a refused v1 MAC."""
        import hmac

        from . import aead
        from .errors import WardError

        tag, msg = bytes(tag), self._message(values)
        if len(tag) == 32:
            if self._database is not None and self._refuse_v1:
                return False
            return hmac.compare_digest(aead.hmac_sha256(self._key, msg), tag)
        if self._database is None or len(tag) != 37 or tag[0] != 2:
            return False
        try:
            want = self._v2(int.from_bytes(tag[1:5], "big"), msg)
        except WardError:
            return False
        return hmac.compare_digest(want, tag)

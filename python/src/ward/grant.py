"""Grant files (``ward-grant/v1``): a reader's keys for the ciphertext v4
values of a few columns, and nothing else."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from . import aead
from ._wire import b64std, lp, read_bounded
from .ciphertext import CLASS_KEYRING, Header
from .errors import CorruptFileError, NotGrantedError, UnknownKeyError, UnsupportedVersionError, WrongContextError
from .field import field_scope
from .keyring import unwrap_file
from .kms import KeyService

FORMAT = "ward-grant/v1"


def subject_grant_scope(namespace: str, table: str, column: str) -> bytes:
    """The scope a per-subject column's keys are wrapped under for grants."""
    return b"ward/subject-grant/v1\x00" + lp(namespace) + lp(table) + lp(column)


def _rfc3339_seconds(s: str) -> str:
    t = datetime.fromisoformat(s.replace("Z", "+00:00")).astimezone(timezone.utc)
    return t.replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


class Grant:
    """An opened grant: K_scope per (table, column, key ID). It opens v4
    class-1 values of its scopes and refuses everything else."""

    def __init__(self, doc: dict[str, Any], payload: dict[str, Any]):
        self.id: str = doc["id"]
        self.keyring: str = doc["keyring"]
        self.scopes: list[str] = list(doc["scopes"])
        self._keys: dict[tuple[bytes, int], tuple[aead.Algorithm, bytes]] = {}
        #: per-subject columns the grant opens, by (table, column): their namespace
        self.subject_columns: dict[tuple[str, str], str] = {}
        scopes, ids = set(), set()
        for k in payload.get("keys") or []:
            alg = aead.by_name(k["alg"])
            material = b64std(k["material"], "material")
            if len(material) != alg.key_size:
                raise CorruptFileError("a grant key of the wrong size")
            ns = k.get("namespace") or ""
            if ns:
                self.subject_columns[(k["table"], k["column"])] = ns
                scope = subject_grant_scope(ns, k["table"], k["column"])
            else:
                scope = field_scope(k["table"], k["column"])
            self._keys[(scope, int(k["id"]))] = (alg, material)
            scopes.add(f"{k['table']}.{k['column']}")
            ids.add(f"{int(k['id']):08x}")
        if sorted(scopes) != self.scopes or sorted(ids) != list(doc["keys"]):
            raise CorruptFileError("a grant's header does not name its keys")
        self._scope_bytes = {s for s, _ in self._keys}

    @classmethod
    def loads(cls, data: bytes | str, ks: KeyService) -> "Grant":
        """Open a grant file's bytes with the reader's key service."""
        try:
            doc = json.loads(data)
        except ValueError:
            raise CorruptFileError("a grant file that is not JSON") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise UnsupportedVersionError(f"grant format {str(doc.get('format') if isinstance(doc, dict) else None)[:40]!r}")
        try:
            wrap = doc["wrap"]
            aad = b"".join(lp(s) for s in (
                doc["format"], doc["id"], doc["keyring"], _rfc3339_seconds(doc["created"]),
                "\n".join(doc["scopes"]), ",".join(doc["keys"]), wrap["provider"], wrap["key_id"]))
        except (KeyError, TypeError, AttributeError, ValueError) as e:
            raise CorruptFileError(f"a grant's header: {type(e).__name__}") from None
        plain = unwrap_file(doc, aad, ks, "grant")
        try:
            return cls(doc, json.loads(plain))
        except (KeyError, TypeError, AttributeError, ValueError) as e:
            raise CorruptFileError(f"a grant's keys: {type(e).__name__}") from None

    @classmethod
    def load(cls, path: str, ks: KeyService) -> "Grant":
        """Read and open a grant file."""
        return cls.loads(read_bounded(path, "a grant file"), ks)

    def __repr__(self) -> str:
        return f"Grant({self.id}, {','.join(self.scopes)})"

    def covers(self, table: str, column: str) -> bool:
        """Whether the grant names table.column."""
        return field_scope(table, column) in self._scope_bytes

    def open_wrap(self, table: str, column: str, wrap: bytes, context: bytes) -> bytes:
        """Open a subject's wrapped column key (a key row's scoped entry)."""
        from .ciphertext import open_value

        ns = self.subject_columns.get((table, column))
        if ns is None:
            raise NotGrantedError(f"the grant does not open {table}.{column} under subjects' keys")
        return open_value(bytes(wrap), context, subject_grant_scope(ns, table, column), self.resolve)

    def resolve(self, h: Header, scope: bytes) -> bytes:
        """K_scope for a v4 class-1 value of a granted scope."""
        if h.version != 4 or h.key_class != CLASS_KEYRING:
            raise NotGrantedError("a grant opens ciphertext v4 under keyring keys only")
        if scope not in self._scope_bytes:
            raise WrongContextError("the grant does not name this column")
        got = self._keys.get((scope, h.key_id))
        if got is None or got[0] != h.alg:
            raise UnknownKeyError(f"key {h.key_id:08x} was added after the grant was issued")
        return got[1]

"""The keyring ledger (FORMAT.md, Keyring ledger): verified against the
keyring and its anchor before this package writes anything."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from dataclasses import dataclass, field
from typing import Any

from . import aead
from ._db import ident, query, table_exists
from .errors import LedgerError, StaleKeyringError
from .keyring import Keyring

DEFAULT_TABLE = "ward_ledger"


@dataclass(frozen=True)
class LedgerState:
    """A verified ledger: the database's ID, counter and the opened forms."""

    database: str
    counter: int
    epoch: int
    opened_forms: frozenset[str] = field(default_factory=frozenset)
    body: dict[str, Any] = field(default_factory=dict, repr=False)

    def allows(self, form: str) -> bool:
        """Whether the fleet opened a form (``ciphertext:v4``): every
        registered process reads it, so it may be written."""
        return form in self.opened_forms

    @property
    def marks(self) -> frozenset[str]:
        """The ledger's marks, such as ``integrity:private-v2:NS``."""
        return frozenset(m if isinstance(m, str) else str(m.get("name", "")) for m in self.body.get("marks") or [])

    def tally(self, name: str) -> Tally:
        """A counter's tally (FORMAT.md, "Tallies"): the recorded one, or one
        starting at the counter's count (a counter from before tallies), as
        Go's ``State.Tally``; a malformed one is a :class:`LedgerError`."""
        t = (self.body.get("tallies") or {}).get(name)
        if t is None:
            n = int((self.body.get("counters") or {}).get(name, 0))
            return Tally(n, n, b"")
        try:
            tally = Tally(int(t.get("count", 0)), int(t.get("since", 0)), base64.b64decode(t.get("head", ""), validate=True))
        except (ValueError, TypeError, AttributeError, binascii.Error):
            raise LedgerError(f"the ledger's tally {name[:60]!r} is malformed") from None
        if not tally.valid():
            raise LedgerError(f"the ledger's tally {name[:60]!r} is malformed")
        return tally


@dataclass(frozen=True)
class Tally:
    """A ledger's tally (FORMAT.md, "Tallies"): a counter's count, the count
    its hash chain started at, and the chain's newest link (32 bytes, empty
    at its start), as Go's ``ledger.Tally``."""

    count: int
    since: int
    head: bytes = b""

    def add(self, identity: bytes) -> "Tally":
        """The tally with one more identity counted: head' = SHA-256("ward
        tally v1" 0x00 || head || identity), 32 zero bytes for no head."""
        head = hashlib.sha256(b"ward tally v1\x00" + (self.head or bytes(32)) + identity).digest()
        return Tally(self.count + 1, self.since, head)

    def valid(self) -> bool:
        """Whether the head is empty or 32 bytes, the chain starts no later
        than the count, and the head is empty exactly at its start."""
        return len(self.head) in (0, 32) and 0 <= self.since <= self.count < 1 << 64 and (len(self.head) > 0) == (self.count > self.since)

    def __str__(self) -> str:
        return f"{self.count}/{self.since}/{self.head.hex() if self.head else '-'}"


def verify_row(kr: Keyring, counter: int, body: str, mac_hex: str) -> LedgerState:
    """Authenticate one ledger row and check it against the keyring's anchor."""
    try:
        st = json.loads(body)
        mac = bytes.fromhex(mac_hex)
    except ValueError:
        raise LedgerError("the ledger row is not well-formed: a database writer changed it") from None
    if st.get("keyring") != kr.id:
        raise LedgerError(f"the database's values are sealed under keyring {str(st.get('keyring'))[:40]!r}, not {kr.id}")
    if int(st.get("counter", -1)) != counter:
        raise LedgerError("the ledger's counter does not match its body: a database writer changed it")
    epoch = int(st.get("epoch", 0))
    key = kr.state_mac_key(epoch)
    if key is None and epoch == 0 and int((kr.anchors.get(str(st.get("database", ""))) or {"epoch": -1}).get("epoch", 0)) == 0:
        # A file from before state keys anchored this database's ledger
        # at epoch 0, and its first key change gave it state keys while the
        # ledger was still there: it verifies until its next write moves
        # it (Go: ledger.verifyStateMAC).
        key = kr.state_mac_key(0, root=True)
    if key is None and epoch == 0:
        raise LedgerError("the ledger is MAC'd under epoch 0 (the root alone, which any copy of the keyring file derives) in a keyring with state keys: a database writer forged it")
    if key is None:
        raise StaleKeyringError(f"the ledger was written under a newer keyring file (state epoch {epoch}): load the current file")
    want = aead.hmac_sha256(key, b"ward ledger state v1\x00" + body.encode())
    if not hmac.compare_digest(want, mac):
        raise LedgerError("the ledger fails its MAC: a database writer changed it")
    if int(st.get("generation", 0)) > kr.generation:
        raise StaleKeyringError("the keyring file is older than the one that wrote the ledger: load the current file")
    db = str(st.get("database", ""))
    anchor = kr.anchors.get(db)
    if anchor is None:
        if kr.anchors:
            # A database the keyring never anchored, while it anchors
            # others: a ledger forged (with any keyring file ever written)
            # or copied from another database; only ward ledger adopt
            # --another-database joins a database to such a keyring.
            raise StaleKeyringError(f"the ledger names database {db[:40]}, which keyring {kr.id} does not anchor (it anchors {', '.join(sorted(kr.anchors))[:200]}): forged or copied by a database writer, or an interrupted adoption (ward ledger adopt --another-database)")
        if counter > 1:
            raise StaleKeyringError(f"the keyring file does not anchor database {db[:40]} at counter {counter}: it is another copy, or older than the database")
    elif counter < int(anchor.get("counter", 0)) or epoch < int(anchor.get("epoch", 0)):
        raise LedgerError(f"the ledger is at counter {counter}, anchored at {anchor.get('counter')}: an older copy of the ledger was put back (ward ledger recover)")
    for k in st.get("keys") or []:
        if int(k["id"]) not in kr.keys and k.get("state") != "retired":
            raise StaleKeyringError(f"the database uses key {int(k['id']):08x}, which this keyring lacks: load the current keyring file")
    opened = frozenset(f["name"] for f in st.get("forms") or [] if f.get("opened"))
    return LedgerState(db, counter, epoch, opened, st)


# A read of the ledger's row under a shared lock, by driver (the root of
# the connection's module): a change of the ledger waits for the reading
# transaction to end. SQLite has none: the caller's transaction holds the
# write lock from BEGIN IMMEDIATE on.
_SHARE = {"psycopg": " FOR SHARE", "psycopg2": " FOR SHARE", "pymysql": " LOCK IN SHARE MODE",
          "MySQLdb": " LOCK IN SHARE MODE", "mysql": " LOCK IN SHARE MODE"}


def verify(conn: Any, kr: Keyring, table: str = DEFAULT_TABLE, *, share: bool = False) -> LedgerState:
    """Read the database's ledger and verify it; a missing ledger is
    refused (this package writes only where ward's ledger stands). With
    ``share`` the row is read under a shared lock, in the caller's
    transaction, so that the ledger cannot change before it ends (on
    SQLite, begin the transaction with ``BEGIN IMMEDIATE``)."""
    if not table_exists(conn, table):
        raise LedgerError(f"the database has no ledger ({table}): ward writes only where a verified ledger stands")
    lock = _SHARE.get(type(conn).__module__.split(".")[0], "") if share else ""
    rows = query(conn, f"SELECT counter, body, mac FROM {ident(table)} WHERE id = 1{lock}")
    if not rows:
        raise LedgerError(f"the database's ledger ({table}) is empty: a database writer deleted it")
    counter, body, mac = rows[0]
    try:
        return verify_row(kr, int(counter), str(body), str(mac))
    except StaleKeyringError:
        # Another process may have saved a newer keyring file since this
        # one was loaded (a rotation, the database's anchor): read it once.
        if not kr._refresh_quietly():
            raise
        return verify_row(kr, int(counter), str(body), str(mac))

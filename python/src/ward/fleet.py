"""The process registry (FORMAT.md, "Process registry"): this process's
registration, as Go's ``fleet.Member``, so that ``ward keyring rotate --db``
waits until it holds a new key and a form opens only once it reads it.

A member reports its keyring's generation, the keys it holds and the forms
it reads every ``heartbeat`` seconds from a daemon thread, on a connection
of its own from ``connect`` (a DB-API 2 connection factory: a connection
is never shared between threads), and leaves on :meth:`FleetMember.close`.
Its rows carry Go's MACs: v2 (bound to the database, under the primary
key's integrity epoch) once the fleet opened ``integrity:v2``, else v1.
Each heartbeat verifies the ledger first, which reads the keyring file
again when a rotation wrote the ledger under a newer one: the member then
reports the new key, and the rotation goes on.

It never writes the ledger: where a Go process joins the wait of a form it
lacks, this one refuses to join (:class:`ward.FormsMissingError`) while
the database depends on such a form, open or waiting; a form that opens
later without it is reported to ``on_error`` at the next heartbeat. It
joins only a database whose ledger verifies.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from ._db import ident
from ._wire import lp
from .errors import FormsMissingError, WardError
from .keyring import Keyring
from .ledger import DEFAULT_TABLE as LEDGER_TABLE, LedgerState, verify

DEFAULT_TABLE = "ward_fleet"
DEFAULT_HEARTBEAT = 2.0
INTEGRITY_V2 = "integrity:v2"
#: The forms every process of this package reads: ciphertext v3 and v4, and integrity records v2.
READS = ("ciphertext:v3", "ciphertext:v4", INTEGRITY_V2)
_FORM = re.compile(r"^(sealed|subject|password|ciphertext|integrity):[!-+\--~]{1,190}$")


@dataclass(frozen=True)
class Row:
    """One registry row, every field its MAC covers."""

    id: str
    host: str
    pid: int
    keyring: str
    generation: int
    keys: tuple[int, ...]
    started: int  # Unix ms
    seen: int  # Unix ms
    exited: bool
    forms: tuple[str, ...]

    @property
    def keys_text(self) -> str:
        return ",".join(f"{k:08x}" for k in self.keys)

    @property
    def forms_text(self) -> str:
        return ",".join(self.forms)

    def message(self) -> bytes:
        """What a row's MAC covers (Go's rowMessage)."""
        b = b"".join(lp(s) for s in (self.id, self.host, self.keyring, self.keys_text))
        b += struct.pack(">qqqq", self.pid, self.generation, self.started, self.seen)
        b += b"\x01" if self.exited else b"\x00"
        if self.forms:  # a row of a release from before forms has none, and its MAC as then
            b += lp(self.forms_text)
        return b

    def mac_v1(self, kr: Keyring) -> str:
        """Hex of HMAC-SHA-256 under the keyring's ``fleet registry v1`` derivation."""
        return hmac.new(kr.derive(b"fleet registry v1", 32), self.message(), hashlib.sha256).hexdigest()

    def mac_v2(self, kr: Keyring, epoch: int, database: str) -> str:
        """``v2:EPOCH:MAC`` under the integrity key of epoch, bound to database."""
        key = kr.integrity_key(epoch, b"fleet registry")
        msg = b"ward fleet row v2\x00" + struct.pack(">I", epoch) + lp(database) + self.message()
        return f"v2:{epoch:08x}:" + hmac.new(key, msg, hashlib.sha256).hexdigest()


def _dialect(conn: Any) -> str:
    mod = type(conn).__module__.split(".")[0]
    if mod in ("psycopg", "psycopg2"):
        return "postgres"
    if mod in ("pymysql", "MySQLdb", "mysql"):
        return "mysql"
    return "sqlite"


def _integrity_error(conn: Any) -> Any:
    """The DB-API IntegrityError of the connection's driver (a unique
    violation is one), or () for a driver without it (nothing is caught)."""
    return getattr(sys.modules[type(conn).__module__.split(".")[0]], "IntegrityError", ())


def _ddl(table: str, dialect: str) -> str:
    mysql = dialect == "mysql"
    idt, text, keys = ("VARBINARY(1024)", "LONGTEXT", "`keys`") if mysql else ("TEXT", "TEXT", '"keys"')
    default = "" if mysql else " DEFAULT ''"  # MySQL 8 allows no literal default on a TEXT
    return (f"CREATE TABLE IF NOT EXISTS {table} (id {idt} PRIMARY KEY, host TEXT NOT NULL, pid BIGINT NOT NULL, keyring TEXT NOT NULL,"
            f" generation BIGINT NOT NULL, {keys} {text} NOT NULL, started BIGINT NOT NULL, seen BIGINT NOT NULL,"
            f" exited INTEGER NOT NULL, mac TEXT NOT NULL, caps {text} NOT NULL{default})")


def _waiting(st: LedgerState) -> set[str]:
    return {f["name"] for f in st.body.get("forms") or [] if not f.get("opened")}


class FleetMember:
    """This process's registration in a database's process registry."""

    def __init__(self, connect: Callable[[], Any], keyring: Keyring, forms: Iterable[str] = (), *, table: str = DEFAULT_TABLE,
                 ledger_table: str = LEDGER_TABLE, on_error: Callable[[Exception], None] | None = None):
        declared = set(READS)
        for f in forms:
            if not isinstance(f, str) or not _FORM.match(f):
                raise ValueError(f"not a form: {str(f)[:40]!r} (kind:name, printable, no commas)")
            declared.add(f)
        self.forms = tuple(sorted(declared))
        self._base = self.forms
        self._followed: list[Any] = []
        self._connect, self._kr, self._table, self._ledger_table = connect, keyring, ident(table), ident(ledger_table)
        self._on_error = on_error or (lambda e: None)
        self.id = "p-" + os.urandom(8).hex()
        self._host = socket.gethostname()
        self._started = int(time.time() * 1000)
        self._ledger: LedgerState | None = None
        self._leaving = threading.Event()
        self._thread: threading.Thread | None = None
        self._keys_col = '"keys"'

    def __repr__(self) -> str:
        return f"FleetMember({self.id})"

    @classmethod
    def join(cls, connect: Callable[[], Any], keyring: Keyring, forms: Iterable[str] = (), *, table: str = DEFAULT_TABLE,
             ledger_table: str = LEDGER_TABLE, heartbeat: float = DEFAULT_HEARTBEAT,
             on_error: Callable[[Exception], None] | None = None) -> "FleetMember":
        """Register this process (the table created if missing) with
        :data:`READS` and forms (``sealed:TABLE.COLUMN``, ``subject:…``,
        ``password:SCHEME``: what it reads besides), and heartbeat until
        :meth:`close`. A ledger that does not verify, or a form this process
        lacks that is open or waiting, fails the join, typed; nothing is left
        registered then."""
        if heartbeat <= 0:
            raise ValueError("a heartbeat must be positive")
        m = cls(connect, keyring, forms, table=table, ledger_table=ledger_table, on_error=on_error)
        conn = connect()
        try:
            dialect = _dialect(conn)
            m._keys_col = "`keys`" if dialect == "mysql" else '"keys"'
            m._ledger = verify(conn, keyring, ledger_table)
            cur = conn.cursor()
            try:
                cur.execute(_ddl(m._table, dialect))
            finally:
                cur.close()
            conn.commit()
            m._insert(conn)
        finally:
            conn.close()
        try:
            m._check_forms(m._verify(), joining=True)  # after the row is in: a wait that begins later includes it
        except WardError:
            try:
                m.close()  # leave at once: it never served
            except Exception:  # the refusal says what happened; a row left behind goes stale
                pass
            raise
        m._thread = threading.Thread(target=m._loop, args=(heartbeat,), name="ward-fleet-heartbeat", daemon=True)
        m._thread.start()
        return m

    def _row(self, exited: bool) -> Row:
        keys = tuple(sorted(k.id for k in self._kr.keys.values() if k.state != "disabled"))
        return Row(self.id, self._host, os.getpid(), self._kr.id, self._kr.generation, keys, self._started, int(time.time() * 1000), exited, self.forms)

    def _mac(self, r: Row) -> str:
        st = self._ledger
        if st is not None and st.allows(INTEGRITY_V2):
            return r.mac_v2(self._kr, self._kr.primary.id, st.database)
        return r.mac_v1(self._kr)

    def _exec(self, conn: Any, sql: str, args: tuple) -> int:
        if _dialect(conn) != "sqlite":
            sql = sql.replace("?", "%s")
        cur = conn.cursor()
        try:
            cur.execute(sql, args)
            n = cur.rowcount
        finally:
            cur.close()
        conn.commit()
        return n

    def _insert(self, conn: Any) -> None:
        r = self._row(False)
        self._exec(conn, f"INSERT INTO {self._table} (id, host, pid, keyring, generation, {self._keys_col}, started, seen, exited, mac, caps)"
                   " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)",
                   (r.id, r.host, r.pid, r.keyring, r.generation, r.keys_text, r.started, r.seen, self._mac(r), r.forms_text))

    def _write(self, conn: Any, exited: bool) -> int:
        r = self._row(exited)
        return self._exec(conn, f"UPDATE {self._table} SET generation = ?, {self._keys_col} = ?, seen = ?, exited = ?, mac = ?, caps = ?"
                          " WHERE id = ? AND exited = 0",
                          (r.generation, r.keys_text, r.seen, int(exited), self._mac(r), r.forms_text, self.id))

    def follow(self, indexer: Any) -> "FleetMember":
        """Follow a re-keyable blind index (:class:`ward.Indexer`): from the
        next heartbeat on, declare each phase of its re-key the ledger
        records (Go's ``ledger.IndexAck``), so ``ward keyring reindex``
        counts this process rather than waiting for it. Sound only when the
        process writes the index's columns through the indexer alone (its
        ``write`` reads the phase in each write's transaction)."""
        self._followed.append(indexer)
        return self

    def _verify(self) -> LedgerState:
        conn = self._connect()
        try:
            self._ledger = verify(conn, self._kr, self._ledger_table)  # reads a newer keyring file once when the ledger is newer
            self.forms = tuple(sorted(set(self._base).union(*(x.acks(self._ledger) for x in self._followed))))
            return self._ledger
        finally:
            conn.close()

    def _check_forms(self, st: LedgerState, joining: bool) -> None:
        lacking = sorted({f"{f} (open)" for f in st.opened_forms if f not in self.forms}
                         | ({f"{f} (waiting)" for f in _waiting(st) if f not in self.forms} if joining else set()))
        if lacking:
            raise FormsMissingError("the database depends on forms this process does not declare: " + ", ".join(lacking)
                                    + " (declare them if it reads them, or run a release that does)")

    def beat(self) -> None:
        """Report now what the keyring holds, after verifying the ledger
        again; register again when the row vanished (a database writer
        deleted it, or the database went back in time). A ledger that does
        not verify is raised after the row is written under the last
        verified state, so a rotation keeps waiting for this process."""
        if self._leaving.is_set():
            return
        unverified: WardError | None = None
        try:
            self._verify()
        except WardError as e:
            unverified = e
        conn = self._connect()
        try:
            if self._write(conn, False) == 0 and not self._leaving.is_set():
                try:
                    self._insert(conn)
                except _integrity_error(conn):  # its own row, left or unchanged: a duplicate, as in Go
                    conn.rollback()
        finally:
            conn.close()
        if unverified is not None:
            raise unverified
        if self._ledger is not None:
            self._check_forms(self._ledger, joining=False)

    def _loop(self, every: float) -> None:
        while not self._leaving.wait(every):
            try:
                self.beat()
            except Exception as e:  # the heartbeat keeps trying; the error names no key or value
                self._on_error(e)

    def close(self) -> None:
        """Stop the heartbeat and mark the registration as exited: it no
        longer blocks a rotation or a form."""
        self._leaving.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)
        conn = self._connect()
        try:
            self._write(conn, True)
        finally:
            conn.close()

    def __enter__(self) -> "FleetMember":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

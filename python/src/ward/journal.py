"""The forget journal (FORMAT.md, "Forget journal record v1, v2 and v3",
"Private record v2"), read where Go's subject store reads it at a seal:
whether a subject went private, so that a seal never uses a
keyring-wrapped key a database writer put back (or left) for a subject
whose keys the user holds. This package never appends to it.

A line that fails its MAC or does not parse is counted (``invalid``) and
ignored. A private record v2 counts when its MAC is under the keyring's
current integrity epoch, or when it lies on the chain back from the
ledger's tally of the namespace's private subjects (a record that
committed, of any epoch, a retired one included); a v1 private record
counts only until the ledger holds the mark ``integrity:private-v2:NS``."""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import hmac
import os
import stat
import threading
from dataclasses import dataclass
from typing import Callable, Protocol

from ._wire import lp
from .errors import CorruptFileError, KeyDisabledError, UnknownKeyError, WardError
from .keyring import Keyring
from .ledger import LedgerState, Tally

EXT = ".wfj"
MAX_FILE = 1 << 30  # Go's forgetlog.MaxFile: a larger file is refused, naming it
MAX_LINE = 2048  # a longer line is a writer's: counted invalid, skipped
MAX_KEYS = 64
EPOCH_PURPOSE = b"forget journal"


class Keys(Protocol):
    """A journal's keys: the subject hash key, the MAC key of v1/v2
    records, and the integrity keys of chained records, one per epoch."""

    hash: bytes
    mac: bytes

    def current(self) -> int: ...  # the current integrity epoch, -1 if none

    def at(self, epoch: int) -> bytes | None: ...  # an epoch's key, None if this keyring cannot give it

    def ended(self, epoch: int) -> bool: ...  # whether the keyring retired the epoch's key


class _KeyringKeys:
    def __init__(self, kr: Keyring):
        self.kr = kr
        self.hash = kr.derive(b"forget journal subject v1", 32)
        self.mac = kr.derive(b"forget journal mac v1", 32)

    def current(self) -> int:
        return self.kr.primary.id

    def at(self, epoch: int) -> bytes | None:
        try:
            return self.kr.integrity_key(epoch, EPOCH_PURPOSE)
        except (UnknownKeyError, KeyDisabledError):
            return None

    def ended(self, epoch: int) -> bool:
        return epoch in self.kr.removed


def subject_hash(key: bytes, namespace: str, subject: str) -> bytes:
    """HMAC-SHA-256(hash key, uvarint(len(ns)) || ns || subject)."""
    return hmac.new(key, lp(namespace) + subject.encode(), hashlib.sha256).digest()


@dataclass(frozen=True)
class Record:
    """One record as read: its subject hash (hex), whether it is chained
    (forget v3, private v2) and private, the tally before it and its epoch,
    the key versions field as written (forgets), and whether its MAC was
    checked (False: a retired epoch's, kept for the chain to prove)."""

    subject: str
    chained: bool
    private: bool
    prev: Tally | None
    epoch: int
    keys: str | None
    proven: bool

    def next(self) -> Tally:
        """The tally after the record's event."""
        assert self.prev is not None
        ident = bytes.fromhex(self.subject)
        return self.prev.add(ident if self.private else ident + (self.keys or "").encode())


def _is_hex(s: str, lower_only: bool) -> bool:
    digits = "0123456789abcdef" if lower_only else "0123456789abcdefABCDEF"
    return len(s) % 2 == 0 and all(c in digits for c in s)


def keys_ok(s: str) -> bool:
    """Key versions as a record spells them: ``-``, or up to 64 of 8
    lower-case hex digits, ascending, comma-separated."""
    if s == "-":
        return True
    parts = s.split(",")
    if len(parts) > MAX_KEYS or any(len(p) != 8 or not _is_hex(p, True) for p in parts):
        return False
    return parts == sorted(parts)


def parse_tally(s: str) -> Tally | None:
    """A tally as a record spells it (count/since/head), refusing any other
    spelling or an invalid tally."""
    p = s.split("/")
    if len(p) != 3 or not (p[0].isascii() and p[0].isdigit() and p[1].isascii() and p[1].isdigit()):
        return None
    if p[2] == "-":
        head = b""
    elif len(p[2]) == 64 and _is_hex(p[2], True):
        head = bytes.fromhex(p[2])
    else:
        return None
    t = Tally(int(p[0]), int(p[1]), head)
    return t if t.valid() and t.count != (1 << 64) - 1 and str(t) == s else None


def parse_epoch(s: str) -> int:
    """An integrity epoch (8 lower-case hex digits), or -1."""
    return int(s, 16) if len(s) == 8 and _is_hex(s, True) else -1


def _is_time(s: str) -> bool:
    d = s[1:] if s[:1] in ("+", "-") else s
    return d.isascii() and d.isdigit() and -(1 << 63) <= int(s) < 1 << 63


def parse(f: list[str]) -> Record | None:
    """A line's fields but its MAC's check, or None."""
    chained = private = False
    prev: Tally | None = None
    epoch = 0
    keys: str | None = None
    kind = (f[0] if f else "", len(f))
    if kind == ("ward-forget-v3", 9):
        keys, prev, epoch, chained = f[4], parse_tally(f[5]), parse_epoch(f[6]), True
        if keys != "*" and not keys_ok(keys):
            return None
    elif kind == ("ward-private-v2", 8):
        prev, epoch, chained, private = parse_tally(f[4]), parse_epoch(f[5]), True, True
    elif kind == ("ward-forget-v2", 7):
        if not keys_ok(f[4]):
            return None
        keys = f[4]
    elif kind in (("ward-forget-v1", 6), ("ward-private-v1", 6)):
        private = f[0] == "ward-private-v1"
    else:
        return None
    if chained and (prev is None or epoch < 0):
        return None
    if not _is_hex(f[2], False) or not _is_hex(f[3], True) or len(f[3]) != 64 or not _is_time(f[-2]):
        return None
    return Record(f[3], chained, private, prev, epoch, keys, False)


class _Records:
    """The valid private records of one database, by namespace (hex) and
    subject hash, with the chain back from the tally asked last."""

    def __init__(self, database: str, mac_key: Callable[[Record], bytes | None], ended: Callable[[int], bool]):
        self.database, self.mac_key, self.ended = database, mac_key, ended
        self.invalid = 0
        self.private: dict[str, list[Record]] = {}  # namespace (hex) -> its private records
        self._by_subject: dict[tuple[str, str], list[Record]] = {}
        self._chain: dict[str, tuple[Tally, int, set[Record]]] = {}

    def add(self, line: bytes) -> None:
        """One complete line (its newline last)."""
        text = line[:-1].decode("latin-1")  # bytes as they are: the MAC covers them
        f = text.split(" ")
        rec = parse(f)
        if rec is None:
            self.invalid += 1
            return
        key = self.mac_key(rec)
        want = hmac.new(key, line[: text.rfind(" ")], hashlib.sha256).hexdigest().encode() if key is not None else b""
        proven = key is not None and hmac.compare_digest(want, f[-1].encode("latin-1"))
        if not proven and (not rec.chained or not self.ended(rec.epoch)):
            self.invalid += 1
            return
        if f[1] != self.database or not rec.private:
            return  # another database's, or a forget: this package reads only private records
        rec = dataclasses.replace(rec, proven=proven)
        self.private.setdefault(f[2].lower(), []).append(rec)
        self._by_subject.setdefault((f[2].lower(), rec.subject), []).append(rec)

    def of(self, namespace_hex: str, subject: str) -> list[Record]:
        return list(self._by_subject.get((namespace_hex, subject), ()))

    def committed(self, namespace_hex: str, start: Tally) -> set[Record]:
        """The records on the chain back from start."""
        recs = self.private.get(namespace_hex, [])
        cached = self._chain.get(namespace_hex)
        if cached and cached[0] == start and cached[1] == len(recs):
            return cached[2]
        by_next: dict[Tally, list[Record]] = {}
        for r in recs:
            if r.chained:
                by_next.setdefault(r.next(), []).append(r)
        on: set[Record] = set()
        t = start
        while t.count > t.since:
            leading = by_next.get(t)
            if not leading:
                break
            on.update(leading)
            assert leading[0].prev is not None
            t = leading[0].prev
        self._chain[namespace_hex] = (start, len(recs), on)
        return on


class ForgetJournal:
    """A reader of the fleet's forget journal folder (``*.wfj`` files Go's
    processes append to). Each look-up first reads what was appended since
    the last (complete lines only). Safe for concurrent use."""

    def __init__(self, folder: str, keyring: Keyring):
        if not os.path.isdir(folder):
            raise CorruptFileError(f"the forget journal {folder} is not a folder")
        self._init(folder, _KeyringKeys(keyring))

    @classmethod
    def with_keys(cls, folder: str, keys: Keys) -> "ForgetJournal":
        """A reader under raw keys (the format's vectors)."""
        j = cls.__new__(cls)
        j._init(folder, keys)
        return j

    def _init(self, folder: str, keys: Keys) -> None:
        self.folder, self._keys = folder, keys
        self._mu = threading.Lock()
        self._epoch_keys: dict[int, bytes | None] = {}
        self._offsets: dict[str, int] = {}
        self._records: _Records | None = None

    def __repr__(self) -> str:
        return f"ForgetJournal({self.folder})"

    @property
    def invalid(self) -> int:
        """How many lines read so far failed to parse or their MAC."""
        return self._records.invalid if self._records else 0

    def is_private(self, database: str, namespace: str, subject: str, ledger: Callable[[], LedgerState]) -> bool:
        """Whether the journal records the subject as gone private in the
        database named; ``ledger`` gives the verified ledger, asked only
        when a record of the subject needs its tally."""
        ns, ident = _ns_hex(namespace), subject_hash(self._keys.hash, namespace, subject).hex()
        with self._mu:
            recs = self._refresh(database).of(ns, ident)
            current = self._keys.current()
            if any(r.chained and r.proven and r.epoch == current for r in recs):
                return True
        if not recs:
            return False
        st = ledger()  # read without the lock: other look-ups do not queue behind the database
        with self._mu:
            records = self._refresh(database)
            on = records.committed(ns, st.tally("subject.private:" + namespace))
            v1 = "integrity:private-v2:" + namespace not in st.marks
            return any(r in on or (not r.chained and v1) for r in records.of(ns, ident))

    def _mac_key(self, r: Record) -> bytes | None:
        if not r.chained:
            return self._keys.mac
        if r.epoch not in self._epoch_keys:
            k = self._keys.at(r.epoch)
            if k is None or len(self._epoch_keys) >= 64:
                return k
            self._epoch_keys[r.epoch] = k
        return self._epoch_keys[r.epoch]

    def _refresh(self, database: str) -> _Records:
        if self._records is None or self._records.database != database:
            self._records, self._offsets = _Records(database, self._mac_key, self._keys.ended), {}
        for name in sorted(glob.glob(os.path.join(glob.escape(self.folder), "*" + EXT))):
            self._read_from(name, self._records)
        return self._records

    def _read_from(self, name: str, records: _Records) -> None:
        """A file's complete lines after the offset last read, up to its size now."""
        try:
            st = os.stat(name)
        except OSError:
            raise CorruptFileError(f"a forget journal file that cannot be read: {name}") from None
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE:
            raise CorruptFileError(f"a forget journal file that is not a regular file of at most {MAX_FILE} bytes: {name}")
        off, end = self._offsets.get(name, 0), st.st_size
        try:
            with open(name, "rb") as f:
                f.seek(off)
                while off < end:
                    line = f.readline(min(MAX_LINE + 1, end - off))
                    if len(line) == MAX_LINE + 1 and not line.endswith(b"\n"):  # overlong: a writer's
                        records.invalid += 1
                        off += len(line)
                        while off < end:
                            rest = f.readline(min(1 << 16, end - off))
                            off += len(rest)
                            if not rest or rest.endswith(b"\n"):
                                break
                        continue
                    if not line.endswith(b"\n"):
                        break  # a last line without its newline: read again next time
                    records.add(line)
                    off += len(line)
        except OSError as e:
            raise WardError(f"reading the forget journal file {name}: {type(e).__name__}") from None
        self._offsets[name] = off


def _ns_hex(namespace: str) -> str:
    """A namespace as records spell it: lower-case hex of its UTF-8."""
    return namespace.encode().hex()

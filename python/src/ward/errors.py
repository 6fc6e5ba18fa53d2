"""Typed errors: each names what failed, never a secret."""

from __future__ import annotations


class WardError(Exception):
    """The base of every error this package raises."""


class MalformedError(WardError):
    """Input that is not one of ward's formats (truncated, bad encoding)."""


class UnsupportedVersionError(WardError):
    """A ciphertext version, key class or file format this reader does not know."""


class UnknownKeyError(WardError):
    """The value names a key this keyring or grant does not hold."""


class KeyDisabledError(WardError):
    """The value names a key the keyring holds disabled."""


class AuthenticationError(WardError):
    """The value was damaged or forged: its tag does not verify."""


class WrongContextError(WardError):
    """An intact value presented under another row, column, owner or key."""


class NotGrantedError(WardError):
    """A grant holds keys for ciphertext v4 of its own columns only."""


class WrongWrapperError(WardError):
    """A keyring or grant file sealed under another key service."""


class CorruptFileError(WardError):
    """A keyring or grant file that fails its checks."""


class LedgerError(WardError):
    """The database's ledger does not verify against the keyring: ward refuses to write."""


class StaleKeyringError(LedgerError):
    """The ledger was written under a newer keyring file than the one
    loaded (a newer generation or state key, a key or anchor it lacks):
    :func:`ward.ledger.verify` reads the file again once before it says so."""


class SubjectRefusedError(WardError):
    """A subject key that may not be used here: forgotten, private, lost or missing."""


class FormsMissingError(WardError):
    """The database depends on forms this process does not declare it reads
    (open, or at a join waiting to open): it must not serve (Go's
    ``fleetgate.MissingError``)."""


class BindingError(WardError):
    """A bound value of a type with no canonical encoding (floats, objects)."""

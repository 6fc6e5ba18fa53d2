"""ward for Python: read (and, into existing keys, write) what ward's Go
library seals — ciphertext v1–v4, field contexts, grants, blind indexes and
keyring-wrapped subject keys — from FORMAT.md alone.

>>> from ward import Keyring, MasterKey, Column
>>> kr = Keyring.load("keyring.json", MasterKey.load())          # doctest: +SKIP
>>> titles = Column("notes", "title", kr)                         # doctest: +SKIP
>>> titles.open_text(stored, row=42)                              # doctest: +SKIP
"""

from .blind import BlindIndex, Indexer
from .errors import (
    AuthenticationError,
    BindingError,
    CorruptFileError,
    FormsMissingError,
    KeyDisabledError,
    LedgerError,
    StaleKeyringError,
    MalformedError,
    NotGrantedError,
    SubjectRefusedError,
    UnknownKeyError,
    UnsupportedVersionError,
    WardError,
    WrongContextError,
    WrongWrapperError,
)
from .field import Column, RowMAC, field_scope
from .fleet import FleetMember
from .grant import Grant
from .journal import ForgetJournal
from .keyring import Keyring
from .kms import AwsKms, MasterKey

__version__ = "0.4.0"

__all__ = [
    "AuthenticationError", "AwsKms", "BindingError", "BlindIndex", "Indexer", "Column", "CorruptFileError",
    "FleetMember", "ForgetJournal", "FormsMissingError", "Grant", "KeyDisabledError", "Keyring", "LedgerError", "StaleKeyringError", "MalformedError", "MasterKey",
    "NotGrantedError", "RowMAC", "SubjectRefusedError", "UnknownKeyError", "UnsupportedVersionError",
    "WardError", "WrongContextError", "WrongWrapperError", "field_scope",
]

"""Byte-level helpers shared by ward's formats (FORMAT.md)."""

from __future__ import annotations

import base64
import binascii
import os
import re
import stat

from .errors import CorruptFileError, MalformedError


def uvarint(n: int) -> bytes:
    """Encode n as an unsigned LEB128 varint (Go's binary.AppendUvarint)."""
    if 0 <= n < 0x80:
        return _SMALL[n]
    if n < 0:
        raise ValueError("uvarint of a negative number")
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_SMALL = [bytes((i,)) for i in range(0x80)]


def read_uvarint(b: bytes, i: int) -> tuple[int, int]:
    """Decode a uvarint at b[i:]; returns (value, next index) or ValueError."""
    n = shift = 0
    while True:
        if i >= len(b) or shift > 63:
            raise ValueError("a truncated or overlong uvarint")
        c = b[i]
        i += 1
        n |= (c & 0x7F) << shift
        if c < 0x80:
            return n, i
        shift += 7


def lp(b: bytes | str) -> bytes:
    """Length-prefix b: uvarint(len(b)) followed by b."""
    if isinstance(b, str):
        b = b.encode()
    return uvarint(len(b)) + b


def b64std(s: str, what: str) -> bytes:
    """Decode standard, padded base64 (RFC 4648 section 4) strictly."""
    try:
        return base64.b64decode(s.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, AttributeError) as e:
        raise MalformedError(f"{what} is not standard base64") from e


def b64std_encode(b: bytes) -> str:
    """Encode b as standard, padded base64."""
    return base64.b64encode(b).decode("ascii")


TEXT_PREFIXES = ("w1:", "w2:", "w3:", "w4:")
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")


def decode_text(s: str) -> bytes:
    """Decode a ciphertext's text form (``w4:`` and unpadded base64url)."""
    if len(s) < 3 or s[:3] not in TEXT_PREFIXES:
        raise MalformedError("not a ward ciphertext text form (w1: to w4:)")
    body = s[3:]
    # Exactly the alphabet: nothing trimmed, nothing skipped (Python's
    # decoder would discard other characters; keyring/testdata/text-forms.json).
    if not _BASE64URL.fullmatch(body):
        raise MalformedError("a ciphertext's text form is unpadded base64url")
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError) as e:
        raise MalformedError("a ciphertext's text form is not base64url") from e
    if not raw or raw[0] != int(s[1]):
        raise MalformedError("a ciphertext's text prefix does not match its version byte")
    return raw


def encode_text(ct: bytes) -> str:
    """Encode a binary ciphertext in its text form (``w<version>:…``)."""
    return f"w{ct[0]}:" + base64.urlsafe_b64encode(ct).decode("ascii").rstrip("=")


def as_binary(value: bytes | bytearray | memoryview | str) -> bytes:
    """Accept a ciphertext in either form: text (``w…``) or binary."""
    if isinstance(value, str):
        return decode_text(value)
    b = bytes(value)
    if b[:1] == b"w":
        try:
            return decode_text(b.decode("ascii"))
        except UnicodeDecodeError as e:
            raise MalformedError("a ciphertext's text form is ASCII") from e
    return b


# MAX_FILE bounds a keyring or grant file, as Go's maxKeyringFile.
MAX_FILE = 16 << 20


def read_bounded(path: str, what: str, limit: int = MAX_FILE) -> bytes:
    """A regular file's bytes, refusing one past limit, as Go's boundfile.

    A FIFO, a device such as /dev/zero, a socket or a folder is refused at
    once (opened without blocking, never read), so no file put in place
    can hang a reader or fill its memory; a symbolic link is followed.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise CorruptFileError(f"{what} that is not a regular file: {path}")
    with os.fdopen(fd, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise CorruptFileError(f"{what} larger than {limit} bytes")
    return data

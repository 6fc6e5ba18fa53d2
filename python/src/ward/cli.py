"""``python3 -m ward encrypt|decrypt``: the Go CLI's ``ward encrypt`` and
``ward decrypt`` with the same flags, so a value sealed by either opens
with the other. Exit codes as the Go CLI: 0 success, 1 a value that does
not open, 2 a usage or other error."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from ._wire import as_binary, encode_text
from .errors import (
    AuthenticationError,
    KeyDisabledError,
    MalformedError,
    NotGrantedError,
    UnknownKeyError,
    UnsupportedVersionError,
    WardError,
    WrongContextError,
)
from .field import Column
from .grant import Grant
from .keyring import Keyring
from .kms import from_url

MAX_INPUT = 64 << 20
PROG = "python3 -m ward"

#: Errors meaning "checked, and it does not open" (exit 1), with a hint.
FAILED_HINTS: dict[type[WardError], str] = {
    WrongContextError: "pass the same --context (or --table/--column/--row and --bind) used to encrypt",
    AuthenticationError: "the value was damaged",
    UnknownKeyError: "the value was sealed under a key this keyring (or grant) does not hold",
    KeyDisabledError: "enable the key with 'ward keyring enable KEY-ID'",
    NotGrantedError: "a grant opens ciphertext v4 only: 'ward reseal' moves a column to v4",
    MalformedError: "",
    UnsupportedVersionError: "",
}


FAILED: tuple[type[WardError], ...] = tuple(FAILED_HINTS)


class UsageError(WardError):
    """A usage error (exit 2)."""


def global_flags(p: argparse.ArgumentParser, suppress: bool) -> None:
    """The Go CLI's persistent flags: accepted before or after the command."""
    def d(v: str) -> str:
        return argparse.SUPPRESS if suppress else v

    p.add_argument("--keyring", default=d(os.environ.get("WARD_KEYRING", "")), help="keyring file (default $WARD_KEYRING)")
    p.add_argument("--master-key-file", default=d(""), help="file holding the base64 master key (default: $WARD_MASTER_KEY)")
    p.add_argument("--kms", default=d(""), help="a KMS key URL (awskms://KEY?region=R&endpoint=E) instead of the master key (default $WARD_KMS)")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Seal and open ward values (the Go CLI's encrypt and decrypt).")
    global_flags(p, suppress=False)
    sub = p.add_subparsers(dest="command", required=True)
    for name, helptext in (("encrypt", "seal stdin under the primary key, to stdout"), ("decrypt", "open a ciphertext from stdin (text or binary), to stdout")):
        c = sub.add_parser(name, help=helptext)
        global_flags(c, suppress=True)
        c.add_argument("--context", default="", help="associated data the value is bound to")
        c.add_argument("--table", default="", help="bind to a database column like the field layer: table name")
        c.add_argument("--column", default="", help="column name (with --table)")
        c.add_argument("--row", default="", help="row key (with --table)")
        c.add_argument("--bind", action="append", default=None, metavar="NAME=VALUE", help="a bound column and its value, repeated in the column's bind order")
        if name == "encrypt":
            c.add_argument("--binary", action="store_true", help="write the binary form")
        else:
            c.add_argument("--grant", default="", help="open with a grant file (ward grant) instead of the keyring; needs --table/--column/--row")
    return p


def field_args(a: argparse.Namespace) -> tuple[list[str], list[str]] | None:
    """The bound names and values of --table/--column/--row/--bind, or None."""
    if not (a.table or a.column or a.row or a.bind):
        return None
    if a.context:
        raise UsageError("--context and --table/--column/--row are exclusive")
    if not (a.table and a.column and a.row):
        raise UsageError("--table, --column and --row go together")
    names, values = [], []
    for b in a.bind or []:
        name, sep, value = b.partition("=")
        if not sep or not name:
            raise UsageError(f"--bind {b!r} is not NAME=VALUE")
        names.append(name)
        values.append(value)
    return names, values


def read_input(stdin) -> bytes:
    data = stdin.read(MAX_INPUT + 1)
    if len(data) > MAX_INPUT:
        raise UsageError(f"input larger than {MAX_INPUT} bytes")
    return data


def run(a: argparse.Namespace, stdin, stdout) -> None:
    ks = from_url(a.kms, a.master_key_file or None)
    fa = field_args(a)
    data = read_input(stdin)
    if a.command == "decrypt" and a.grant:
        if fa is None:
            raise UsageError("--grant needs --table, --column and --row")
        g = Grant.load(a.grant, ks)
        if not g.covers(a.table, a.column):
            raise WrongContextError(f"the grant names {', '.join(g.scopes)}, not {a.table}.{a.column}")
        stdout.write(Column(a.table, a.column, g, bind=fa[0]).open(as_binary(data.strip() if data[:1] == b"w" else data), a.row, *fa[1]))
        return
    if not a.keyring:
        raise UsageError("no keyring: pass --keyring or set WARD_KEYRING")
    kr = Keyring.load(a.keyring, ks)
    if a.command == "encrypt":
        if fa is not None:
            ct = Column(a.table, a.column, kr, bind=fa[0]).seal(data, a.row, *fa[1])  # v4, as the Go CLI
        else:
            ct = kr.seal(data, a.context.encode())
        stdout.write(ct if a.binary else (encode_text(ct) + "\n").encode())
        return
    ct = as_binary(data.strip() if data[:1] == b"w" else data)
    if fa is not None:
        stdout.write(Column(a.table, a.column, kr, bind=fa[0]).open(ct, a.row, *fa[1]))
    else:
        stdout.write(kr.open(ct, a.context.encode()))


#: Flags that take a value: "--row -7" means the row "-7", as in the Go CLI.
VALUE_FLAGS = {"--keyring", "--master-key-file", "--kms", "--context", "--table", "--column", "--row", "--bind", "--grant"}


def join_values(argv: Sequence[str]) -> list[str]:
    """Join each value flag with its value, so a value may start with '-'."""
    out: list[str] = []
    it = iter(argv)
    for arg in it:
        if arg in VALUE_FLAGS:
            out.append(f"{arg}={next(it, '')}")
        else:
            out.append(arg)
    return out


def main(argv: Sequence[str] | None = None, stdin=None, stdout=None, stderr=None) -> int:
    """Run the command line; returns the exit code."""
    argv = join_values(sys.argv[1:] if argv is None else argv)
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    stderr = stderr or sys.stderr
    try:
        a = parser().parse_args(argv)
    except SystemExit as e:  # argparse printed the usage
        return 0 if e.code == 0 else 2
    try:
        run(a, stdin, stdout)
        stdout.flush()
        return 0
    except FAILED as e:
        print(f"{PROG}: error: {e}", file=stderr)
        hint = FAILED_HINTS.get(type(e), "")
        if hint:
            print(f"hint: {hint}", file=stderr)
        return 1
    except (WardError, OSError) as e:
        print(f"{PROG}: error: {e}", file=stderr)
        return 2

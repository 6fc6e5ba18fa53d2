"""``python3 -m ward.bench``: what the field layer costs per value here,
beside raw AES-GCM from the same ``cryptography``.

It seals and opens values of messages.body in row 123456 (ciphertext v4
under one AES-GCM key of a keyring, the primary unless ``--key-id``),
beside raw ``AESGCM`` with a fresh ``os.urandom`` nonce per value, in
interleaved rounds: each op runs ``--values`` values per round, the
thread's CPU time is read around it (a busy neighbour's load is not
counted), and the order alternates (A B, then B A), as the Go lab
measures (docs/LAB.md). Raw is measured two ways: the AEAD call alone
(``raw_*``: the nonce and the sealed bytes apart, as nothing stores them)
and a value that carries its nonce (``raw_stored_*``: sealing returns
nonce ‖ sealed, opening splits it), which is what a column of raw AES-GCM
stores and what the ratios are taken over. Two parts of the seal are
measured alone in the same rounds: raw AES-GCM on a value with its nonce
and the seal's associated data (``raw_stored_ad_seal_ns``: the 7 header
bytes and the row's context), and the context check (``check_ns``: the
AES block of the column's check key over nonce ‖ 0x00000000 through a kept
ECB encryptor, the CRC-32C of the context and the masking, as the seal
computes it).

The table gives per value, per size, the medians with p05–p95 and the
per-round ratios; ``--json`` prints one size's nanoseconds per value per
round instead (ward-lab's aead scenario reads it)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import sys
import time
from typing import Any, Callable, Sequence

import google_crc32c
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from . import __version__
from .errors import WardError
from .field import Column
from .keyring import Keyring
from .kms import from_url

ROW = 123456
PROG = "python3 -m ward.bench"
Op = Callable[[int], None]


def rounds_of(ops: Sequence[Op], rounds: int, n: int) -> list[list[float]]:
    """Per op, nanoseconds per value in each round: every op runs n
    values per round, in alternating order, after one warm-up call each
    (imports, caches, the first AEAD objects) of n // 10 values."""
    out: list[list[float]] = [[] for _ in ops]
    for op in ops:
        op(max(1, n // 10))
    for r in range(rounds):
        order = range(len(ops)) if r % 2 == 0 else reversed(range(len(ops)))
        for i in order:
            t = time.thread_time_ns()
            ops[i](n)
            out[i].append((time.thread_time_ns() - t) / n)
    return out


def _ops(kr: Keyring, key_id: int, size: int) -> dict[str, Op]:
    """The measured ops, by the name of their result."""
    key = kr.key(key_id)
    col = Column("messages", "body", kr)
    sk = kr.scope_key(col.scope, key_id)
    if sk is None:
        raise WardError(f"key {key_id:08x} is {key.alg.name}: the benchmark compares the field layer with raw AES-GCM")
    col._keep_sealer(sk)  # seal under this key, as a column whose primary it is
    pt = os.urandom(size)
    ct = col.seal(pt, ROW)
    if col.open(ct, ROW) != pt:
        raise WardError("a value did not open to what was sealed")
    raw = AESGCM(os.urandom(key.alg.key_size))
    nonce = os.urandom(12)
    raw_ct = raw.encrypt(nonce, pt, None)
    stored = nonce + raw_ct

    def raw_seal(k: int) -> None:
        for _ in range(k):
            raw.encrypt(os.urandom(12), pt, None)

    def raw_open(k: int) -> None:
        for _ in range(k):
            raw.decrypt(nonce, raw_ct, None)

    def raw_stored_sealer(ad: bytes | None) -> Op:
        """Raw AES-GCM sealing values that carry their nonce, under ad."""
        def seal(k: int) -> None:
            for _ in range(k):
                n = os.urandom(12)
                n + raw.encrypt(n, pt, ad)
        return seal

    def raw_stored_open(k: int) -> None:
        for _ in range(k):
            raw.decrypt(stored[:12], stored[12:], None)

    context = col.context(4, ROW, ())
    check_block = sk._block  # the seal's own encryptor of the check key
    u32 = struct.Struct(">I")

    def check(k: int) -> None:
        for _ in range(k):
            block = check_block(nonce + b"\0\0\0\0")
            u32.pack(google_crc32c.value(context) ^ u32.unpack_from(block)[0])

    def field_seal(k: int) -> None:
        for _ in range(k):
            col.seal(pt, ROW)

    def field_open(k: int) -> None:
        for _ in range(k):
            col.open(ct, ROW)

    return {"raw_seal_ns": raw_seal, "raw_stored_seal_ns": raw_stored_sealer(None), "seal_ns": field_seal,
            "raw_open_ns": raw_open, "raw_stored_open_ns": raw_stored_open, "open_ns": field_open,
            "raw_stored_ad_seal_ns": raw_stored_sealer(sk.head + context), "check_ns": check}


def measure(kr: Keyring, size: int, rounds: int, values: int, key_id: int | None = None) -> dict[str, Any]:
    """One size's results: nanoseconds per value per round of each op
    (the ``*_ns`` lists), with the package's version, the algorithm and
    the size."""
    kid = kr.primary.id if key_id is None else key_id
    ops = _ops(kr, kid, size)
    got = rounds_of(list(ops.values()), rounds, values)
    out: dict[str, Any] = {"version": __version__, "alg": kr.key(kid).alg.name, "size": size}
    out.update(zip(ops, got))
    return out


def _spread(xs: Sequence[float]) -> tuple[float, float, float]:
    """Median, p05 and p95 (the nearest rank, both alike) of xs."""
    s = sorted(xs)
    return statistics.median(s), s[round(0.05 * (len(s) - 1))], s[round(0.95 * (len(s) - 1))]


def _ratios(a: Sequence[float], b: Sequence[float]) -> str:
    m, lo, hi = _spread([x / y for x, y in zip(a, b)])
    return f"{m:.2f}x ({lo:.2f}–{hi:.2f})"


def _micros(xs: Sequence[float]) -> str:
    m, lo, hi = _spread(xs)
    return f"{m / 1000:.3g} µs ({lo / 1000:.3g}–{hi / 1000:.3g})"


def table(results: Sequence[dict[str, Any]]) -> str:
    """A Markdown table of results: per op and size, ward's time, raw's
    (a value with its nonce), and the per-round ratios over it."""
    lines = ["| op | size | ward | raw, a value with its nonce | ward over raw | the check alone |", "|---|---|---|---|---|---|"]
    for r in results:
        for op in ("seal", "open"):
            check = _micros(r["check_ns"]) if op == "seal" else "–"
            lines.append(f"| {op} | {r['size']} B | {_micros(r[op + '_ns'])} | {_micros(r[f'raw_stored_{op}_ns'])} | "
                         f"{_ratios(r[op + '_ns'], r[f'raw_stored_{op}_ns'])} | {check} |")
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="The field layer's cost per value beside raw AES-GCM, in interleaved rounds of thread CPU time.")
    p.add_argument("--keyring", default=os.environ.get("WARD_KEYRING", ""), help="keyring file (default $WARD_KEYRING)")
    p.add_argument("--master-key-file", default="", help="file holding the base64 master key (default: $WARD_MASTER_KEY)")
    p.add_argument("--kms", default="", help="a KMS key URL instead of the master key (default $WARD_KMS)")
    p.add_argument("--key-id", default="", help="the AES-GCM key to seal under, in hex (default: the primary)")
    p.add_argument("--size", type=int, action="append", default=None, help="value size in bytes, repeated (default 64, 500, 4096)")
    p.add_argument("--rounds", type=int, default=30, help="interleaved rounds (default 30)")
    p.add_argument("--values", type=int, default=20000, help="values per op per round (default 20000)")
    p.add_argument("--json", action="store_true", help="print one size's per-round nanoseconds as JSON (one --size)")
    return p


def run(a: argparse.Namespace, stdout: Any) -> None:
    if not a.keyring:
        raise WardError("no keyring: pass --keyring or set WARD_KEYRING")
    sizes = a.size or [64, 500, 4096]
    if a.rounds < 1 or a.values < 1 or any(s < 0 or s > 64 << 20 for s in sizes):
        raise WardError("--rounds and --values are at least 1, a --size 0 to 64 MiB")
    if a.json and len(sizes) != 1:
        raise WardError("--json prints one size: pass one --size")
    try:
        key_id = int(a.key_id, 16) if a.key_id else None
    except ValueError:
        raise WardError(f"--key-id {a.key_id[:20]!r} is not a hex key ID") from None
    kr = Keyring.load(a.keyring, from_url(a.kms, a.master_key_file or None))
    results = [measure(kr, s, a.rounds, a.values, key_id) for s in sizes]
    if a.json:
        json.dump(results[0], stdout)
        stdout.write("\n")
        return
    stdout.write(f"ward {__version__}, {results[0]['alg']}, {a.rounds} rounds of {a.values} values, medians (p05–p95)\n\n{table(results)}\n")


def main(argv: Sequence[str] | None = None, stdout: Any = None, stderr: Any = None) -> int:
    """Run the benchmark; returns the exit code (2 on a usage or key error)."""
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    try:
        a = parser().parse_args(argv)
    except SystemExit as e:
        return 0 if e.code == 0 else 2
    try:
        run(a, stdout)
        return 0
    except (WardError, OSError) as e:
        print(f"{PROG}: error: {e}", file=stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

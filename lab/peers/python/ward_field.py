"""The ward Python package's per-value cost (ward-lab's aead scenario).

Arguments: keyring file, master key file, value size, rounds, values per
round. Like the Go lab's field case it seals and opens the values of
messages.body in row 123456 (ciphertext v4, the keyring's primary), beside
raw AES-GCM from the same ``cryptography`` with a fresh random nonce per
value, in interleaved rounds (the thread's CPU time, alternating order).
Raw is measured two ways: the AEAD call alone (``raw_*``: the nonce and
the sealed bytes apart, as nothing stores them), and a value that carries
its nonce (``raw_stored_*``: sealing returns nonce ‖ sealed, opening splits
it), which is what the Go lab's raw AES-GCM measures (crypto/cipher's
NewGCMWithRandomNonce) and what a column of raw AES-GCM stores.
Two parts of the seal are measured alone in the same rounds, to say where
its time goes: raw AES-GCM on a value that carries its nonce with the
seal's associated data (``raw_stored_ad_seal_ns``: the 7 header bytes and
the row's context), and the context check (``check_ns``: the AES block of
the column's check key over nonce ‖ 0x00000000 through a kept ECB
encryptor, the CRC-32C of the context and the masking, as the package's
seal computes it).
Prints JSON: nanoseconds per value per round.
"""

import json
import os
import struct
import sys
import time

import google_crc32c

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

import ward
from ward import Column, Keyring, MasterKey
from ward.aead import ecb_encryptor


def rounds_of(ops, rounds, n):
    """Per op, nanoseconds per value in each round: the thread's CPU time
    (a busy neighbour's load is not counted), ops in alternating order
    (A B, then B A), as the Go lab measures (docs/LAB.md)."""
    out = [[] for _ in ops]
    for op in ops:  # warm-up: imports, caches, the first AEAD objects
        op(max(1, n // 10))
    for r in range(rounds):
        order = range(len(ops)) if r % 2 == 0 else reversed(range(len(ops)))
        for i in order:
            t = time.thread_time_ns()
            ops[i](n)
            out[i].append((time.thread_time_ns() - t) / n)
    return out


def main():
    kr_path, mk_path, size, rounds, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    kr = Keyring.load(kr_path, MasterKey.load(mk_path))
    col = Column("messages", "body", kr)
    pt = os.urandom(size)
    ct = col.seal(pt, 123456)
    if col.open(ct, 123456) != pt:
        raise SystemExit("ward_field.py: a value did not open to what was sealed")
    raw = AESGCM(os.urandom(kr.primary.alg.key_size))
    nonce = os.urandom(12)
    raw_ct = raw.encrypt(nonce, pt, None)

    def raw_seal(k):
        for _ in range(k):
            raw.encrypt(os.urandom(12), pt, None)

    def raw_open(k):
        for _ in range(k):
            raw.decrypt(nonce, raw_ct, None)

    stored = nonce + raw_ct

    def raw_stored_sealer(ad):
        """Raw AES-GCM sealing values that carry their nonce, under ad."""
        def seal(k):
            for _ in range(k):
                n = os.urandom(12)
                n + raw.encrypt(n, pt, ad)
        return seal

    raw_stored_seal = raw_stored_sealer(None)

    def raw_stored_open(k):
        for _ in range(k):
            raw.decrypt(stored[:12], stored[12:], None)

    # The seal's parts: the AD it binds (header, then the context of row
    # 123456), and its check, each alone.
    sk = kr.scope_key(col.scope)
    context = col.context(4, 123456, ())
    raw_stored_ad_seal = raw_stored_sealer(sk.head + context)
    check_block = ecb_encryptor(sk.check_key)
    u32 = struct.Struct(">I")

    def check(k):
        for _ in range(k):
            block = check_block(nonce + b"\0\0\0\0")
            u32.pack(google_crc32c.value(context) ^ u32.unpack_from(block)[0])

    def field_seal(k):
        for _ in range(k):
            col.seal(pt, 123456)

    def field_open(k):
        for _ in range(k):
            col.open(ct, 123456)

    ops = [raw_seal, raw_stored_seal, field_seal, raw_open, raw_stored_open, field_open, raw_stored_ad_seal, check]
    rs, rss, fs, ro, ros, fo, rsa, ck = rounds_of(ops, rounds, n)
    json.dump({"version": ward.__version__, "alg": kr.primary.alg.name, "size": size,
               "raw_seal_ns": rs, "raw_stored_seal_ns": rss, "seal_ns": fs,
               "raw_stored_ad_seal_ns": rsa, "check_ns": ck,
               "raw_open_ns": ro, "raw_stored_open_ns": ros, "open_ns": fo}, sys.stdout)


if __name__ == "__main__":
    main()

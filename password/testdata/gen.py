#!/usr/bin/python3
"""Regenerates vectors.json with real implementations (see README.md).

Needs Debian's argon2, apache2-utils, python3-passlib, python3-bcrypt and
python3-nacl:  /usr/bin/python3 password/testdata/gen.py > password/testdata/vectors.json
"""
import base64, binascii, hashlib, json, os, subprocess

import bcrypt
import nacl.pwhash
from passlib import hash as ph

PASSWORDS = ["correct horse battery staple", "パスワード123"]
out = []

def add(source, tool, pw, h, wrong=True):
    out.append({"source": source, "tool": tool, "password": pw, "hash": h})

for pw in PASSWORDS:
    b = pw.encode()
    # The reference implementation (phc-winner-argon2) CLI, all variants.
    for variant, flag in (("argon2id", "-id"), ("argon2i", "-i"), ("argon2d", "-d")):
        r = subprocess.run(["argon2", "saltsaltsalt1234", flag, "-t", "2", "-k", "16384", "-p", "1", "-l", "32", "-e"],
                           input=b, capture_output=True, check=True)
        add("reference argon2 CLI (Debian argon2 package), " + variant, "argon2", pw, r.stdout.decode().strip())
    # libsodium through PyNaCl.
    add("libsodium crypto_pwhash_str (PyNaCl), argon2id", "libsodium", pw,
        nacl.pwhash.argon2id.str(b, opslimit=2, memlimit=19456 * 1024).decode())
    add("libsodium crypto_pwhash_str (PyNaCl), argon2i", "libsodium", pw,
        nacl.pwhash.argon2i.str(b, opslimit=3, memlimit=16384 * 1024).decode())
    # bcrypt: htpasswd ($2y$), python-bcrypt ($2b$, $2a$).
    r = subprocess.run(["htpasswd", "-nbBC", "10", "u", pw], capture_output=True, check=True)
    add("htpasswd -B (apache2-utils), $2y$", "htpasswd", pw, r.stdout.decode().strip().split(":", 1)[1])
    add("python3-bcrypt, $2b$", "python-bcrypt", pw, bcrypt.hashpw(b, bcrypt.gensalt(10)).decode())
    add("python3-bcrypt, $2a$", "python-bcrypt", pw, bcrypt.hashpw(b, bcrypt.gensalt(10, prefix=b"2a")).decode())
    # passlib: scrypt PHC, pbkdf2 (passlib's format), Django formats.
    add("passlib scrypt (PHC)", "passlib", pw, ph.scrypt.using(rounds=14).hash(pw))
    add("passlib pbkdf2_sha256 (passlib format)", "passlib", pw, ph.pbkdf2_sha256.using(rounds=29000).hash(pw))
    add("passlib django_pbkdf2_sha256 (Django format)", "passlib", pw, ph.django_pbkdf2_sha256.using(rounds=60000).hash(pw))
    add("passlib django_pbkdf2_sha1 (Django format)", "passlib", pw, ph.django_pbkdf2_sha1.using(rounds=20000).hash(pw))
    add("passlib django_bcrypt_sha256 (Django format)", "passlib", pw, ph.django_bcrypt_sha256.using(rounds=10).hash(pw))
    # PHC pbkdf2 (as the Rust pbkdf2 crate writes it), built with hashlib.
    salt = os.urandom(16)
    dk = hashlib.pbkdf2_hmac("sha256", b, salt, 100000, 32)
    enc = lambda x: base64.b64encode(x).decode().rstrip("=")
    add("hashlib, PHC $pbkdf2-sha256$i=,l=", "hashlib", pw, "$pbkdf2-sha256$i=100000,l=32$%s$%s" % (enc(salt), enc(dk)))
    # Spring Security DelegatingPasswordEncoder forms, built as Spring's
    # encoders do (see README.md): {bcrypt} and {argon2} wrap the standard
    # strings; {pbkdf2} is hex(salt || PBKDF2(password, salt)); {scrypt} is
    # $hex(log2N<<16|r<<8|p)$b64(salt)$b64(key).
    add("Spring {bcrypt} (python3-bcrypt inside)", "spring-form", pw, "{bcrypt}" + bcrypt.hashpw(b, bcrypt.gensalt(10)).decode())
    r = subprocess.run(["argon2", "saltsaltsalt1234", "-id", "-t", "2", "-k", "16384", "-p", "1", "-l", "32", "-e"],
                       input=b, capture_output=True, check=True)
    add("Spring {argon2@SpringSecurity_v5_8} (argon2 CLI inside)", "spring-form", pw, "{argon2@SpringSecurity_v5_8}" + r.stdout.decode().strip())
    r = subprocess.run(["argon2", "saltsaltsalt1234", "-id", "-t", "3", "-k", "4096", "-p", "1", "-l", "32", "-e"],
                       input=b, capture_output=True, check=True)
    add("Spring {argon2} v5.2 defaults (argon2 CLI inside)", "spring-form", pw, "{argon2}" + r.stdout.decode().strip())
    s8 = os.urandom(8)
    add("Spring {pbkdf2} v5.5 defaults (hashlib: SHA-1, 185000, salt 8)", "spring-form", pw,
        "{pbkdf2}" + binascii.hexlify(s8 + hashlib.pbkdf2_hmac("sha1", b, s8, 185000, 32)).decode())
    s16 = os.urandom(16)
    add("Spring {pbkdf2@SpringSecurity_v5_8} (hashlib: SHA-256, 310000, salt 16)", "spring-form", pw,
        "{pbkdf2@SpringSecurity_v5_8}" + binascii.hexlify(s16 + hashlib.pbkdf2_hmac("sha256", b, s16, 310000, 32)).decode())
    s = os.urandom(16)
    k = hashlib.scrypt(b, salt=s, n=16384, r=8, p=1, dklen=32)
    add("Spring {scrypt} (hashlib: N=2^14, r=8, p=1)", "spring-form", pw,
        "{scrypt}$%x$%s$%s" % (14 << 16 | 8 << 8 | 1, base64.b64encode(s).decode(), base64.b64encode(k).decode()))

print(json.dumps(out, ensure_ascii=False, indent=1))

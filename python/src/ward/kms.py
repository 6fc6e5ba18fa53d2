"""Key services that wrap keyring and grant file keys: a local master key,
or an AWS KMS key through boto3 (any AWS-KMS-compatible endpoint)."""

from __future__ import annotations

import base64
import binascii
import os
from hashlib import sha256
from typing import Mapping, Protocol
from urllib.parse import parse_qs, urlparse

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ._wire import read_bounded, uvarint
from .errors import AuthenticationError, WardError

#: The environment variable holding a base64 master key, as for the Go CLI.
MASTER_KEY_ENV = "WARD_MASTER_KEY"


class KeyService(Protocol):
    """What wraps a file key: a provider name, a key ID, Encrypt and Decrypt."""

    provider: str
    key_id: str

    def encrypt(self, plaintext: bytes, context: Mapping[str, str]) -> bytes: ...

    def decrypt(self, ciphertext: bytes, context: Mapping[str, str]) -> bytes: ...


def canonical_context(context: Mapping[str, str]) -> bytes:
    """The canonical encryption context: a count, then each pair sorted by key."""
    out = bytearray(uvarint(len(context)))
    for k in sorted(context, key=lambda s: s.encode()):
        kb, vb = k.encode(), context[k].encode()
        out += uvarint(len(kb)) + kb + uvarint(len(vb)) + vb
    return bytes(out)


class MasterKey:
    """A local master key: 32 random bytes, base64, as ``ward keyring
    gen-master-key`` writes it. Its repr shows only its fingerprint."""

    provider = "local"

    def __init__(self, key: bytes):
        if len(key) != 32:
            raise WardError("a master key must be base64 of 32 random bytes")
        if len(set(key)) < 12:
            raise WardError("the master key is not random (too few distinct bytes)")
        self._aead = AESGCM(key)
        self.key_id = "mk-" + sha256(b"ward master key id v1\x00" + key).digest()[:8].hex()

    @classmethod
    def parse(cls, text: str) -> "MasterKey":
        """Parse base64 (standard or URL alphabet, padded or not)."""
        s = text.strip()
        for dec in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                raw = dec(s + "=" * (-len(s) % 4))
            except (binascii.Error, ValueError):
                continue
            if len(raw) == 32:
                return cls(raw)
        raise WardError("a master key must be base64 of 32 random bytes")

    @classmethod
    def load(cls, path: str | None = None, environ: Mapping[str, str] | None = None) -> "MasterKey":
        """Read a master key from a file, or else from ``WARD_MASTER_KEY``."""
        if path:
            try:
                text = read_bounded(path, "a master key file", 4096).decode("ascii")
            except UnicodeDecodeError as e:
                raise WardError("a master key file holds base64 of 32 random bytes") from e
            return cls.parse(text)
        env = os.environ if environ is None else environ
        v = env.get(MASTER_KEY_ENV, "")
        if not v:
            raise WardError(f"no master key: set {MASTER_KEY_ENV} or pass a master key file")
        return cls.parse(v)

    def __repr__(self) -> str:
        return f"MasterKey({self.key_id})"

    def encrypt(self, plaintext: bytes, context: Mapping[str, str]) -> bytes:
        """nonce(12) ‖ AES-256-GCM(plaintext, ad = canonical context) ‖ tag."""
        nonce = os.urandom(12)
        return nonce + self._aead.encrypt(nonce, plaintext, canonical_context(context))

    def decrypt(self, ciphertext: bytes, context: Mapping[str, str]) -> bytes:
        """Unwrap what encrypt returned under the same context."""
        return self.decrypt_raw(ciphertext, canonical_context(context))

    def decrypt_raw(self, ciphertext: bytes, ad: bytes) -> bytes:
        """Unwrap with raw associated data (keyring files of format v1)."""
        if len(ciphertext) < 28:
            raise AuthenticationError("a wrapped key too short")
        try:
            return self._aead.decrypt(ciphertext[:12], ciphertext[12:], ad)
        except InvalidTag:
            raise AuthenticationError("the master key does not unwrap this key") from None


class AwsKms:
    """An AWS KMS key through boto3; ``endpoint_url`` reaches a compatible
    server (local-kms in tests)."""

    provider = "awskms"

    def __init__(self, key_id: str, region: str | None = None, endpoint_url: str | None = None, client=None):
        if client is None:
            import boto3  # optional: pip install 'ward-crypto[aws]'

            kw = {}
            if endpoint_url and not os.environ.get("AWS_ACCESS_KEY_ID"):
                # a local KMS server accepts placeholder credentials, as the Go provider uses
                kw = {"aws_access_key_id": "ward-local", "aws_secret_access_key": "ward-local"}
            client = boto3.client("kms", region_name=region or "us-east-1", endpoint_url=endpoint_url, **kw)
        self.key_id = key_id
        self._client = client

    def __repr__(self) -> str:
        return f"AwsKms({self.key_id})"

    def encrypt(self, plaintext: bytes, context: Mapping[str, str]) -> bytes:
        """KMS Encrypt under the key, binding the encryption context."""
        out = self._client.encrypt(KeyId=self.key_id, Plaintext=plaintext, EncryptionContext=dict(context))
        return out["CiphertextBlob"]

    def decrypt(self, ciphertext: bytes, context: Mapping[str, str]) -> bytes:
        """KMS Decrypt, naming the key and the encryption context."""
        try:
            out = self._client.decrypt(KeyId=self.key_id, CiphertextBlob=ciphertext, EncryptionContext=dict(context))
        except Exception as e:  # botocore's ClientError and its kin
            code = getattr(e, "response", {}).get("Error", {}).get("Code", type(e).__name__)
            raise WardError(f"KMS Decrypt failed: {code}") from None
        return out["Plaintext"]


def from_url(url: str | None, master_key_file: str | None = None, environ: Mapping[str, str] | None = None) -> KeyService:
    """The key service a ``--kms`` URL names (``awskms://KEY?region=R&endpoint=E``,
    ``local://PATH``), or the master key (a file, else ``WARD_MASTER_KEY``)."""
    env = os.environ if environ is None else environ
    url = url or env.get("WARD_KMS", "")
    if not url:
        return MasterKey.load(master_key_file, env)
    u = urlparse(url)
    if u.scheme == "local":
        path = (u.netloc + u.path) or None
        return MasterKey.load(path, env)
    if u.scheme == "awskms":
        key = (u.netloc + u.path).removeprefix("/")
        if not key:
            raise WardError("awskms:// needs a key ID, ARN or alias/NAME")
        q = parse_qs(u.query)
        return AwsKms(key, region=q.get("region", [None])[0], endpoint_url=q.get("endpoint", [None])[0])
    raise WardError(f"unsupported key service scheme {u.scheme[:20]!r} (awskms://, local://)")

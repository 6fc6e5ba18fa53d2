"""Keyring and grant files sealed under an AWS KMS key: the Go CLI writes
them through the AWS SDK, this package opens them through boto3, both
against the real local-kms server (WARD_LOCAL_KMS_BIN, run where loopback
is the only interface, as .ci/run's namespace)."""

from __future__ import annotations

import os
import socket
import subprocess
import time

import pytest

from conftest import REPO, go_cli
from ward import Column, Grant, Keyring
from ward.kms import AwsKms, from_url

BIN = os.environ.get("WARD_LOCAL_KMS_BIN")


def loopback_only() -> bool:
    return [n for _, n in socket.if_nameindex()] == ["lo"]


@pytest.fixture(scope="module")
def kms_url(tmp_path_factory):
    if not BIN or not go_cli():
        if os.environ.get("WARD_CI"):
            pytest.fail("WARD_LOCAL_KMS_BIN and WARD_GO_CLI are set by .ci/run")
        pytest.skip("WARD_LOCAL_KMS_BIN or WARD_GO_CLI not set")
    if not loopback_only():
        pytest.skip("local-kms listens on every interface: run where only loopback exists (unshare -n, as .ci/run does)")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    env = dict(os.environ, PORT=str(port), KMS_SEED_PATH=str(REPO / "kms/awskms/testdata/local-kms-seed.yaml"),
               KMS_DATA_PATH=str(tmp_path_factory.mktemp("kmsdata")), KMS_REGION="us-east-1", KMS_ACCOUNT_ID="111122223333")
    proc = subprocess.Popen([BIN], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"awskms://alias/ward-test?region=us-east-1&endpoint=http://127.0.0.1:{port}"
    ks = from_url(url)
    deadline = time.time() + 20
    while True:
        try:
            ks.decrypt(ks.encrypt(b"ready", {"a": "b"}), {"a": "b"})
            break
        except Exception:
            if time.time() > deadline:
                proc.kill()
                pytest.fail("local-kms did not start")
            time.sleep(0.1)
    yield url
    proc.kill()
    proc.wait()


def go(*args: str, stdin: bytes = b"") -> bytes:
    r = subprocess.run([go_cli(), *args], input=stdin, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()[:400]
    return r.stdout


def test_keyring_and_grant_under_kms(kms_url, tmp_path):
    kr_path = tmp_path / "kr.json"
    go("keyring", "new", "--keyring", str(kr_path), "--kms", kms_url)
    ct = go("encrypt", "--keyring", str(kr_path), "--kms", kms_url, "--table", "notes", "--column", "title", "--row", "9", stdin=b"under KMS")
    ks = from_url(kms_url)
    assert isinstance(ks, AwsKms) and ks.key_id == "alias/ward-test"
    kr = Keyring.load(str(kr_path), ks)
    assert Column("notes", "title", kr).open(ct.decode().strip(), 9) == b"under KMS"

    import sqlite3

    db = tmp_path / "app.db"
    sqlite3.connect(db).close()
    grant = tmp_path / "g.grant"
    go("grant", "--keyring", str(kr_path), "--kms", kms_url, "--db", f"sqlite:{db}", "--scope", "notes.title", "--to", kms_url, "--out", str(grant))
    g = Grant.load(str(grant), ks)
    assert Column("notes", "title", g).open(ct.decode().strip(), 9) == b"under KMS"

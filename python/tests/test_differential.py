"""Go seals, Python opens; Python seals, Go opens: random values, rows,
bound values and algorithms through both command lines (WARD_GO_CLI is
the Go ``ward`` binary; .ci/run builds it)."""

from __future__ import annotations

import io
import os
import random
import subprocess
import sys

import pytest

from conftest import go_cli
from ward.cli import main

ALGS = ["AES-128-GCM", "AES-256-GCM", "XChaCha20-Poly1305"]
CASES = int(os.environ.get("WARD_DIFF_CASES", "10"))

GO = go_cli()
pytestmark = pytest.mark.skipif(GO is None and not os.environ.get("WARD_CI"), reason="WARD_GO_CLI (the Go ward binary) is not set")


def go(*args: str, stdin: bytes = b"", ok: bool = True) -> subprocess.CompletedProcess:
    if GO is None:
        pytest.fail("WARD_GO_CLI is not set in CI")
    r = subprocess.run([GO, *args], input=stdin, capture_output=True, timeout=60)
    if ok and r.returncode != 0:
        pytest.fail(f"ward {' '.join(args[:2])}: exit {r.returncode}: {r.stderr.decode()[:500]}")
    return r


def py(*args: str, stdin: bytes = b"") -> tuple[int, bytes]:
    out, err = io.BytesIO(), io.StringIO()
    code = main(list(args), stdin=io.BytesIO(stdin), stdout=out, stderr=err)
    return code, out.getvalue()


def random_case(rnd: random.Random) -> tuple[list[str], bytes]:
    """Field flags with a random row and 0–3 bound values, and a value."""
    flags = ["--table", rnd.choice(["notes", "messages", "t" * rnd.randint(1, 40)]),
             "--column", rnd.choice(["title", "body", "é"]),
             "--row", str(rnd.choice([rnd.randint(-10**12, 10**12), "".join(rnd.choices("abc-_01é", k=rnd.randint(1, 20)))]))]
    for i in range(rnd.randint(0, 3)):
        flags += ["--bind", f"c{i}=" + "".join(rnd.choices("xyz 0123=", k=rnd.randint(0, 12)))]
    value = rnd.randbytes(rnd.choice([0, 1, 64, 500, 4096]))
    return flags, value


@pytest.fixture(scope="module")
def keyrings(tmp_path_factory):
    d = tmp_path_factory.mktemp("diff")
    mk = d / "mk.b64"
    go("keyring", "gen-master-key", "--out", str(mk))
    out = {}
    for alg in ALGS:
        kr = d / f"{alg}.json"
        go("keyring", "new", "--keyring", str(kr), "--master-key-file", str(mk), "--alg", alg)
        out[alg] = ["--keyring", str(kr), "--master-key-file", str(mk)]
    return out


@pytest.mark.parametrize("alg", ALGS)
def test_go_seals_python_opens(keyrings, alg):
    rnd = random.Random(f"go-{alg}")
    for _ in range(CASES):
        flags, value = random_case(rnd)
        ct = go("encrypt", *keyrings[alg], *flags, "--binary", stdin=value).stdout
        assert ct[0] == 4
        assert py(*keyrings[alg], "decrypt", *flags, stdin=ct) == (0, value)
        wrong = flags[:5] + [flags[5] + "0"] + flags[6:]
        assert py(*keyrings[alg], "decrypt", *wrong, stdin=ct)[0] == 1
    ctx = rnd.randbytes(16).hex()
    ct = go("encrypt", *keyrings[alg], "--context", ctx, stdin=b"v3 value").stdout
    assert ct.startswith(b"w3:")
    assert py(*keyrings[alg], "decrypt", "--context", ctx, stdin=ct) == (0, b"v3 value")


@pytest.mark.parametrize("alg", ALGS)
def test_python_seals_go_opens(keyrings, alg):
    rnd = random.Random(f"py-{alg}")
    for _ in range(CASES):
        flags, value = random_case(rnd)
        code, ct = py(*keyrings[alg], "encrypt", *flags, "--binary", stdin=value)
        assert code == 0 and ct[0] == 4
        assert go("decrypt", *keyrings[alg], *flags, stdin=ct).stdout == value
        wrong = flags[:5] + [flags[5] + "0"] + flags[6:]
        assert go("decrypt", *keyrings[alg], *wrong, stdin=ct, ok=False).returncode == 1
    code, ct = py(*keyrings[alg], "encrypt", "--context", "c", stdin=b"v3 value")
    assert ct.startswith(b"w3:")
    assert go("decrypt", *keyrings[alg], "--context", "c", stdin=ct).stdout == b"v3 value"


def test_python_module_command_line(keyrings, tmp_path):
    """The real ``python3 -m ward`` process, flags after the command, the
    master key from the environment as the Go CLI reads it."""
    args = keyrings["AES-256-GCM"]
    mk = open(args[3]).read().strip()
    env = dict(os.environ, WARD_MASTER_KEY=mk, WARD_KEYRING=args[1])
    r = subprocess.run([sys.executable, "-m", "ward", "encrypt", "--table", "notes", "--column", "title", "--row", "1"],
                       input=b"from the environment", capture_output=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert go("decrypt", "--keyring", args[1], "--master-key-file", args[3], "--table", "notes", "--column", "title", "--row", "1", stdin=r.stdout).stdout == b"from the environment"
    r = subprocess.run([sys.executable, "-m", "ward", "decrypt", "--table", "notes", "--column", "body", "--row", "1"],
                       input=r.stdout, capture_output=True, env=env, timeout=60)
    assert r.returncode == 1 and b"another row, column" in r.stderr and mk.encode() not in r.stderr


def test_grant_from_go_cli(keyrings, tmp_path):
    """ward grant (Go) for notes.title: Python opens titles with it and
    nothing else."""
    args = keyrings["AES-256-GCM"]
    reader = tmp_path / "reader.b64"
    go("keyring", "gen-master-key", "--out", str(reader))
    db = tmp_path / "notes.db"
    import sqlite3

    sqlite3.connect(db).close()  # the application's database: ward creates none
    grant = tmp_path / "titles.grant"
    r = go("grant", *args, "--db", f"sqlite:{db}", "--scope", "notes.title", "--to-master-key-file", str(reader), "--out", str(grant), ok=False)
    if r.returncode != 0:
        pytest.fail(r.stderr.decode()[:400])
    title = go("encrypt", *args, "--table", "notes", "--column", "title", "--row", "5", stdin=b"a title").stdout
    body = go("encrypt", *args, "--table", "notes", "--column", "body", "--row", "5", stdin=b"a body").stdout
    g = ["--master-key-file", str(reader)]
    assert py(*g, "decrypt", "--grant", str(grant), "--table", "notes", "--column", "title", "--row", "5", stdin=title) == (0, b"a title")
    assert py(*g, "decrypt", "--grant", str(grant), "--table", "notes", "--column", "body", "--row", "5", stdin=body)[0] == 1
    assert py(*g, "decrypt", "--grant", str(grant), "--table", "notes", "--column", "title", "--row", "5", stdin=body)[0] == 1
    assert py(*args, "decrypt", "--table", "notes", "--column", "body", "--row", "5", stdin=body) == (0, b"a body")


def test_python_follows_a_rotation(tmp_path):
    """A keyring loaded from its file (Keyring.load) opens a value Go sealed
    under a key added after the load, and accepts the ledger Go wrote
    since: it reads the file again, at most once a second, as Go's
    Keyring does; a keyring loaded from bytes does not (Go: keycore
    TestReloadOnUnknownKey, ledger TestLedgerAnchoredSinceLoad)."""
    import sqlite3
    import time

    from ward import Keyring, MasterKey, UnknownKeyError
    from ward.ledger import verify

    mk, path, db = tmp_path / "mk", tmp_path / "kr.json", tmp_path / "app.db"
    go("keyring", "gen-master-key", "--out", str(mk))
    flags = ["--keyring", str(path), "--master-key-file", str(mk)]
    go("keyring", "new", *flags)
    ks = MasterKey.parse(mk.read_text().strip())
    kr, frozen = Keyring.load(str(path), ks), Keyring.loads(path.read_bytes(), ks)
    sqlite3.connect(str(db)).close()
    go("keyring", "add", "--promote", *flags, "--db", f"sqlite:{db}")
    ct = go("encrypt", *flags, "--context", "c", "--binary", stdin=b"after").stdout
    with pytest.raises(UnknownKeyError):
        frozen.open(ct, b"c")
    time.sleep(1.1)  # the load counts as a read: one a second
    assert kr.open(ct, b"c") == b"after"
    conn = sqlite3.connect(str(db))
    assert verify(conn, kr).database
    with pytest.raises(Exception, match="newer keyring file|lacks|does not anchor"):
        verify(conn, frozen)

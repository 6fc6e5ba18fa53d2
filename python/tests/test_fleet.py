"""The process registry: Go's row vectors, and a Python process in a fleet
the Go CLI runs — listed as a valid row, followed through a rotation it
holds back until it has read the new keyring file, registered again after
its row is deleted — and the joins refused while the database depends on a
form it lacks."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3
import subprocess
from datetime import datetime

import pytest

from conftest import go_cli, vectors
from ward import FleetMember, FormsMissingError, Keyring, MasterKey
from ward.fleet import INTEGRITY_V2, Row

GO = go_cli()


def ms(t: str) -> int:
    return int(round(datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp() * 1000))


def row(p: dict) -> Row:
    return Row(p["id"], p["host"], p["pid"], p["keyring"], p["generation"], tuple(p["keys"]), ms(p["started"]), ms(p["seen"]),
               p["exited"], tuple(p.get("forms") or ()))


def keyring(v: dict) -> Keyring:
    return Keyring.loads(json.dumps(v["keyring"]), MasterKey.parse(v["master_key"]))


def test_golden_row_macs():
    v1 = vectors("fleet/testdata/registry-v1.json")
    for r in v1["rows"]:
        assert row(r["process"]).mac_v1(keyring(v1)) == r["mac_hex"]
    v2 = vectors("fleet/testdata/registry-v2.json")
    for r in v2["rows"]:
        epoch = int(r["mac_hex"][3:11], 16)
        assert row(r["process"]).mac_v2(keyring(v2), epoch, v2["database"]) == r["mac_hex"]
        assert row(r["process"]).mac_v2(keyring(v2), epoch, "db-ffffffffffffffff") != r["mac_hex"]  # bound to its database


def go(*args: str, ok: bool = True) -> subprocess.CompletedProcess:
    if GO is None:
        if os.environ.get("WARD_CI"):
            pytest.fail("WARD_GO_CLI is not set in CI")
        pytest.skip("WARD_GO_CLI is not set")
    r = subprocess.run([GO, *args], capture_output=True, timeout=120, text=True)
    if ok and r.returncode != 0:
        pytest.fail(f"ward {' '.join(args[:2])}: exit {r.returncode}: {r.stderr[:800]}")
    return r


def listed(member_id: str, *keys: str) -> dict | None:
    for p in json.loads(go("fleet", "--json", *keys).stdout)[0]["processes"]:
        if p["id"] == member_id:
            return p
    return None


def test_a_rotation_waits_for_a_python_process_and_it_follows(tmp_path):
    mk, kr_file, db = tmp_path / "mk", tmp_path / "kr.json", tmp_path / "app.db"
    go("keyring", "gen-master-key", "--out", str(mk))
    go("keyring", "new", "--keyring", str(kr_file), "--master-key-file", str(mk))
    db.touch()
    keys = ("--keyring", str(kr_file), "--master-key-file", str(mk), "--db", f"sqlite:{db}")
    go("keyring", "add", "--promote", *keys[:4], "--db", f"sqlite:{db}")
    kr = Keyring.load(str(kr_file), MasterKey.load(str(mk)))
    errors: list[Exception] = []
    m = FleetMember.join(lambda: sqlite3.connect(db), kr, ["sealed:notes.body"], heartbeat=0.2, on_error=errors.append)
    try:
        p = listed(m.id, *keys)
        assert p is not None and not p.get("tampered") and not p["exited"], p
        assert p["pid"] == os.getpid() and kr.primary.id in p["keys"]
        assert "sealed:notes.body" in p["forms"] and "ciphertext:v4" in p["forms"]

        # A rotation waits for this process; its heartbeat reads the newer
        # keyring file (the ledger says there is one) and reports the new key.
        before = kr.primary.id
        go("keyring", "rotate", "--wait", "60s", *keys)
        assert kr.primary.id != before
        p = listed(m.id, *keys)
        assert kr.primary.id in p["keys"] and not p.get("tampered"), p

        # A database writer deletes the row: the next heartbeat registers again.
        with sqlite3.connect(db) as c:
            c.execute("DELETE FROM ward_fleet")
        m.beat()
        assert listed(m.id, *keys) is not None
    finally:
        m.close()
    assert listed(m.id, *keys)["exited"]
    assert errors == [] or all("ledger" in str(e).lower() or "keyring" in str(e).lower() for e in errors), errors


def vector_db(tmp_path, g: dict, kr: Keyring, forms: list[dict]):
    """Go's subject vector's ledger in SQLite with forms, MAC'd as the keyring's holder would."""
    body = json.loads(g["ledger"]["body"])
    body["counter"] += 1
    body["forms"] = forms
    text = json.dumps(body, separators=(",", ":"))
    mac = hmac.new(kr.state_mac_key(int(body["epoch"])), b"ward ledger state v1\x00" + text.encode(), hashlib.sha256).hexdigest()
    path = tmp_path / f"v{len(forms)}{forms[0].get('opened', 0) if forms else 0}.db"
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE ward_ledger (id INTEGER PRIMARY KEY, counter BIGINT NOT NULL, body TEXT NOT NULL, mac TEXT NOT NULL)")
        c.execute("INSERT INTO ward_ledger VALUES (1, ?, ?, ?)", (body["counter"], text, mac))
    return lambda: sqlite3.connect(path)


def test_a_join_is_refused_while_the_database_depends_on_a_form_it_lacks(tmp_path):
    g = vectors("field/subject/testdata/subject-v4.json")
    kr = keyring(g)
    for opened in (True, False):
        form = {"name": "sealed:notes.body", "release": "ward 2026.12", "since": 1796000000000}
        if opened:
            form["opened"] = 1796000002000
        connect = vector_db(tmp_path, g, kr, [form])
        with pytest.raises(FormsMissingError, match=f"sealed:notes.body \\({'open' if opened else 'waiting'}\\)"):
            FleetMember.join(connect, kr)
        assert connect().execute("SELECT count(*) FROM ward_fleet WHERE exited = 0").fetchone() == (0,)  # nothing left registered
        with FleetMember.join(connect, kr, ["sealed:notes.body"]) as m:
            assert "sealed:notes.body" in m.forms
            c = connect()
            c.execute("UPDATE ward_fleet SET exited = 1 WHERE id = ?", (m.id,))  # behind its back: the new row is a duplicate, ignored
            c.commit()
            m.beat()
    with pytest.raises(ValueError):
        FleetMember.join(connect, kr, ["no-kind"])
    with pytest.raises(ValueError):
        FleetMember.join(connect, kr, ["sealed:a,b"])
    with pytest.raises(ValueError):
        FleetMember.join(connect, kr, heartbeat=0)
    with pytest.raises(ValueError):
        FleetMember.join(connect, kr, table="fleet; DROP TABLE x")


def test_rows_are_v2_once_the_fleet_opened_integrity_v2(tmp_path):
    g = vectors("field/subject/testdata/subject-v4.json")
    kr = keyring(g)
    connect = vector_db(tmp_path, g, kr, [{"name": INTEGRITY_V2, "release": "ward 2026.12", "since": 1796000000000, "opened": 1796000002000}])
    with FleetMember.join(connect, kr) as m:
        mac = connect().execute("SELECT mac FROM ward_fleet WHERE id = ?", (m.id,)).fetchone()[0]
        assert mac.startswith(f"v2:{kr.primary.id:08x}:")
        if GO is not None:
            kr_file, mk = tmp_path / "kr.json", tmp_path / "mk"
            kr_file.write_text(json.dumps(g["keyring"]))
            mk.write_text(g["master_key"])
            db = connect().execute("PRAGMA database_list").fetchone()[2]
            p = listed(m.id, "--keyring", str(kr_file), "--master-key-file", str(mk), "--db", f"sqlite:{db}")
            assert p is not None and not p.get("tampered"), p


def server_databases():
    return [n for n in ("WARD_TEST_POSTGRES_URL", "WARD_TEST_MYSQL_URL") if os.environ.get(n)]


@pytest.fixture(params=server_databases() or [pytest.param(None, marks=pytest.mark.skip(reason="no WARD_TEST_POSTGRES_URL or WARD_TEST_MYSQL_URL (.ci/run sets both)"))])
def server(request):
    """A database of its own on CI's PostgreSQL or MariaDB: (Go's --db URL, a DB-API connection factory)."""
    import urllib.parse
    import uuid

    url = os.environ[request.param]
    name = "ward_fleet_" + uuid.uuid4().hex[:8]
    u = urllib.parse.urlsplit(url)
    q = urllib.parse.parse_qs(u.query)
    if url.startswith("postgres"):
        import psycopg

        with psycopg.connect(url, autocommit=True) as c:
            c.execute(f"CREATE DATABASE {name}")
        db_url = urllib.parse.urlunsplit((u.scheme, u.netloc, "/" + name, u.query, ""))
        yield db_url, lambda: psycopg.connect(db_url)
        with psycopg.connect(url, autocommit=True) as c:
            c.execute(f"DROP DATABASE {name} WITH (FORCE)")
    else:
        import pymysql

        def connect(db=name):
            return pymysql.connect(unix_socket=q["socket"][0], user=u.username, password=os.environ.get("MYSQL_PWD", ""), database=db)

        with connect(None) as c:
            c.cursor().execute(f"CREATE DATABASE {name}")
        yield urllib.parse.urlunsplit((u.scheme, u.netloc, "/" + name, u.query, "")), connect
        with connect(None) as c:
            c.cursor().execute(f"DROP DATABASE {name}")


def test_join_beat_and_leave_on_a_server(server, tmp_path):
    """PostgreSQL through psycopg, MariaDB through PyMySQL: the table made
    in the dialect, a v2 row the Go CLI verifies, a heartbeat, a leave."""
    db_url, connect = server
    g = vectors("field/subject/testdata/subject-v4.json")
    kr = keyring(g)
    body = json.loads(g["ledger"]["body"])
    body["counter"] += 1
    body["forms"] = [{"name": INTEGRITY_V2, "release": "ward 2026.12", "since": 1796000000000, "opened": 1796000002000}]
    text = json.dumps(body, separators=(",", ":"))
    mac = hmac.new(kr.state_mac_key(int(body["epoch"])), b"ward ledger state v1\x00" + text.encode(), hashlib.sha256).hexdigest()
    c = connect()
    cur = c.cursor()
    cur.execute("CREATE TABLE ward_ledger (id INTEGER PRIMARY KEY, counter BIGINT NOT NULL, body TEXT NOT NULL, mac TEXT NOT NULL)")
    cur.execute("INSERT INTO ward_ledger VALUES (1, %s, %s, %s)", (body["counter"], text, mac))
    c.commit()
    c.close()
    m = FleetMember.join(connect, kr, ["password:argon2id"], heartbeat=60)
    try:
        m.beat()
        if GO is not None:
            kr_file, mk = tmp_path / "kr.json", tmp_path / "mk"
            kr_file.write_text(json.dumps(g["keyring"]))
            mk.write_text(g["master_key"])
            p = listed(m.id, "--keyring", str(kr_file), "--master-key-file", str(mk), "--db", db_url)
            assert p is not None and not p.get("tampered") and "password:argon2id" in p["forms"], p
    finally:
        m.close()
    c = connect()
    cur = c.cursor()
    cur.execute("SELECT exited, mac FROM ward_fleet")
    exited, tag = cur.fetchone()
    c.close()
    assert exited == 1 and tag.startswith("v2:")

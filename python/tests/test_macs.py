"""Row MACs and the process registry's MACs, rebuilt from FORMAT.md."""

from __future__ import annotations

import json
import struct
from datetime import datetime

from conftest import vectors
from ward import Keyring, MasterKey
from ward._wire import lp, uvarint
from ward.aead import hmac_sha256
from ward.field import RowMAC


def keyring_of(v: dict) -> Keyring:
    return Keyring.loads(json.dumps(v["keyring"]), MasterKey.parse(v["master_key"]))


def test_row_mac_vectors():
    v = vectors("field/testdata/row-mac-v1.json")
    kr = keyring_of(v)
    for vec in v["vectors"]:
        m = RowMAC(kr, vec["table"], *vec["columns"])
        assert m.sum(*vec["values"]).hex() == vec["mac_hex"]
        assert m.verify(bytes.fromhex(vec["mac_hex"]), *vec["values"])
        assert not m.verify(bytes.fromhex(vec["mac_hex"]), *vec["values"][:-1], "changed")


def test_row_mac_v2_vectors():
    v = vectors("field/testdata/row-mac-v2.json")
    kr = keyring_of(v)
    assert len({vec["epoch"] for vec in v["vectors"]}) == 2
    for vec in v["vectors"]:
        tag = bytes.fromhex(vec["mac_hex"])
        assert tag[1:5].hex() == vec["epoch"]
        m = RowMAC(kr, vec["table"], *vec["columns"], database=v["database"])
        assert m.verify(tag, *vec["values"])
        assert not m.verify(tag, *vec["values"][:-1], "changed")
        assert not RowMAC(kr, vec["table"], *vec["columns"], database=v["database"] + "0").verify(tag, *vec["values"])
        assert not RowMAC(kr, vec["table"], *vec["columns"]).verify(tag, *vec["values"]), "v1-only accepted v2"
        if vec["epoch"] == f"{kr.primary.id:08x}":
            assert m.sum(*vec["values"]) == tag
        v1 = RowMAC(kr, vec["table"], *vec["columns"]).sum(*vec["values"])
        assert m.verify(v1, *vec["values"])
        refusing = RowMAC(kr, vec["table"], *vec["columns"], database=v["database"], refuse_v1=True)
        assert not refusing.verify(v1, *vec["values"])
        assert refusing.verify(tag, *vec["values"])


def test_tombstone_v2_vectors():
    v = vectors("field/subject/testdata/tombstone-v2.json")
    kr = keyring_of(v)
    assert len({tb["epoch"] for tb in v["tombstones"]}) == 2
    for tb in v["tombstones"]:
        key = kr.integrity_key(tb["epoch"], b"subject tombstone")
        msg = b"ward subject tombstone v2\x00" + lp(v["database"]) + lp(v["namespace"]) + lp(tb["subject"])
        msg += struct.pack(">q", tb["forgotten_at"])
        assert "v2:" + hmac_sha256(key, msg).hex() == tb["mac"], tb["subject"]


def millis(s: str) -> int:
    t = datetime.fromisoformat(s.replace("Z", "+00:00"))
    return round(t.timestamp() * 1000)


def test_registry_mac_vectors():
    v = vectors("fleet/testdata/registry-v1.json")
    key = keyring_of(v).derive(b"fleet registry v1", 32)
    for row in v["rows"]:
        p = row["process"]
        keys = ",".join(f"{k:08x}" for k in p["keys"])
        b = b"".join(lp(s) for s in (p["id"], p["host"], p["keyring"], keys))
        b += struct.pack(">qqqq", p["pid"], p["generation"], millis(p["started"]), millis(p["seen"]))
        b += b"\x01" if p["exited"] else b"\x00"
        if p.get("forms"):
            b += lp(",".join(p["forms"]))
        assert hmac_sha256(key, b).hex() == row["mac_hex"], p["id"]
        assert uvarint(0) == b"\x00"

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

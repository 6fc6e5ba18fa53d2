"""Every vector file Go writes opens here, from FORMAT.md alone."""

from __future__ import annotations

import pytest

from conftest import vectors
from ward import Column, Keyring, MasterKey, WrongContextError
from ward.ciphertext import parse_header
from ward._wire import decode_text, encode_text
from ward.field import context_v3, context_v4, field_scope


def keyring_of(v: dict) -> Keyring:
    import json

    return Keyring.loads(json.dumps(v["keyring"]), MasterKey.parse(v["master_key"]))


@pytest.mark.parametrize("name", ["v1-vectors", "v2-vectors", "v3-vectors"])
def test_keyring_vectors(name):
    v = vectors(f"keyring/testdata/{name}.json")
    kr = keyring_of(v)
    for vec in v["vectors"]:
        ct = bytes.fromhex(vec["ciphertext_hex"])
        assert kr.open(ct, vec["context"].encode()) == vec["plaintext"].encode()
        assert decode_text(vec["text"]) == ct
        assert encode_text(ct) == vec["text"]
        if vec["context"]:
            with pytest.raises(WrongContextError):
                kr.open(ct, vec["context"].encode() + b"x")


def test_text_forms():
    """The text forms Go decodes and refuses, the same here: nothing trimmed or skipped."""
    from ward.errors import MalformedError

    v = vectors("keyring/testdata/text-forms.json")
    for vec in v["valid"]:
        assert decode_text(vec["text"]).hex() == vec["hex"]
    for vec in v["malformed"]:
        with pytest.raises(MalformedError):
            decode_text(vec["text"])
    assert v["valid"] and v["malformed"]


def test_v4_vectors():
    v = vectors("keyring/testdata/v4-vectors.json")
    kr = keyring_of(v)
    for vec in v["vectors"]:
        ct = bytes.fromhex(vec["ciphertext_hex"])
        scope, ctx = bytes.fromhex(vec["scope_hex"]), bytes.fromhex(vec["context_hex"])
        h = parse_header(ct)
        key = kr.key(h.key_id)
        assert kr.scoped(key, scope).hex() == vec["scoped_key_hex"]
        assert kr.open(ct, ctx, scope) == vec["plaintext"].encode()
        assert encode_text(ct) == vec["text"]


@pytest.mark.parametrize("version", [3, 4])
def test_field_contexts(version):
    v = vectors(f"field/testdata/context-v{version}.json")
    kr = keyring_of(v)
    for vec in v["vectors"]:
        bind = vec.get("bind") or []
        values = [typed(x) for x in vec.get("values") or []]
        col = Column(vec["table"], vec["column"], kr, bind=bind)
        if version == 4:
            assert context_v4(bind, vec["row"], values).hex() == vec["context_hex"]
            assert field_scope(vec["table"], vec["column"]).hex() == vec["scope_hex"]
        else:
            assert context_v3(vec["table"], vec["column"], bind, vec["row"], values).hex() == vec["context_hex"]
        ct = bytes.fromhex(vec["ciphertext_hex"])
        assert col.open(ct, vec["row"], *values) == vec["plaintext"].encode()
        with pytest.raises(WrongContextError):
            col.open(ct, vec["row"] + "0", *values)


def typed(x: dict):
    """A vector's bound value as the Python type a driver would return."""
    import datetime
    import uuid

    t, s = x["type"], x.get("value")
    if t == "null":
        return None
    if t in ("int64", "int", "uint64", "int32"):
        return int(s)
    if t == "bool":
        return s == "true"
    if t == "bytes":
        return bytes.fromhex(s)
    if t == "time":
        # Python's datetime holds microseconds: the digits after them are
        # cut, which is the floor FORMAT.md asks for (after 1970)
        head, frac_tz = s.split(".")
        frac = frac_tz[:9].rstrip("+-Z")
        tz = frac_tz[len(frac):]
        return datetime.datetime.fromisoformat(f"{head}.{frac[:6]}{tz.replace('Z', '+00:00')}")
    if t == "uuid":
        return uuid.UUID(s)
    return s

"""Files ward reads that someone else may have put in place: regular files only, bounded."""

from __future__ import annotations

import copy
import json
import os

import pytest

from conftest import vectors
from ward import Keyring, MasterKey
from ward.errors import CorruptFileError, WardError
from ward.grant import Grant


def test_not_regular_files_refused_at_once(tmp_path):
    """A FIFO (a plain open would wait for ever), /dev/zero and a folder are refused, never read."""
    fifo = tmp_path / "kr.json"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    mk = MasterKey(os.urandom(32))
    for p in (fifo, zero, tmp_path):
        with pytest.raises(CorruptFileError, match="not a regular file"):
            Keyring.load(str(p), mk)
        with pytest.raises(CorruptFileError, match="not a regular file"):
            Grant.load(str(p), mk)
        with pytest.raises(WardError, match="not a regular file"):
            MasterKey.load(str(p))


def test_oversized_master_key_file_refused(tmp_path):
    big = tmp_path / "master.key"
    big.write_text("A" * 5000)
    with pytest.raises(CorruptFileError, match="larger than 4096 bytes"):
        MasterKey.load(str(big))


def _mutations(doc, path=()):
    """Every field of a JSON document replaced by a value of each JSON type."""
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for k, v in items:
        for repl in ([], {}, None, 5, -1, 2**70, "x", "AAAA", True):
            d = copy.deepcopy(doc)
            d[k] = repl
            yield path + (k,), d
        for p, sub in _mutations(v, path + (k,)):
            d = copy.deepcopy(doc)
            d[k] = sub
            yield p, d


@pytest.mark.parametrize("name", ["keyring", "grant"])
def test_malformed_files_raise_ward_errors(name):
    """A keyring or grant file with any field of the wrong type or value is
    a ward error (never AttributeError, KeyError or TypeError)."""
    if name == "keyring":
        v = vectors("keyring/testdata/v4-vectors.json")
        doc, load = v["keyring"], lambda s: Keyring.loads(s, MasterKey.parse(v["master_key"]))
    else:
        v = vectors("keyring/testdata/grant-v1.json")
        doc, load = v["grant"], lambda s: Grant.loads(s, MasterKey.parse(v["reader_master_key"]))
    load(json.dumps(doc))  # the vector itself opens
    tried = 0
    for path, d in _mutations(doc):
        tried += 1
        try:
            load(json.dumps(d))
        except WardError:
            pass
        except Exception as e:  # noqa: BLE001 - the assertion names it
            pytest.fail(f"{name} with {'.'.join(map(str, path))} mutated: {type(e).__name__}: {e}")
    assert tried > 20

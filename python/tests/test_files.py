"""Files ward reads that someone else may have put in place: regular files only, bounded."""

from __future__ import annotations

import os

import pytest

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

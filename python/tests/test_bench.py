"""The package's benchmark (python3 -m ward.bench): its rounds, its ops and
every flag's effect, on tiny rounds (timings are measured, never asserted)."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

import ward.bench as bench
from conftest import vectors

V = vectors("keyring/testdata/v4-vectors.json")


@pytest.fixture
def files(tmp_path):
    """The vectors' keyring and master key as files: a keyring whose
    primary is XChaCha20-Poly1305, holding AES-128-GCM and AES-256-GCM keys."""
    kr, mk = tmp_path / "kr.json", tmp_path / "mk"
    kr.write_text(json.dumps(V["keyring"]))
    mk.write_text(V["master_key"])
    return ["--keyring", str(kr), "--master-key-file", str(mk)]


def key_id(alg: str) -> str:
    from ward import Keyring, MasterKey

    kr = Keyring.loads(json.dumps(V["keyring"]), MasterKey.parse(V["master_key"]))
    return next(f"{k.id:08x}" for k in kr.keys.values() if k.alg.name == alg)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = bench.main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_rounds_alternate_and_count_values():
    """Each op runs n values per round after one warm-up of n // 10 (at
    least 1), in the order A B, then B A."""
    calls: list[tuple[str, int]] = []
    ops = [lambda k, name=name: calls.append((name, k)) for name in "AB"]
    got = bench.rounds_of(ops, 3, 20)
    assert calls == [("A", 2), ("B", 2), ("A", 20), ("B", 20), ("B", 20), ("A", 20), ("A", 20), ("B", 20)]
    assert [len(g) for g in got] == [3, 3] and all(x >= 0 for g in got for x in g)


def test_json_one_size(files):
    """--json: one size's per-round nanoseconds of every op, --rounds of
    them, under the key --key-id names."""
    code, out, err = run(*files, "--key-id", key_id("AES-256-GCM"), "--size", "100", "--rounds", "3", "--values", "5", "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["alg"] == "AES-256-GCM" and got["size"] == 100
    ops = {"raw_seal_ns", "raw_stored_seal_ns", "seal_ns", "raw_open_ns", "raw_stored_open_ns", "open_ns", "raw_stored_ad_seal_ns", "check_ns"}
    assert ops <= set(got)
    assert all(len(got[k]) == 3 and all(x > 0 for x in got[k]) for k in ops)
    code, out, _ = run(*files, "--key-id", key_id("AES-128-GCM"), "--size", "1", "--rounds", "2", "--values", "2", "--json")
    assert code == 0 and json.loads(out)["alg"] == "AES-128-GCM" and len(json.loads(out)["seal_ns"]) == 2


def test_values_per_round(files, monkeypatch):
    """--values is the number of values each op runs per round."""
    seen = []
    real = bench.rounds_of

    def spy(ops, rounds, n):
        seen.append((len(ops), rounds, n))
        return real(ops, rounds, n)

    monkeypatch.setattr(bench, "rounds_of", spy)
    assert run(*files, "--key-id", key_id("AES-256-GCM"), "--size", "8", "--rounds", "2", "--values", "7", "--json")[0] == 0
    assert seen == [(8, 2, 7)]


def test_table_per_size(files):
    """Without --json: a table with a seal and an open row per --size."""
    code, out, err = run(*files, "--key-id", key_id("AES-256-GCM"), "--size", "16", "--size", "600", "--rounds", "2", "--values", "3")
    assert code == 0, err
    rows = [line for line in out.splitlines() if line.startswith("| seal") or line.startswith("| open")]
    assert [r.split("|")[1:3] for r in rows] == [[" seal ", " 16 B "], [" open ", " 16 B "], [" seal ", " 600 B "], [" open ", " 600 B "]]
    assert "AES-256-GCM, 2 rounds of 3 values" in out


def test_refusals(files):
    """The primary (XChaCha20-Poly1305) is no AES-GCM key to compare with
    raw AES-GCM; bad flags are usage errors (exit 2) that say why."""
    code, _, err = run(*files, "--rounds", "1", "--values", "1")
    assert code == 2 and "XChaCha20-Poly1305" in err
    for argv, says in ((["--json"], "one size"), (["--rounds", "0"], "at least 1"), (["--size", "-1"], "--size"),
                       (["--key-id", "xyz"], "hex key ID"), (["--key-id", "0"], "not in this keyring")):
        code, _, err = run(*files, "--key-id", key_id("AES-256-GCM"), *argv)
        assert code == 2 and says in err, (argv, err)
    code, _, err = run("--master-key-file", files[3], "--keyring", "")
    assert code == 2 and "no keyring" in err


def test_module_runs(files):
    """The real ``python3 -m ward.bench`` process, as ward-lab runs it."""
    r = subprocess.run([sys.executable, "-m", "ward.bench", *files, "--key-id", key_id("AES-128-GCM"), "--size", "64",
                        "--rounds", "1", "--values", "2", "--json"], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["alg"] == "AES-128-GCM"


def test_kms_url(files):
    """--kms names the key service instead of --master-key-file (here
    local://, the master key's file)."""
    code, out, err = run("--keyring", files[1], "--kms", "local://" + files[3], "--key-id", key_id("AES-256-GCM"),
                         "--size", "8", "--rounds", "1", "--values", "1", "--json")
    assert code == 0, err
    assert json.loads(out)["alg"] == "AES-256-GCM"
    code, _, err = run("--keyring", files[1], "--kms", "local://" + files[3] + ".missing", "--rounds", "1")
    assert code == 2


def test_spread_nearest_rank():
    """The table's median and p05–p95 take the nearest rank both ways."""
    xs = [float(x) for x in range(1, 13)]  # 1..12: ranks 0.05 * 11 = 0.55 and 0.95 * 11 = 10.45
    assert bench._spread(xs[::-1]) == (6.5, 2.0, 11.0)

"""Shared fixtures: the repository's vector files, written by Go."""

from __future__ import annotations

import json
import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def vectors(rel: str) -> dict:
    """A vector file of the repository, by its path from the root."""
    return json.loads((REPO / rel).read_text())


@pytest.fixture
def repo() -> pathlib.Path:
    return REPO


def go_cli() -> str | None:
    """The Go ward CLI (WARD_GO_CLI), which the differential tests run."""
    return os.environ.get("WARD_GO_CLI") or None

"""An analytics job with a grant: it reads note titles from PostgreSQL
through psycopg and nothing else — the grant (``ward grant --scope
notes.title``) opens titles, and every other column's values fail.

    python3 examples/analytics_psycopg.py GRANT READER_MASTER_KEY_FILE POSTGRES_URL

Titles must be ciphertext v4 (``ward reseal`` moves older ones); values a
grant cannot open are counted, never guessed.
"""

from __future__ import annotations

import collections
import sys

import psycopg

from ward import Column, Grant, MasterKey, WardError


def main(grant_path: str, reader_key_path: str, url: str) -> dict[str, int]:
    grant = Grant.load(grant_path, MasterKey.load(reader_key_path))
    titles = Column("notes", "title", grant)
    words: collections.Counter[str] = collections.Counter()
    refused = 0
    with psycopg.connect(url) as conn:
        for id_, stored in conn.execute("SELECT id, title FROM notes ORDER BY id"):
            try:
                words.update(titles.open_text(stored, id_).lower().split())
            except WardError:
                refused += 1
    out = dict(words.most_common(5))
    out["(refused)"] = refused
    return out


if __name__ == "__main__":
    print(main(*sys.argv[1:4]))

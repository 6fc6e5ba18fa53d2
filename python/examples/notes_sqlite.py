"""ward with sqlite3: encrypted note titles bound to their row and owner,
found by a blind index without decryption.

    python3 examples/notes_sqlite.py KEYRING MASTER_KEY_FILE DB

The keyring comes from the Go CLI (``ward keyring new``); the database is
created here. Titles are sealed as ciphertext v4 under the keyring's
primary key: this example has no fleet, so nothing older must read them.
"""

from __future__ import annotations

import sqlite3
import sys

from ward import BlindIndex, Column, Keyring, MasterKey


def main(keyring_path: str, master_key_path: str, db_path: str) -> list[str]:
    kr = Keyring.load(keyring_path, MasterKey.load(master_key_path))
    titles = Column("notes", "title", kr, bind=["owner"])
    by_title = BlindIndex(kr, "notes", "title", normalize="fold")
    db = sqlite3.connect(db_path)
    db.execute("CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, owner TEXT NOT NULL, title TEXT NOT NULL, title_idx BLOB NOT NULL)")
    for id_, owner, title in [(1, "alice", "Dentist on Monday"), (2, "alice", "Groceries"), (3, "bob", "dentist on monday")]:
        db.execute("INSERT OR REPLACE INTO notes VALUES (?, ?, ?, ?)", (id_, owner, titles.seal_text(title, id_, owner), by_title.compute(title)))
    db.commit()
    found = []
    for id_, owner, stored in db.execute("SELECT id, owner, title FROM notes WHERE title_idx = ? ORDER BY id", (by_title.compute("DENTIST ON MONDAY "),)):
        found.append(f"{owner}: {titles.open_text(stored, id_, owner)}")
    db.close()
    return found


if __name__ == "__main__":
    for line in main(*sys.argv[1:4]):
        print(line)

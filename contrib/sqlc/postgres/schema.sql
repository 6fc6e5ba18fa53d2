-- notes holds one encrypted column (body, ward's text form) bound to the
-- row's id and its owner, and a blind index of the e-mail address.
CREATE TABLE notes (
  id          TEXT PRIMARY KEY,
  user_id     BIGINT NOT NULL,
  body        TEXT NOT NULL,
  email       TEXT,
  email_index BYTEA
);

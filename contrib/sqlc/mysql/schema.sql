-- notes holds one encrypted column (body, ward's text form) bound to the
-- row's id and its owner, and a blind index of the e-mail address. MySQL
-- indexes no TEXT or BLOB without a prefix: the key and the index are
-- VARCHAR and VARBINARY.
CREATE TABLE notes (
  id          VARCHAR(191) PRIMARY KEY,
  user_id     BIGINT NOT NULL,
  body        LONGTEXT NOT NULL,
  email       TEXT,
  email_index VARBINARY(32)
);

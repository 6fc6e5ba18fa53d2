package field

import (
	"fmt"
	"hash/crc32"
	"strings"
)

// minSealed is the length of the shortest v3 or v4 ciphertext: the 11-byte
// header, a 12-byte nonce and the 16-byte tag (an empty plaintext).
const minSealed = 11 + 12 + 16

// SealedConstraint returns the statements that make the database itself
// refuse a value in c's column that is not a ward ciphertext of a version
// it writes (binary: version byte 0x03 or 0x04 and at least the shortest
// ciphertext's length; text form: "w3:" or "w4:"), whatever writes it: an ORM path
// that skips the application's hooks, psql, another service. NULL stays
// allowed. On PostgreSQL it is a CHECK constraint added NOT VALID (rows
// written before, such as plaintext a mixed-mode migration has not moved
// yet, are not checked; once a census finds none, VALIDATE CONSTRAINT
// checks them too); on SQLite, which cannot add a constraint to a table,
// and on MySQL, whose ADD CONSTRAINT … CHECK would check every old row,
// two triggers (insert, and update of the column's value: a row that still
// holds plaintext can have its other columns updated, so they can guard
// a column during a mixed-mode migration). PostgreSQL checks a CHECK on
// every update of a row, so there an update of another column of a row
// still holding plaintext is refused too: add it there once no
// plaintext is left, or where the application updates no such row. The statements are idempotent except
// PostgreSQL's ADD CONSTRAINT, which fails if the constraint exists: see
// ConstraintName. It is a guard against mistakes, not against a database
// writer, who can drop it.
func (c *Column) SealedConstraint(d Dialect) ([]string, error) {
	t, err := d.Quote(c.Table())
	if err != nil {
		return nil, err
	}
	col, err := d.Quote(c.Name())
	if err != nil {
		return nil, err
	}
	name := c.ConstraintName()
	text := c.Encoding() == Text
	switch d {
	case Postgres:
		pred := fmt.Sprintf(`get_byte(%s, 0) IN (3, 4) AND octet_length(%s) >= %d`, col, col, minSealed)
		if text {
			pred = fmt.Sprintf(`(%s LIKE 'w3:%%' OR %s LIKE 'w4:%%')`, col, col)
		}
		return []string{fmt.Sprintf(`ALTER TABLE %s ADD CONSTRAINT %s CHECK (%s IS NULL OR (%s)) NOT VALID`, t, name, col, pred)}, nil
	case SQLite:
		return c.sqliteTriggers(name, t, col, text), nil
	case MySQL:
		return c.mysqlTriggers(name, t, col, text), nil
	}
	return nil, fmt.Errorf("field: no sealed-value constraint for dialect %v", d)
}

// refusal is the message of a trigger that refuses a value.
func (c *Column) refusal() string {
	return fmt.Sprintf("ward: %s.%s holds only ward ciphertexts (a plaintext or foreign value was refused)", c.Table(), c.Name())
}

func (c *Column) sqliteTriggers(name, t, col string, text bool) []string {
	pred := fmt.Sprintf(`typeof(NEW.%s) = 'blob' AND substr(NEW.%s, 1, 1) IN (x'03', x'04') AND length(NEW.%s) >= %d`, col, col, col, minSealed)
	if text {
		pred = fmt.Sprintf(`typeof(NEW.%s) = 'text' AND substr(NEW.%s, 1, 3) IN ('w3:', 'w4:')`, col, col)
	}
	var out []string
	for _, ev := range []string{"INSERT", "UPDATE OF " + col} {
		trigger := name + "_" + strings.ToLower(strings.Fields(ev)[0])
		out = append(out, fmt.Sprintf(`CREATE TRIGGER IF NOT EXISTS %s BEFORE %s ON %s WHEN NEW.%s IS NOT NULL AND NOT (%s)
BEGIN SELECT RAISE(ABORT, '%s'); END`, trigger, ev, t, col, pred, c.refusal()))
	}
	return out
}

// mysqlTriggers: a binary column's first byte and length; a text column's
// prefix compared as bytes (LIKE BINARY), whatever its collation.
func (c *Column) mysqlTriggers(name, t, col string, text bool) []string {
	pred := fmt.Sprintf(`SUBSTRING(NEW.%s, 1, 1) IN (x'03', x'04') AND OCTET_LENGTH(NEW.%s) >= %d`, col, col, minSealed)
	if text {
		pred = fmt.Sprintf(`(NEW.%s LIKE BINARY 'w3:%%' OR NEW.%s LIKE BINARY 'w4:%%')`, col, col)
	}
	var out []string
	for _, ev := range []string{"INSERT", "UPDATE"} {
		trigger := name + "_" + strings.ToLower(ev)
		// An update checks the column only when it changes it (compared as
		// bytes), as SQLite's UPDATE OF does: a row still holding
		// plaintext during a migration can have its other columns updated.
		changed := ""
		if ev == "UPDATE" {
			changed = fmt.Sprintf(" AND NOT (BINARY NEW.%s <=> BINARY OLD.%s)", col, col)
		}
		out = append(out, fmt.Sprintf(`CREATE TRIGGER IF NOT EXISTS %s BEFORE %s ON %s FOR EACH ROW
IF NEW.%s IS NOT NULL%s AND NOT (%s) THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = '%s'; END IF`,
			trigger, ev, t, col, changed, pred, c.refusal()))
	}
	return out
}

// ConstraintName names the constraint (PostgreSQL) or the prefix of the
// triggers (SQLite) SealedConstraint makes: "ward_sealed_" and a hash of
// table and column, within PostgreSQL's 63-byte identifiers.
func (c *Column) ConstraintName() string {
	return fmt.Sprintf("ward_sealed_%08x", crc32.ChecksumIEEE([]byte(c.Table()+"\x00"+c.Name())))
}

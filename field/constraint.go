package field

import (
	"fmt"
	"hash/crc32"
	"strings"
)

// minSealed is the length of the shortest v3 ciphertext: the 11-byte
// header, a 12-byte nonce and the 16-byte tag (an empty plaintext).
const minSealed = 11 + 12 + 16

// SealedConstraint returns the statements that make the database itself
// refuse a value in c's column that is not a ward ciphertext of the
// current version (binary: version byte 0x03 and at least the shortest
// ciphertext's length; text form: "w3:"), whatever writes it: an ORM path
// that skips the application's hooks, psql, another service. NULL stays
// allowed. On PostgreSQL it is a CHECK constraint added NOT VALID (rows
// written before, such as plaintext a mixed-mode migration has not moved
// yet, are not checked; once a census finds none, VALIDATE CONSTRAINT
// checks them too); on SQLite, which cannot add a constraint to a table,
// two triggers (insert and update). The statements are idempotent except
// PostgreSQL's ADD CONSTRAINT, which fails if the constraint exists: see
// ConstraintName. It is a guard against mistakes, not against a database
// writer, who can drop it.
func (c *Column) SealedConstraint(d Dialect) ([]string, error) {
	t, err := QuoteIdent(c.Table())
	if err != nil {
		return nil, err
	}
	col, err := QuoteIdent(c.Name())
	if err != nil {
		return nil, err
	}
	name := c.ConstraintName()
	switch d {
	case Postgres:
		pred := fmt.Sprintf(`get_byte(%s, 0) = 3 AND octet_length(%s) >= %d`, col, col, minSealed)
		if c.Encoding() == Text {
			pred = fmt.Sprintf(`%s LIKE 'w3:%%'`, col)
		}
		return []string{fmt.Sprintf(`ALTER TABLE %s ADD CONSTRAINT %s CHECK (%s IS NULL OR (%s)) NOT VALID`, t, name, col, pred)}, nil
	case SQLite:
		pred := fmt.Sprintf(`typeof(NEW.%s) = 'blob' AND substr(NEW.%s, 1, 1) = x'03' AND length(NEW.%s) >= %d`, col, col, col, minSealed)
		if c.Encoding() == Text {
			pred = fmt.Sprintf(`typeof(NEW.%s) = 'text' AND substr(NEW.%s, 1, 3) = 'w3:'`, col, col)
		}
		var out []string
		for _, ev := range []string{"INSERT", "UPDATE OF " + col} {
			trigger := name + "_" + strings.ToLower(strings.Fields(ev)[0])
			out = append(out, fmt.Sprintf(`CREATE TRIGGER IF NOT EXISTS %s BEFORE %s ON %s WHEN NEW.%s IS NOT NULL AND NOT (%s)
BEGIN SELECT RAISE(ABORT, 'ward: %s.%s holds only ward ciphertexts (a plaintext or foreign value was refused)'); END`,
				trigger, ev, t, col, pred, c.Table(), c.Name()))
		}
		return out, nil
	}
	return nil, fmt.Errorf("field: no sealed-value constraint for dialect %v", d)
}

// ConstraintName names the constraint (PostgreSQL) or the prefix of the
// triggers (SQLite) SealedConstraint makes: "ward_sealed_" and a hash of
// table and column, within PostgreSQL's 63-byte identifiers.
func (c *Column) ConstraintName() string {
	return fmt.Sprintf("ward_sealed_%08x", crc32.ChecksumIEEE([]byte(c.Table()+"\x00"+c.Name())))
}

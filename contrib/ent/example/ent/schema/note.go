// Package schema is the ent schema of wardent's example and tests.
package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
)

// Note is a note whose body is encrypted by wardent, bound to its
// client-assigned ID and its owner.
type Note struct {
	ent.Schema
}

// Fields of the Note.
func (Note) Fields() []ent.Field {
	return []ent.Field{
		field.String("id").Immutable(), // client-assigned (a UUID): the row key
		field.Int64("user_id"),
		field.Text("body"),                        // ciphertext in the database, plaintext in the program
		field.Text("email").Optional().Nillable(), // NULL stays NULL
		field.Bytes("email_index").Optional(),     // blind index of email
	}
}

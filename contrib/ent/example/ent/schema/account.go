package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
)

// Account has a database-assigned ID (bigserial, AUTOINCREMENT) that its
// encrypted e-mail is bound to: wardent inserts the row with the e-mail
// NULL, then seals it for the ID the database assigned and writes it in
// the same transaction. The blind index carries the UNIQUE constraint.
type Account struct {
	ent.Schema
}

// Fields of the Account.
func (Account) Fields() []ent.Field {
	return []ent.Field{
		field.Int64("id"),                              // assigned by the database
		field.Text("email").Optional().Nillable(),      // NULL until sealed for the assigned ID
		field.Bytes("email_index").Optional().Unique(), // blind index of email: uniqueness
	}
}

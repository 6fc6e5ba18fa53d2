package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
)

// Member has a recorded (re-keyable) blind index of its encrypted e-mail:
// two index fields, the second the spare a re-key fills, each UNIQUE, so
// that no address gets two members while a re-key moves the index from
// one column to the other.
type Member struct {
	ent.Schema
}

// Fields of the Member.
func (Member) Fields() []ent.Field {
	return []ent.Field{
		field.String("id").Immutable(), // client-assigned: the row key
		field.Text("email"),
		field.Bytes("email_index").Optional().Nillable().Unique(),
		field.Bytes("email_index2").Optional().Nillable().Unique(),
	}
}

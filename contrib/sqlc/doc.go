// Package wardsqlc shows ward with sqlc: sqlc.yaml overrides the encrypted
// columns to field.Ciphertext, so the generated code (packages notesqlite,
// notespg and notesmysql, committed; CI compiles and runs them without
// running sqlc)
// carries ciphertexts, and the application seals and opens values with a
// field.Column, bound to the row's ID and owner:
//
//	body, _ := field.NewColumn(kr, "notes", "body", field.WithEncoding(field.Text), field.Bind("user_id"))
//	ct, _ := body.SealString(field.RowString(id).With(userID), "…")
//	q.CreateNote(ctx, notesqlite.CreateNoteParams{ID: id, UserID: userID, Body: ct})
//	n, _ := q.GetNote(ctx, id)
//	text, err := body.OpenString(field.RowString(n.ID).With(n.UserID), n.Body)
//
// The ID is assigned by the application (a UUID): a database-assigned key
// is not known when the value is sealed. NULL columns scan as a NULL
// field.Ciphertext (Valid reports false).
package wardsqlc

package ledger

import "testing"

// TestSubjectColumns: of the recorded columns, those sealed under subject
// keys that the scopes name, and no other.
func TestSubjectColumns(t *testing.T) {
	st := &State{Columns: []Column{
		{Table: "messages", Column: "body", Subject: "user_id", Namespace: "users"},
		{Table: "notes", Column: "title"},
		{Table: "files", Column: "name", Subject: "owner", Namespace: "owners"},
	}}
	got := st.SubjectColumns([]string{"messages.body", "notes.title"})
	if len(got) != 1 || got[0].Namespace != "users" {
		t.Fatalf("%+v", got)
	}
	if got := st.SubjectColumns(nil); len(got) != 0 {
		t.Fatalf("no scope: %+v", got)
	}
}

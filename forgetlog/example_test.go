package forgetlog_test

import (
	"context"
	"fmt"
	"os"

	"github.com/wardlab/ward/forgetlog"
	"github.com/wardlab/ward/keyring"
)

// A service records each forget in a journal folder outside the database
// (subject.Config.Journal does it for every Forget); a recovery reads the
// folders back and asks whether a subject was forgotten.
func Example() {
	kr, _ := keyring.New(keyring.AES256GCM)
	dir, _ := os.MkdirTemp("", "forgets")
	defer os.RemoveAll(dir)

	j, err := forgetlog.Open(dir, kr)
	if err != nil {
		panic(err)
	}
	defer j.Close()
	if err := j.Append(context.Background(), forgetlog.Entry{Database: "db-0123456789abcdef", Namespace: "users", Subject: "alice"}); err != nil {
		panic(err)
	}

	r, err := forgetlog.Read(kr, "db-0123456789abcdef", dir)
	if err != nil {
		panic(err)
	}
	_, alice := r.Forgotten("users", "alice")
	_, bob := r.Forgotten("users", "bob")
	fmt.Println(r.Count("users"), alice, bob)
	// Output: 1 true false
}

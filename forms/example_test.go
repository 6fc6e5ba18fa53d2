package forms_test

import (
	"fmt"

	"github.com/wardlab/ward/forms"
)

// A process's gate: a column and a hasher declare what they read and ask
// for what they would write; the fleet member (package fleet) opens forms
// once every registered process reads them.
func Example() {
	g := forms.New()
	g.Declare(forms.Password("bcrypt"), forms.Password("argon2id"))
	g.Want(forms.Password("argon2id"), forms.Sealed("users", "email"))
	fmt.Println(g.Allows(forms.Password("argon2id")))
	g.SetOpen([]forms.Form{forms.Password("argon2id")}) // what the fleet member read from the ledger
	fmt.Println(g.Allows(forms.Password("argon2id")), g.Wanted())
	// Output:
	// false
	// true [sealed:users.email]
}

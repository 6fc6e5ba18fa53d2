package fleetgate_test

import (
	"fmt"

	"github.com/wardlab/ward/fleetgate"
)

// A process's gate: a column and a hasher declare what they read and ask
// for what they would write; the fleet member (package fleet) opens forms
// once every registered process reads them.
func Example() {
	g := fleetgate.New()
	g.Declare(fleetgate.Password("bcrypt"), fleetgate.Password("argon2id"))
	g.Want(fleetgate.Password("argon2id"), fleetgate.Sealed("users", "email"))
	fmt.Println(g.Allows(fleetgate.Password("argon2id")))
	g.SetOpen([]fleetgate.Form{fleetgate.Password("argon2id")}) // what the fleet member read from the ledger
	fmt.Println(g.Allows(fleetgate.Password("argon2id")), g.Wanted())
	// Output:
	// false
	// true [sealed:users.email]
}

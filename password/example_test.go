package password_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/wardlab/ward/password"
)

// Sign-up and log-in with upgrade-on-login.
func Example() {
	ctx := context.Background()
	h, err := password.NewHasher(password.Policy{}, nil) // Argon2id, OWASP parameters
	if err != nil {
		log.Fatal(err)
	}
	stored, _ := h.Hash(ctx, []byte("correct horse battery staple"))
	fmt.Println(stored[:31])

	// A legacy Spring Security hash from before the migration.
	legacy := "{bcrypt}$2b$10$jyjxflEZB7By.j8XtjD/UeNPiJHsgxWEFosv0i0MnQAXKsNYT3TsO"
	upgraded, res, err := h.VerifyAndUpgrade(ctx, []byte("correct horse battery staple"), legacy)
	fmt.Println(err, res.Format, res.Params, res.NeedsRehash, upgraded[:31])
	// Store it with: UPDATE users SET pw = $upgraded WHERE id = $id AND pw = $legacy

	_, err = h.Verify(ctx, []byte("wrong"), stored)
	fmt.Println(errors.Is(err, password.ErrMismatch))
	// Output:
	// $argon2id$v=19$m=19456,t=2,p=1$
	// <nil> spring-bcrypt bcrypt cost=10 true $argon2id$v=19$m=19456,t=2,p=1$
	// true
}

// A stored hash is untrusted input: absurd parameters are refused before
// any memory is allocated.
func ExampleInspect() {
	p, format, err := password.Inspect("$argon2id$v=19$m=16384,t=2,p=1$c2FsdHNhbHRzYWx0MTIzNA$+7YTtmitIfItC6SOhzUcrMJzsymN2bFnkm1v5rbA9B0")
	fmt.Println(p, format, err)
	_, _, err = password.Inspect("$argon2id$v=19$m=4194304,t=2,p=1$c2FsdHNhbHRzYWx0MTIzNA$+7YTtmitIfItC6SOhzUcrMJzsymN2bFnkm1v5rbA9B0")
	fmt.Println(err)
	// Output:
	// argon2id m=16384,t=2,p=1 phc <nil>
	// password: m=4194304 exceeds the limit of 131072
}

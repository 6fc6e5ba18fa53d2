package fleetgate

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestGate(t *testing.T) {
	var none *Gate
	if !none.Allows(Pepper) || none.Declared() != nil || none.Wanted() != nil {
		t.Fatal("a nil gate must allow every form and declare none")
	}
	g := New()
	select {
	case <-g.Ready():
		t.Fatal("ready before the database's forms were read")
	default:
	}
	g.Declare(Password("bcrypt"))
	g.Want(Sealed("users", "email"), Pepper)
	if g.Allows(Pepper) {
		t.Fatal("a wanted form is allowed before it opens")
	}
	if got := g.Declared(); !slices.Equal(got, []Form{"password:bcrypt", "password:pepper", "sealed:users.email"}) {
		t.Fatalf("declared: %v", got)
	}
	g.SetOpen([]Form{Pepper})
	<-g.Ready()
	if !g.Allows(Pepper) || g.Allows(Sealed("users", "email")) || !slices.Equal(g.Wanted(), []Form{"sealed:users.email"}) {
		t.Fatalf("after opening the pepper: wanted %v", g.Wanted())
	}
	g.SetOpen(nil)
	if !g.Allows(Pepper) {
		t.Fatal("an open form closed")
	}
	g.Hold()
	if g.Wanted() != nil || !g.Held() {
		t.Fatal("a held gate asks for forms")
	}
}

func TestMissing(t *testing.T) {
	g := New()
	g.Declare(Ciphertext(3))
	at := time.Date(2026, 12, 2, 3, 4, 5, 0, time.UTC)
	if err := g.Missing([]Opened{{Form: Ciphertext(3), Release: Release, Opened: at}}); err != nil {
		t.Fatal(err)
	}
	err := g.Missing([]Opened{{Form: Ciphertext(3)}, {Form: Subject("notes", "body"), Release: Release, Opened: at}})
	var me *MissingError
	if !errors.As(err, &me) || len(me.Forms) != 1 || !strings.Contains(err.Error(), "subject:notes.body (introduced in "+Release+", opened 2026-12-02T03:04:05Z)") {
		t.Fatalf("missing: %v", err)
	}
}

func TestValid(t *testing.T) {
	for f, want := range map[Form]bool{
		Sealed("users", "email"): true, Password("pbkdf2-sha256"): true, Ciphertext(4): true,
		"sealed:": false, "other:x": false, "sealed:a,b": false, "sealed:a b": false, "nocolon": false, "sealed:\x1b[2J": false,
	} {
		if f.Valid() != want {
			t.Errorf("%q.Valid() = %v", f, !want)
		}
	}
}

func FuzzValid(f *testing.F) {
	f.Add("sealed:users.email")
	f.Add("password:pepper,sealed:x.y")
	f.Fuzz(func(t *testing.T, s string) {
		if Form(s).Valid() && (strings.ContainsAny(s, ", \n") || len(s) > 200 || ReleaseOf(Form(s)) == "") {
			t.Fatalf("%q is valid", s)
		}
	})
}

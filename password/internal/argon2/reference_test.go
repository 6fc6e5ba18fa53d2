package argon2

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReferenceC compares with the reference C implementation through
// Debian's libargon2 (package libargon2-dev), on random inputs that
// include the secret K and associated data X, which x/crypto cannot
// check. A small C program (testdata/ref.c) is built with the system
// compiler; the test skips where there is none or no libargon2.
func TestReferenceC(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a C program")
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler")
	}
	bin := filepath.Join(t.TempDir(), "ref")
	if out, err := exec.Command(cc, "-O2", "-o", bin, "testdata/ref.c", "-largon2").CombinedOutput(); err != nil {
		t.Skipf("cannot build against libargon2 (Debian package libargon2-dev): %v\n%s", err, out)
	}
	r := rand.New(rand.NewPCG(5, 6))
	type tc struct {
		p        Params
		pw, salt []byte
	}
	var cases []tc
	var in strings.Builder
	hexOr := func(b []byte) string {
		if len(b) == 0 {
			return "-"
		}
		return hex.EncodeToString(b)
	}
	for i := range 40 {
		c := tc{pw: make([]byte, r.IntN(64)), salt: make([]byte, 8+r.IntN(32))}
		fillRand(r, c.pw)
		fillRand(r, c.salt)
		lanes := uint32(1 + r.IntN(4))
		c.p = Params{Variant: Variant(i % 3), Time: uint32(1 + r.IntN(3)), Lanes: lanes, Memory: 8*lanes + uint32(r.IntN(300)),
			KeyLen: uint32(4 + r.IntN(100)), Secret: make([]byte, r.IntN(3)*16), AssociatedData: make([]byte, r.IntN(40))}
		fillRand(r, c.p.Secret)
		fillRand(r, c.p.AssociatedData)
		cases = append(cases, c)
		fmt.Fprintf(&in, "%d %d %d %d %d %s %s %s %s\n", c.p.Variant, c.p.Time, c.p.Memory, c.p.Lanes, c.p.KeyLen,
			hexOr(c.pw), hexOr(c.salt), hexOr(c.p.Secret), hexOr(c.p.AssociatedData))
	}
	cmd := exec.Command(bin)
	cmd.Stdin = strings.NewReader(in.String())
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	forEachImpl(t, func(t *testing.T) {
		sc = bufio.NewScanner(strings.NewReader(string(out)))
		for _, c := range cases {
			if !sc.Scan() {
				t.Fatal("reference output ended early")
			}
			got, err := Key(c.pw, c.salt, c.p, make([]Block, c.p.MemoryBlocks()))
			if err != nil {
				t.Fatal(err)
			}
			if want := sc.Text(); hex.EncodeToString(got) != want {
				t.Fatalf("%+v: %x, reference %s", c.p, got, want)
			}
		}
	})
}

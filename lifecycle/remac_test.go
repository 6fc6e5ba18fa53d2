package lifecycle

import (
	"strings"
	"testing"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// TestMACResultString: the line the CLI and the chat print names the
// column, every count, the epoch, and why v1 MACs are still accepted.
func TestMACResultString(t *testing.T) {
	kr, _ := keyring.New(keyring.AES256GCM)
	m := MACResult{Column: ledger.MACColumn{Table: "sessions", Column: "mac"}, Moved: 3, Current: 4, Invalid: 1, Changed: 2, Why: "run again", Epoch: kr.Primary().ID}
	want := "sessions.mac: 3 row MACs moved to epoch " + kr.Primary().ID.String() + ", 4 already there, 1 invalid, 2 changed meanwhile; v1 MACs still accepted: run again"
	if got := m.String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	m.Refused, m.Why = true, ""
	if got := m.String(); !strings.HasSuffix(got, "; v1 MACs refused") {
		t.Errorf("refused: %q", got)
	}
}

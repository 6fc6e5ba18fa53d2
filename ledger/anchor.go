package ledger

import (
	"github.com/wardlab/ward/internal/keycore"
	"github.com/wardlab/ward/keyring"
)

// Anchor is what a keyring file remembers about one database's state, in
// the sealed file beside the keys (FORMAT.md, "Anchors"): the ledger's
// counter and state epoch last written, marks and counters that never go
// backwards, and the columns values were sealed into. Every ledger write
// moves it forward; a ledger older than its anchor is refused
// ([ErrReplayed]).
type Anchor = keycore.Anchor

// core is the keyring's mechanism: its state MACs and anchors.
func core(kr *keyring.Keyring) *keycore.Keyring { return (*keycore.Keyring)(kr) }

package forgetlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/wardlab/ward/keyring"
)

// privateHistory writes private records as stores of several epochs
// would: epoch 7 current, 5 older (still held), 0x0badbeef retired.
type privateHistory struct {
	t     *testing.T
	ks    keySet
	r     *Records
	tally Tally // the ledger's
}

func newPrivateHistory(t *testing.T) *privateHistory {
	keys := map[uint32][]byte{7: bytes.Repeat([]byte{7}, 32), 5: bytes.Repeat([]byte{5}, 32)}
	ks := keySet{hash: bytes.Repeat([]byte{1}, 32), mac: bytes.Repeat([]byte{2}, 32),
		current: func() (uint32, []byte, error) { return 7, keys[7], nil },
		at: func(e uint32) ([]byte, error) {
			if k, ok := keys[e]; ok {
				return k, nil
			}
			if e == 0x0badbeef {
				return nil, keyring.ErrEpochEnded
			}
			return nil, keyring.ErrUnknownKey
		}}
	return &privateHistory{t: t, ks: ks, r: newRecords(ks)}
}

// write appends a private record of sub under epoch (its key: the held
// one, or for the retired epoch one the keyring no longer has), chained
// from prev, and returns the tally after it.
func (h *privateHistory) write(sub string, epoch uint32, prev Tally) Tally {
	j := &Journal{keySet: h.ks}
	j.current = func() (uint32, []byte, error) {
		k, err := h.ks.at(epoch)
		if err != nil {
			k = []byte("the retired epoch's key")
		}
		return epoch, k, nil
	}
	h.r.add(mustRecord(h.t, j, Entry{Database: "db-1", Namespace: "users", Subject: sub, At: time.Unix(1, 0), Private: true, Chain: true, Prev: prev}), "db-1", true)
	return prev.Add(PrivateItem(j.Identity("users", sub)))
}

// commit is a subject going private whose transaction committed.
func (h *privateHistory) commit(sub string, epoch uint32) {
	h.tally = h.write(sub, epoch, h.tally)
}

func (h *privateHistory) private(v1 bool) string {
	var out []string
	for _, sub := range []string{"alice", "bob", "carol", "dave", "mallory", "trudy", "nobody"} {
		p, err := h.r.Private("users", sub, func() (Commitment, error) {
			return Commitment{Tally: h.tally, V1: v1}, nil
		})
		if err != nil {
			h.t.Fatal(err)
		}
		if p {
			out = append(out, sub)
		}
	}
	return fmt.Sprint(out)
}

// TestPrivateRecords: a private record counts when the ledger's tally
// commits to it (whatever its epoch, a retired one included) or its MAC
// is under the current epoch; a record planted with an older keyring
// file — under an epoch that is no longer current, or retired, whether
// past the ledger's tally or off its chain — makes nobody private; a v1
// record counts only while the namespace's v1 records still count, and
// Unchained names the v1 subjects the chain does not hold yet.
func TestPrivateRecords(t *testing.T) {
	h := newPrivateHistory(t)
	h.commit("alice", 5)           // before the rotation that made 7 current
	h.commit("bob", 0x0badbeef)    // an epoch since retired
	h.write("mallory", 5, h.tally) // planted with an older file, past the tally
	h.write("trudy", 0x0badbeef, Tally{}.Add([]byte("x")))
	h.write("carol", 7, h.tally) // a transaction that rolled back, under today's epoch
	v1 := &Journal{keySet: h.ks}
	h.r.add(mustRecord(t, v1, Entry{Database: "db-1", Namespace: "users", Subject: "dave", At: time.Unix(1, 0), Private: true}), "db-1", true)
	if h.r.Invalid != 0 {
		t.Fatalf("%d records read as invalid", h.r.Invalid)
	}
	if got, want := h.private(true), "[alice bob carol dave]"; got != want {
		t.Fatalf("private, v1 counting: %s, want %s", got, want)
	}
	if got, want := h.private(false), "[alice bob carol]"; got != want {
		t.Fatalf("private, v1 refused: %s, want %s", got, want)
	}
	dave := (&Journal{keySet: h.ks}).Identity("users", "dave")
	if got := h.r.Unchained("users", Commitment{Tally: h.tally, V1: true}); len(got) != 1 || !bytes.Equal(got[0], dave) {
		t.Fatalf("unchained: %x, want dave's %x", got, dave)
	}
	// dave's v1 record moved onto the chain (under an older epoch: the
	// chain, not the epoch, proves it).
	j := &Journal{keySet: h.ks}
	j.current = func() (uint32, []byte, error) { return 5, bytes.Repeat([]byte{5}, 32), nil }
	h.r.add(mustRecord(t, j, Entry{Database: "db-1", Namespace: "users", Identity: dave, At: time.Unix(1, 0), Private: true, Chain: true, Prev: h.tally}), "db-1", true)
	h.tally = h.tally.Add(PrivateItem(dave))
	if got := h.r.Unchained("users", Commitment{Tally: h.tally}); len(got) != 0 {
		t.Fatalf("unchained after the move: %x", got)
	}
	if got, want := h.private(false), "[alice bob carol dave]"; got != want {
		t.Fatalf("private after the move: %s, want %s", got, want)
	}
	// The commitment is asked only for a subject with records.
	asked := false
	if p, err := h.r.Private("users", "nobody", func() (Commitment, error) { asked = true; return Commitment{}, nil }); err != nil || p || asked {
		t.Fatalf("a subject without records: %v %v, commitment asked %v", p, err, asked)
	}
}

// TestPrivateAsksTheLedgerUnlocked: Journal.Private asks for the ledger's
// commitment (a database read) without holding the journal's lock, so
// that another look-up meanwhile does not wait for the database: here the
// commitment's callback itself reads the journal.
func TestPrivateAsksTheLedgerUnlocked(t *testing.T) {
	kr, err := keyring.New(keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	j, err := Open(t.TempDir(), kr)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := j.Append(context.Background(), Entry{Database: "db-1", Namespace: "users", Subject: "dave", Private: true}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		p, err := j.Private("db-1", "users", "dave", func() (Commitment, error) {
			if _, err := j.Unchained("db-1", "users", Commitment{V1: true}); err != nil {
				return Commitment{}, err
			}
			return Commitment{V1: true}, nil
		})
		if err == nil && !p {
			err = errors.New("dave's v1 record, counting, did not make him private")
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second): // a hang check
		t.Fatal("a journal read inside the commitment's callback hung: Private held the journal's lock")
	}
}

package forgetlog

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardlab/ward/keyring"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.json")

// fixedKeys are a journal's keys for vectors and fuzzing: the integrity
// key of one epoch, and epoch 0x0badbeef retired.
func fixedKeys(hash, mac []byte, epoch uint32, key []byte) keySet {
	return keySet{hash: hash, mac: mac,
		current: func() (uint32, []byte, error) { return epoch, key, nil },
		at: func(e uint32) ([]byte, error) {
			switch e {
			case epoch:
				return key, nil
			case 0x0badbeef:
				return nil, keyring.ErrEpochEnded
			}
			return nil, keyring.ErrUnknownKey
		}}
}

func mustRecord(t testing.TB, j *Journal, e Entry) []byte {
	t.Helper()
	line, err := j.record(e)
	if err != nil {
		t.Fatal(err)
	}
	return line
}

func newKeyring(t testing.TB) *keyring.Keyring {
	t.Helper()
	kr, err := keyring.New(keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

// TestAppendRead: forgets appended by several journals at once (as many
// processes would) are all read back, for their database only, and a
// subject not forgotten is not found.
func TestAppendRead(t *testing.T) {
	ctx := context.Background()
	kr := newKeyring(t)
	dir := t.TempDir()
	var wg sync.WaitGroup
	for p := range 4 {
		j, err := Open(dir, kr)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer j.Close()
			for i := range 25 {
				if err := j.Append(ctx, Entry{Database: "db-1", Namespace: "users", Subject: fmt.Sprint("u", p*25+i)}); err != nil {
					t.Error(err)
				}
			}
			j.Append(ctx, Entry{Database: "db-2", Namespace: "users", Subject: "other"})
		}()
	}
	wg.Wait()
	r, err := Read(kr, "db-1", dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Files != 4 || r.Count("users") != 100 || r.Other != 4 || r.Invalid != 0 {
		t.Fatalf("read %d files, %d users, %d other, %d invalid", r.Files, r.Count("users"), r.Other, r.Invalid)
	}
	if _, ok := r.Forgotten("users", "u42"); !ok {
		t.Fatal("u42 not found")
	}
	if _, ok := r.Forgotten("users", "u100"); ok {
		t.Fatal("u100 found")
	}
	if _, ok := r.Forgotten("tenants", "u42"); ok {
		t.Fatal("u42 found in another namespace")
	}
	// Nothing in the folder names a subject.
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte("u42")) || strings.Contains(f, "u42") {
			t.Fatalf("%s names a subject", f)
		}
	}
}

// TestRefused: a record without the keyring's MAC, a torn last line, an
// overlong line and another keyring's records are refused and counted;
// the valid ones still read.
func TestRefused(t *testing.T) {
	ctx := context.Background()
	kr := newKeyring(t)
	dir := t.TempDir()
	j, err := Open(dir, kr)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append(ctx, Entry{Database: "db-1", Namespace: "users", Subject: "alice"}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	other, _ := Open(dir, newKeyring(t))
	other.Append(ctx, Entry{Database: "db-1", Namespace: "users", Subject: "bob"})
	other.Close()
	good := string(mustRecord(t, j, Entry{Database: "db-1", Namespace: "users", Subject: "carol", At: time.Unix(1, 0)}))
	planted := strings.Replace(good, hex.EncodeToString(subjectHash(j.hash, "users", "carol")), hex.EncodeToString(subjectHash(j.hash, "users", "dave")), 1)
	junk := planted + strings.Repeat("x", 5000) + "\n" + good[:len(good)-10]
	if err := os.WriteFile(filepath.Join(dir, "junk"+Ext), []byte(junk), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := Read(kr, "db-1", dir)
	if err != nil {
		t.Fatal(err)
	}
	_, alice := r.Forgotten("users", "alice")
	_, bob := r.Forgotten("users", "bob")
	_, dave := r.Forgotten("users", "dave")
	if !alice || bob || dave || r.Invalid != 4 {
		t.Fatalf("alice %v, bob %v, dave %v, %d invalid", alice, bob, dave, r.Invalid)
	}
	if _, err := Read(kr, "db-1", filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing folder read as empty")
	}
	if err := j.Append(ctx, Entry{Database: "db 1", Namespace: "users", Subject: "x"}); err == nil {
		t.Fatal("a database ID with a space was appended")
	}
}

// vectors are the record format's golden vectors, for other languages.
type vectors struct {
	HashKey string `json:"hash_key"`
	MACKey  string `json:"mac_key"`
	// Epoch and EpochKey are the integrity epoch of v3 records and its
	// integrity key, K_int(epoch, "forget journal") (FORMAT.md).
	Epoch    uint32   `json:"epoch"`
	EpochKey string   `json:"epoch_key"`
	Records  []vector `json:"records"`
}

type vector struct {
	Database  string `json:"database"`
	Namespace string `json:"namespace"`
	Subject   string `json:"subject"`
	At        int64  `json:"at"`
	Private   bool   `json:"private,omitempty"`
	// BindKeys makes a v2 record, of the key versions Keys.
	BindKeys bool     `json:"bind_keys,omitempty"`
	Keys     []uint32 `json:"keys,omitempty"`
	// Chain makes a v3 record, of the key versions Keys ("*" when
	// KeysUnbound) and the tally before, Prev; Next is the tally after
	// (Prev with the subject's hash added: FORMAT.md, "Tallies"). With
	// Private, a ward-private-v2 record (no key versions; Next adds the
	// hash alone).
	Chain       bool         `json:"chain,omitempty"`
	KeysUnbound bool         `json:"keys_unbound,omitempty"`
	Prev        *vectorTally `json:"prev,omitempty"`
	Next        *vectorTally `json:"next,omitempty"`
	Line        string       `json:"line"`
}

// item is what the vector's record adds to its tally: the subject's hash
// and key versions of a forget; the hash alone of a subject gone private.
func (v vector) item(hashKey []byte, keys []uint32) []byte {
	id := subjectHash(hashKey, v.Namespace, v.Subject)
	if v.Private {
		return PrivateItem(id)
	}
	return Item(id, keys)
}

// v1Commitment is a ledger without private subjects, of a namespace whose
// v1 records still count.
func v1Commitment() (Commitment, error) { return Commitment{V1: true}, nil }

type vectorTally struct {
	Count uint64 `json:"count"`
	Since uint64 `json:"since"`
	Head  string `json:"head"` // hex; empty at the start
}

func (v *vectorTally) tally() Tally {
	if v == nil {
		return Tally{}
	}
	h, _ := hex.DecodeString(v.Head)
	return Tally{Count: v.Count, Since: v.Since, Head: h}
}

func textTally(t Tally) *vectorTally {
	return &vectorTally{Count: t.Count, Since: t.Since, Head: hex.EncodeToString(t.Head)}
}

// TestVectors checks the record format against testdata/vectors.json.
func TestVectors(t *testing.T) {
	path := filepath.Join("testdata", "vectors.json")
	var v vectors
	if *update {
		v = vectors{HashKey: hex.EncodeToString(bytes.Repeat([]byte{1}, 32)), MACKey: hex.EncodeToString(bytes.Repeat([]byte{2}, 32)),
			Epoch: 0x5eed0001, EpochKey: hex.EncodeToString(bytes.Repeat([]byte{3}, 32))}
		v.Records = []vector{{Database: "db-0123456789abcdef", Namespace: "users", Subject: "alice", At: 1764547200},
			{Database: "db-0123456789abcdef", Namespace: "tenants", Subject: "Ünïcode \x00 subject", At: 0},
			{Database: "db-1", Namespace: "n", Subject: "", At: 4102444800},
			{Database: "db-0123456789abcdef", Namespace: "users", Subject: "bob", At: 1764547200, Private: true},
			{Database: "db-0123456789abcdef", Namespace: "users", Subject: "carol", At: 1764547200, BindKeys: true, Keys: []uint32{0x7f000001, 0x1a2b3c4d}},
			{Database: "db-0123456789abcdef", Namespace: "users", Subject: "dave", At: 1764547200, BindKeys: true},
			{Database: "db-0123456789abcdef", Namespace: "users", Subject: "erin", At: 1764547200, Chain: true, Keys: []uint32{0x7f000001}, Prev: &vectorTally{Count: 4, Since: 4}},
			{Database: "db-0123456789abcdef", Namespace: "users", Subject: "frank", At: 1764547200, Chain: true, Keys: []uint32{}, Prev: &vectorTally{Count: 5, Since: 4, Head: "2d8b2c0a1e0f6f0d8f8f9d4c63f1b8f3f7e3b1a0c9d8e7f6a5b4c3d2e1f00112"}},
			{Database: "db-0123456789abcdef", Namespace: "users", Subject: "grace", At: 1764547200, Chain: true, KeysUnbound: true, Prev: &vectorTally{Count: 9, Since: 0, Head: "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"}},
			{Database: "db-0123456789abcdef", Namespace: "users", Subject: "heidi", At: 1764547200, Private: true, Chain: true, Prev: &vectorTally{}},
			{Database: "db-0123456789abcdef", Namespace: "users", Subject: "ivan", At: 1764547200, Private: true, Chain: true, Prev: &vectorTally{Count: 1, Since: 0, Head: "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"}}}
	} else {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
	}
	hk, _ := hex.DecodeString(v.HashKey)
	mk, _ := hex.DecodeString(v.MACKey)
	ek, _ := hex.DecodeString(v.EpochKey)
	ks := fixedKeys(hk, mk, v.Epoch, ek)
	j := &Journal{keySet: ks}
	r := newRecords(ks)
	for i, e := range v.Records {
		keys := e.Keys
		if e.Chain && !e.KeysUnbound && !e.Private && keys == nil {
			keys = []uint32{}
		}
		line := string(mustRecord(t, j, Entry{Database: e.Database, Namespace: e.Namespace, Subject: e.Subject, At: time.Unix(e.At, 0), Private: e.Private, Keys: keys, BindKeys: e.BindKeys, Chain: e.Chain, Prev: e.Prev.tally()}))
		if *update {
			v.Records[i].Line = line
			if e.Chain {
				v.Records[i].Next = textTally(e.Prev.tally().Add(e.item(hk, keys)))
			}
		} else if line != e.Line {
			t.Fatalf("record %d: %q, want %q", i, line, e.Line)
		} else if e.Chain && !e.Prev.tally().Add(e.item(hk, keys)).Equal(e.Next.tally()) {
			t.Fatalf("record %d: the tally after is not %+v", i, e.Next)
		}
		r.add([]byte(line), e.Database, true)
		if e.Private {
			if p, err := r.Private(e.Namespace, e.Subject, v1Commitment); err != nil || !p {
				t.Fatalf("record %d does not read back as private: %v", i, err)
			}
			continue
		}
		if at, ok := r.Forgotten(e.Namespace, e.Subject); !ok || at.Unix() != e.At {
			t.Fatalf("record %d does not read back: %v %v", i, at, ok)
		}
		if len(e.Keys) > 0 && (!r.Forgets(e.Namespace, e.Subject, e.Keys[:1]) || !r.Forgets(e.Namespace, e.Subject, []uint32{e.Keys[0] + 3}) || r.Forgets(e.Namespace, e.Subject, []uint32{0xdeadbeef})) {
			t.Fatalf("record %d does not read back its key versions", i)
		}
	}
	if *update {
		b, _ := json.MarshalIndent(v, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzRecord: no line panics the reader, and the only lines it accepts
// are the four records made with the MAC keys (v1, v2 with key versions,
// v3 with the tally before, private v2): nothing else forges a record.
func FuzzRecord(f *testing.F) {
	ks := fixedKeys(bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32), 7, bytes.Repeat([]byte{3}, 32))
	j := &Journal{keySet: ks}
	good := mustRecord(f, j, Entry{Database: "db-1", Namespace: "users", Subject: "alice", At: time.Unix(1, 0)})
	f.Add(good)
	f.Add([]byte("ward-forget-v1 db-1 7573657273 00 1 00\n"))
	bound := mustRecord(f, j, Entry{Database: "db-1", Namespace: "users", Subject: "alice", At: time.Unix(1, 0), Keys: []uint32{1, 2}, BindKeys: true})
	f.Add(bound)
	f.Add([]byte("ward-forget-v2 db-1 7573657273 00 00000001,00000001 1 00\n"))
	chained := mustRecord(f, j, Entry{Database: "db-1", Namespace: "users", Subject: "alice", At: time.Unix(1, 0), Keys: []uint32{1}, Chain: true, Prev: Tally{Count: 2, Since: 2}})
	f.Add(chained)
	private := mustRecord(f, j, Entry{Database: "db-1", Namespace: "users", Subject: "alice", At: time.Unix(1, 0), Private: true, Chain: true, Prev: Tally{Count: 2, Since: 2}})
	f.Add(private)
	f.Add([]byte("ward-private-v2 db-1 7573657273 00 1/0/00 00000007 1 00\n"))
	f.Add([]byte("ward-forget-v3 db-1 7573657273 00 * 1/0/00 1 00\n"))
	f.Add([]byte("\n"))
	f.Fuzz(func(t *testing.T, line []byte) {
		r := newRecords(ks)
		r.add(line, "db-1", bytes.HasSuffix(line, []byte("\n")))
		if r.Invalid == 0 && !bytes.Equal(line, good) && !bytes.Equal(line, bound) && !bytes.Equal(line, chained) && !bytes.Equal(line, private) {
			t.Fatalf("accepted %q", line)
		}
	})
}

// TestPrivate: a private record appended by one journal (one process) is
// seen by another's Private, read incrementally; a forget record, another
// database's record or a line without the keyring's MAC makes nobody
// private.
func TestPrivate(t *testing.T) {
	ctx := context.Background()
	kr := newKeyring(t)
	dir := t.TempDir()
	a, _ := Open(dir, kr)
	b, _ := Open(dir, kr)
	defer a.Close()
	defer b.Close()
	if p, err := b.Private("db-1", "users", "alice", v1Commitment); err != nil || p {
		t.Fatalf("before: %v %v", p, err)
	}
	for _, e := range []Entry{{Database: "db-1", Namespace: "users", Subject: "alice", Private: true},
		{Database: "db-1", Namespace: "users", Subject: "bob"},
		{Database: "db-2", Namespace: "users", Subject: "carol", Private: true}} {
		if err := a.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	forged := string(mustRecord(t, a, Entry{Database: "db-1", Namespace: "users", Subject: "dave", Private: true, At: time.Unix(1, 0)}))
	forged = forged[:len(forged)-3] + "00\n" // its MAC altered
	os.WriteFile(filepath.Join(dir, "planted"+Ext), []byte(forged), 0o600)
	for sub, want := range map[string]bool{"alice": true, "bob": false, "carol": false, "dave": false} {
		if p, err := b.Private("db-1", "users", sub, v1Commitment); err != nil || p != want {
			t.Fatalf("%s: private %v, want %v (%v)", sub, p, want, err)
		}
	}
	if err := a.Append(ctx, Entry{Database: "db-1", Namespace: "users", Subject: "erin", Private: true}); err != nil {
		t.Fatal(err)
	}
	if p, _ := b.Private("db-1", "users", "erin", v1Commitment); !p {
		t.Fatal("a record appended since the last read was missed")
	}
}

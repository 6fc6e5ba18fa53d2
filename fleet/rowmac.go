package fleet

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/internal/keycore"
	"github.com/wardlab/ward/internal/sqltable"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// Registry rows v2 (FORMAT.md, "Process registry").
//
// A v2 row's MAC binds the database (the ledger's ID) and is computed
// under an integrity key of the epoch it names (the primary key when it
// was written), so that a row copied from another database, or forged
// with a keyring file from an epoch that ended, fails it. Its mac column
// is "v2:", the epoch's 8 hex digits, ":" and the MAC's hex. A process
// writes v2 once every registered process reads it (the form
// integrity:v2): a process of the release before would count a v2 row as
// tampered. A v1 row (keyed by the keyring's root, which every copy of the
// file derives) verifies until the ledger records that every row is v2
// (RowsV2Mark); from then on it is tampered, which holds every wait
// instead of letting one go early.

// RowsV2Mark is the ledger mark saying every registry row is v2: v1 rows
// are refused from then on.
const RowsV2Mark = "integrity:fleet-v2"

const (
	rowV2      = "v2:"
	rowPurpose = "fleet registry"
)

// rowMACs computes and checks a registry's row MACs.
type rowMACs struct {
	kr       *keyring.Keyring
	v1       []byte
	database string // "" while the database has no ledger: rows are v1
	refuseV1 bool
}

// macs reads what the registry's MACs depend on: the keyring's v1 key and
// the verified ledger's database ID and marks.
func (r *Registry) macs(ctx context.Context, kr *keyring.Keyring) (*rowMACs, error) {
	v1, err := kr.Derive("fleet registry v1", 32)
	if err != nil {
		return nil, err
	}
	m := &rowMACs{kr: kr, v1: v1}
	st, err := r.ledger().Verified(ctx, kr)
	if err != nil {
		return nil, fmt.Errorf("fleet: the registry's MACs bind the database's ledger: %w", err)
	}
	if st != nil {
		m.database, m.refuseV1 = st.Database, slices.Contains(st.Marks, RowsV2Mark)
	}
	return m, nil
}

// tag returns a row's MAC text: v2 under the current epoch when v2 is
// written (the gate allows it and the database has a ledger), else v1.
func (m *rowMACs) tag(p *Process, gate *fleetgate.Gate) string {
	if m.database == "" || !gate.Allows(fleetgate.IntegrityV2) {
		return hex.EncodeToString(rowMAC(m.v1, p))
	}
	epoch, key, err := (*keycore.Keyring)(m.kr).IntegrityKey(rowPurpose)
	if err != nil {
		return hex.EncodeToString(rowMAC(m.v1, p))
	}
	return fmt.Sprintf("%s%s:%s", rowV2, epoch, hex.EncodeToString(rowMACv2(key, m.database, epoch, p)))
}

// verify checks a row's MAC text.
func (m *rowMACs) verify(p *Process, tag string) bool {
	rest, v2 := strings.CutPrefix(tag, rowV2)
	if !v2 {
		want, err := hex.DecodeString(tag)
		return err == nil && !m.refuseV1 && hmac.Equal(rowMAC(m.v1, p), want)
	}
	e, macHex, ok := strings.Cut(rest, ":")
	epoch, err := keyring.ParseKeyID(e)
	want, herr := hex.DecodeString(macHex)
	if !ok || len(e) != 8 || err != nil || herr != nil || m.database == "" {
		return false
	}
	key, err := (*keycore.Keyring)(m.kr).IntegrityKeyAt(epoch, rowPurpose)
	return err == nil && hmac.Equal(rowMACv2(key, m.database, epoch, p), want)
}

// rowMACv2 is a v2 row's MAC: HMAC-SHA-256 under the epoch's key over
// "ward fleet row v2" 0x00, BE32(epoch), the database (length-prefixed)
// and the v1 message.
func rowMACv2(key []byte, database string, epoch keyring.KeyID, p *Process) []byte {
	h := hmac.New(sha256.New, key)
	b := binary.BigEndian.AppendUint32([]byte("ward fleet row v2\x00"), uint32(epoch))
	b = binary.AppendUvarint(b, uint64(len(database)))
	h.Write(append(b, database...))
	h.Write(rowMessage(p))
	return h.Sum(nil)
}

// rowMAC is a v1 row's MAC.
func rowMAC(key []byte, p *Process) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(rowMessage(p))
	return h.Sum(nil)
}

// rowMessage is what a row's MAC covers, every field of it.
func rowMessage(p *Process) []byte {
	var b []byte
	for _, s := range []string{p.ID, p.Host, p.Keyring, keysText(p.Keys)} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, n := range []int64{int64(p.PID), int64(p.Generation), p.Started.UnixMilli(), p.Seen.UnixMilli()} {
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	if p.Exited {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	if len(p.Forms) > 0 { // a row of a release from before forms has none, and its MAC as then
		c := formsText(p.Forms)
		b = binary.AppendUvarint(b, uint64(len(c)))
		b = append(b, c...)
	}
	return b
}

// RefuseV1 records in the ledger that v1 registry rows are refused, once
// no row is v1: every process seen in the last day (rows older are pruned)
// writes v2, and a process of the release before that joins later has its
// v1 row counted as tampered, which holds waits rather than letting them go
// early. It reports whether the mark is recorded. A rotation calls it
// (lifecycle.RemacRows), after the heartbeats moved every live row.
func (r *Registry) RefuseV1(ctx context.Context, kr *keyring.Keyring) (bool, error) {
	st, err := r.ledger().Verified(ctx, kr)
	if err != nil || st == nil {
		return false, err
	}
	if slices.Contains(st.Marks, RowsV2Mark) {
		return true, nil
	}
	t, err := r.name()
	if err != nil {
		return false, err
	}
	var n int
	err = r.DB.QueryRowContext(ctx, fmt.Sprintf(`SELECT COUNT(*) FROM %s WHERE mac NOT LIKE 'v2:%%'`, t)).Scan(&n)
	if sqltable.Missing(err) {
		return false, nil // no process ever joined
	}
	if err != nil || n > 0 {
		return false, err
	}
	if err := r.ledger().Mark(ctx, kr, RowsV2Mark); err != nil && !errors.Is(err, ledger.ErrAnchorNotSaved) {
		return false, err
	}
	return true, nil
}

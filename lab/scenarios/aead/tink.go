package aeadlab

import (
	"fmt"

	"github.com/tink-crypto/tink-go/v2/aead"
	"github.com/tink-crypto/tink-go/v2/keyset"
	tinkpb "github.com/tink-crypto/tink-go/v2/proto/tink_go_proto"
	"github.com/tink-crypto/tink-go/v2/tink"

	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/lab"
)

// implTink is tink-go's AEAD, the strongest peer a Go application would
// reach for: its primitive from a fresh keyset of one key, with Tink's
// 5-byte output prefix (a version byte and the key ID).
const implTink = "tink"

// tinkNote says what tink-go does and does not do beside ward.
const tinkNote = "tink-go v2 AEAD (keyset of one key, Tink's 5-byte prefix naming the key): random nonce, no row binding, no column key, no context check; allocates its output on every call (no append API)"

func (k ratioKey) vsTink() string {
	return fmt.Sprintf("%v/%s/%s/field-vs-tink", k.alg, k.op, sizeName(k.size))
}

// tinkHandle is a fresh tink keyset of one key of one of ward's
// algorithms.
func tinkHandle(alg keyring.Algorithm) (*keyset.Handle, error) {
	tmpl := map[keyring.Algorithm]func() *tinkpb.KeyTemplate{
		keyring.AES128GCM:         aead.AES128GCMKeyTemplate,
		keyring.AES256GCM:         aead.AES256GCMKeyTemplate,
		keyring.XChaCha20Poly1305: aead.XChaCha20Poly1305KeyTemplate,
	}[alg]
	if tmpl == nil {
		return nil, fmt.Errorf("aead: no tink template for %v", alg)
	}
	h, err := keyset.NewHandle(tmpl())
	if err != nil {
		return nil, fmt.Errorf("aead: tink keyset: %w", err)
	}
	return h, nil
}

// tinkOp seals or opens n values with tink-go's AEAD, with the same
// associated data ward's field layer binds for one row (what tink would
// need to bind it: the caller builds it).
func tinkOp(k caseKey, pt []byte) (func(n int) error, error) {
	handle, err := tinkHandle(k.alg)
	if err != nil {
		return nil, err
	}
	var a tink.AEAD
	if a, err = aead.New(handle); err != nil {
		return nil, fmt.Errorf("aead: tink: %w", err)
	}
	ad := []byte("messages\x00body\x00123456")
	ct, err := a.Encrypt(pt, ad)
	if err != nil {
		return nil, err
	}
	if k.op == "seal" {
		return func(n int) error {
			for range n {
				if ct, err = a.Encrypt(pt, ad); err != nil {
					return err
				}
			}
			return nil
		}, nil
	}
	return func(n int) error {
		for range n {
			if _, err := a.Decrypt(ct, ad); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// recordTink records, from one interleaved measurement, what tink-go adds
// over raw crypto/cipher and ward's field layer's time over tink's.
func recordTink(env *lab.Env, r ratioKey, tinkKey caseKey, raw, field, tinkNs []float64) {
	p := tinkKey.params()
	res := lab.FromSamples("aead", r.addedNs(implTink), p, "added_ns", "ns", minus(tinkNs, raw))
	res.Source, res.Note = lab.SourceReference, tinkNote
	ratio := lab.PairedRatio("aead", r.vsTink(), p, "ratio", field, tinkNs,
		"per-round ratio of ward's field layer (ciphertext v4) time to tink-go's AEAD time, interleaved rounds")
	ratio.Source = lab.SourceReference
	env.Record(res, ratio)
}

// tinkAnswer says, at 500 B, what tink-go adds over raw AES-256-GCM and
// ward's field layer's time over tink's.
func tinkAnswer(rs lab.Results) (string, bool) {
	k := ratioKey{keyring.AES256GCM, "seal", 500}
	added, ok := rs.Get(k.addedNs(implTink), "added_ns")
	vs, ok2 := rs.Get(k.vsTink(), "ratio")
	if !ok || !ok2 {
		return "", false
	}
	return fmt.Sprintf("Beside tink-go's AEAD (which binds no row, checks no context and allocates its output on every call, where ward's AppendSeal reuses the caller's buffer), which adds %s per 500 B seal over raw AES-256-GCM, ward's field layer's time over tink's is %s.",
		added.AddedText("ns"), vs.RatioText()), true
}

// tinkTable sets tink-go beside raw crypto/cipher and ward's field layer,
// per algorithm, operation and size.
func tinkTable(rs lab.Results, sizes []int) (lab.Table, bool) {
	t := lab.Table{Caption: "Beside tink-go v2 (" + tinkNote + "): ns added per value over raw crypto/cipher by tink and by ward's field layer (v4), and ward's time over tink's, with p05–p95",
		Head: []string{"algorithm", "op", "size", "tink adds", "ward adds", "ward / tink"}}
	for _, alg := range keyring.Algorithms() {
		for _, op := range []string{"seal", "open"} {
			for _, size := range sizes {
				k := ratioKey{alg, op, size}
				tk, ok := rs.Get(k.addedNs(implTink), "added_ns")
				if !ok {
					continue
				}
				w, _ := rs.Get(k.addedNs(implV4), "added_ns")
				vs, _ := rs.Get(k.vsTink(), "ratio")
				t.Rows = append(t.Rows, []string{alg.String(), op, sizeLabel(size), tk.AddedText("ns"), w.AddedText("ns"), vs.RatioText()})
			}
		}
	}
	return t, len(t.Rows) > 0
}

package kms_test

import (
	"context"
	"testing"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/local"
)

// BenchmarkEnvelopeVsField compares seal+open of a 1.5 kB value (500
// Japanese characters) through an Envelope with a warm cache and through
// the field layer with a local key, side by side.
func BenchmarkEnvelopeVsField(b *testing.B) {
	ctx := context.Background()
	pt := make([]byte, 1500)
	b.Run("field", func(b *testing.B) {
		kr, _ := keyring.New(keyring.AES256GCM)
		col, _ := field.NewColumn(kr, "messages", "body")
		b.ReportAllocs()
		for b.Loop() {
			ct, _ := col.Seal(field.RowInt(1), pt)
			if _, err := col.Open(field.RowInt(1), ct); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("envelope-cached", func(b *testing.B) {
		env := kms.NewEnvelope(local.Generate(), kms.EnvelopeOptions{})
		ctxb := []byte("messages/body/1")
		b.ReportAllocs()
		for b.Loop() {
			ct, err := env.Seal(ctx, pt, ctxb, ec)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := env.Open(ctx, ct, ctxb, ec); err != nil {
				b.Fatal(err)
			}
		}
	})
}

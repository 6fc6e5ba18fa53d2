package kms_test

import (
	"context"
	"fmt"

	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/local"
)

// Envelope encryption: one call to the key service per data key, not per
// value. In production, kmsurl.Open gives an AWS KMS key instead.
func ExampleEnvelope() {
	ctx := context.Background()
	ks := local.Generate()
	env := kms.NewEnvelope(ks, kms.EnvelopeOptions{})
	ec := map[string]string{"tenant": "42"}
	for i := range 3 {
		ct, _ := env.Seal(ctx, []byte("message"), []byte{byte(i)}, ec)
		pt, err := env.Open(ctx, ct, []byte{byte(i)}, ec)
		fmt.Println(string(pt), err)
	}
	st := env.Stats()
	fmt.Println("KMS calls:", st.KMSCalls, "seal hits:", st.SealHits)
	// Output:
	// message <nil>
	// message <nil>
	// message <nil>
	// KMS calls: 1 seal hits: 2
}

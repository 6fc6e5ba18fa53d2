package tlslab

import (
	"context"
	"testing"
	"time"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/pq/handshake"
	"github.com/wardlab/ward/pq/pqtls"
)

// TestMeasureNegotiation runs a few configurations and checks that what
// was negotiated is what was asked for, full and resumed.
func TestMeasureNegotiation(t *testing.T) {
	ch, err := pqtls.GenerateChain(pqtls.MLDSA44)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []config{{group: "X25519MLKEM768", cert: pqtls.MLDSA44}, {group: "MLKEM1024", cert: pqtls.MLDSA44, resumed: true},
		{group: "X25519", cert: pqtls.MLDSA44, delay: 10 * time.Millisecond}} {
		ms, err := measure(context.Background(), c, ch, 2)
		if err != nil {
			t.Fatalf("%s: %v", c.name(), err)
		}
		if len(ms) != 2 || (c.delay > 0 && ms[0].Handshake < 2*c.delay) {
			t.Fatalf("%s: %d runs, %v", c.name(), len(ms), ms[0].Handshake)
		}
	}
	w, b, err := compareBare(context.Background(), ch, 3)
	if err != nil || len(w) != 3 || len(b) != 3 {
		t.Fatal(err)
	}
}

// TestReport builds the section from a small run's results: every
// matrix cell the tables name must be a case the scenario records.
func TestReport(t *testing.T) {
	env := lab.NewEnv("tls", true, nil, nil)
	ch, err := pqtls.GenerateChain(pqtls.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	c := config{group: "X25519", cert: pqtls.ECDSAP256}
	ms, err := measure(context.Background(), c, ch, 3)
	if err != nil {
		t.Fatal(err)
	}
	record(env, c, ms)
	if err := recordBare(context.Background(), env, ch, 5); err != nil {
		t.Fatal(err)
	}
	sec, err := Scenario{}.Report(env.Results())
	if err != nil {
		t.Fatal(err)
	}
	if len(sec.Tables) == 0 || sec.Tables[0].Rows[0][1] == "– () / –" || len(sec.Answer) == 0 {
		t.Fatalf("section: %+v", sec.Tables[0].Rows[0])
	}
}

// TestMinimalOverLink measures the minimal protocol through its public
// API: a confirmed key in about one round trip of the link, and the
// bytes of the suite on the wire.
func TestMinimalOverLink(t *testing.T) {
	if testing.Short() {
		t.Skip("runs delayed handshakes")
	}
	ctx := context.Background()
	ms, b, err := minimalOverLink(ctx, handshake.Suite{KEX: handshake.X25519}, 0, 3)
	if err != nil || len(ms) != 3 || b != 161 {
		t.Fatalf("x25519: %v %v bytes %v", ms, b, err)
	}
	d := 10 * time.Millisecond
	signed := handshake.Suite{KEX: handshake.MLKEM768, Sig: handshake.MLDSA65}
	ms, b, err = minimalOverLink(ctx, signed, d, 3)
	if err != nil || len(ms) != 3 || b < 5000 {
		t.Fatalf("signed: %v %v bytes %v", ms, b, err)
	}
	for _, v := range ms {
		if v < 2*float64(d.Milliseconds()) {
			t.Fatalf("a handshake over a %v link took %v ms", d, v)
		}
	}
}

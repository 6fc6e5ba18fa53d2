package tlslab

import (
	"fmt"
	"time"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/chart"
	"github.com/wardlab/ward/pq/pqtls"
)

// Report builds the section: time and bytes by group and chain at each
// delay, full against resumed, TLS against the minimal protocol, chain
// sizes and the slow-start model.
func (s Scenario) Report(rs lab.Results) (lab.Section, error) {
	sec := lab.Section{Title: s.Title(), Question: s.Question()}
	if _, ok := rs.Get(config{group: "X25519", cert: pqtls.ECDSAP256}.name(), "handshake_time"); !ok {
		return sec, nil
	}
	for _, d := range Delays {
		sec.Tables = append(sec.Tables, delayTable(rs, d))
	}
	certs := pqtls.CertAlgs()
	var labels []string
	for _, a := range certs {
		labels = append(labels, a.String())
	}
	vals := map[string][]float64{}
	for _, a := range certs {
		full := config{group: "X25519MLKEM768", cert: a, delay: 20 * time.Millisecond}
		res := full
		res.resumed = true
		vals["full"] = append(vals["full"], rs.Median(full.name(), "handshake_time"))
		vals["resumed"] = append(vals["resumed"], rs.Median(res.name(), "handshake_time"))
		vals["modeled full, slow start"] = append(vals["modeled full, slow start"], rs.Median(full.name(), "modeled_time_cwnd"))
	}
	c, err := chart.Bars("X25519MLKEM768 at 20 ms: full, resumed, slow-start model", "ms", labels,
		[]string{"full", "resumed", "modeled full, slow start"}, vals)
	if err != nil {
		return sec, err
	}
	sec.Charts = append(sec.Charts, c)
	bv := map[string][]float64{}
	for _, g := range GroupNames {
		for _, a := range certs {
			bv[g] = append(bv[g], rs.Median(config{group: g, cert: a}.name(), "bytes_down"))
		}
	}
	if c, err = chart.Bars("Server-to-client bytes per full handshake", "bytes", labels, GroupNames, bv); err != nil {
		return sec, err
	}
	sec.Charts = append(sec.Charts, c)
	sec.Tables = append(sec.Tables, minimalTable(rs), chainTable(rs))
	tlsAnswers(&sec, rs)
	sec.FieldReport = "The post-quantum field report planned this comparison (OpenSSL with a post-quantum provider) and did not run it."
	return sec, nil
}

func delayTable(rs lab.Results, d time.Duration) lab.Table {
	t := lab.Table{Caption: fmt.Sprintf("Full handshake, median ms (p05–p95) / server-to-client bytes, one-way delay %d ms (link model)", d.Milliseconds()),
		Head: append([]string{"certificate chain"}, GroupNames...)}
	for _, a := range pqtls.CertAlgs() {
		row := []string{a.String()}
		for _, g := range GroupNames {
			n := config{group: g, cert: a, delay: d}.name()
			r, _ := rs.Get(n, "handshake_time")
			row = append(row, fmt.Sprintf("%s (%s) / %s", lab.FormatNumber(r.Median), r.Spread(), lab.FormatNumber(rs.Median(n, "bytes_down"))))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func minimalTable(rs lab.Results) lab.Table {
	t := lab.Table{Caption: "Real TLS vs ward's minimal protocol, median ms (link model)", Head: []string{"protocol", "0 ms", "20 ms", "75 ms"}}
	for i, p := range []struct {
		label string
		c     config
	}{
		{"TLS X25519 + ECDSA", config{group: "X25519", cert: pqtls.ECDSAP256}},
		{"TLS X25519MLKEM768 + ECDSA", config{group: "X25519MLKEM768", cert: pqtls.ECDSAP256}},
		{"TLS MLKEM1024 + ECDSA", config{group: "MLKEM1024", cert: pqtls.ECDSAP256}},
		{"TLS X25519MLKEM768 + ML-DSA-65", config{group: "X25519MLKEM768", cert: pqtls.MLDSA65}},
	} {
		tlsRow, minRow := []string{p.label}, []string{"minimal " + minimalSuites[i].String()}
		for _, d := range Delays {
			c := p.c
			c.delay = d
			tlsRow = append(tlsRow, lab.FormatNumber(rs.Median(c.name(), "handshake_time")))
			minRow = append(minRow, lab.FormatNumber(rs.Median(minimalCase(minimalSuites[i], d), "handshake_time")))
		}
		t.Rows = append(t.Rows, tlsRow, minRow)
	}
	return t
}

func chainTable(rs lab.Results) lab.Table {
	t := lab.Table{Caption: "Certificate chain on the wire (leaf + intermediate, DER)", Head: []string{"chain", "bytes", "slow-start extra round trips (model)"}}
	for _, a := range pqtls.CertAlgs() {
		r, _ := rs.Get(config{group: "X25519MLKEM768", cert: a, delay: 20 * time.Millisecond}.name(), "modeled_time_cwnd")
		t.Rows = append(t.Rows, []string{a.String(), lab.FormatNumber(rs.Median(chainCase(a), "chain_bytes")), fmt.Sprint(r.Params["extra_round_trips"])})
	}
	return t
}

func tlsAnswers(sec *lab.Section, rs lab.Results) {
	if r, ok := rs.Get(wardVsBare, "time_ratio"); ok {
		sec.Answer = append(sec.Answer, fmt.Sprintf("ward's measured handshake takes %sx a bare crypto/tls handshake (p05–p95 %s), interleaved on loopback (X25519MLKEM768 + ECDSA): the measurement adds nothing that matters.",
			lab.FormatNumber(r.Median), r.Spread()))
	}
	d := 20 * time.Millisecond
	if r, ok := rs.Get(pqCost("X25519MLKEM768", pqtls.ECDSAP256, d), "time_ratio"); ok {
		b, _ := rs.Get(pqCost("X25519MLKEM768", pqtls.ECDSAP256, d), "bytes_ratio")
		sec.Answer = append(sec.Answer, fmt.Sprintf("At 20 ms one-way, X25519MLKEM768 takes %sx X25519's time with an ECDSA chain (p05–p95 %s) and sends %sx the bytes: the round trip dominates.",
			lab.FormatNumber(r.Median), r.Spread(), lab.FormatNumber(b.Median)))
		sec.Headlines = append(sec.Headlines, r)
	}
	if r, ok := rs.Get(resumptionSaving(pqtls.MLDSA65, d), "time_ratio"); ok {
		b, _ := rs.Get(resumptionSaving(pqtls.MLDSA65, d), "bytes_ratio")
		sec.Answer = append(sec.Answer, fmt.Sprintf("Resumption skips the certificate and its signature: with an ML-DSA-65 chain at 20 ms it sends %sx fewer bytes but saves only %sx in time (p05–p95 %s), since it still takes one round trip.",
			lab.FormatNumber(b.Median), lab.FormatNumber(r.Median), r.Spread()))
		sec.Headlines = append(sec.Headlines, r)
	}
	sec.Answer = append(sec.Answer, "netsim does not emulate TCP slow start; the modeled column adds the extra round trips a server flight larger than the initial window (10 × 1,460 bytes) would cost on a fresh connection.")
}

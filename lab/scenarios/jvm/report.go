package jvmlab

import (
	"fmt"

	"github.com/wardlab/ward/lab"
)

// Report builds the section: the field layer's table and the password
// encoders' table.
func (s Scenario) Report(rs lab.Results) (lab.Section, error) {
	sec := lab.Section{Title: s.Title(), Question: s.Question()}
	field := lab.Table{Caption: "Per column value (ciphertext v4, AES-256-GCM), JMH average time: ward-java's Column beside the JDK's AES-GCM on a value with its IV, medians of the measured iterations (p05–p95)",
		Head: []string{"op", "size", "ward-java ns", "JDK AES-GCM ns", "ward-java / JDK"}}
	for _, o := range fieldOps {
		for _, size := range Sizes {
			w, ok := rs.Get(fieldCase("ward-java", o.op, size), "time")
			if !ok {
				continue
			}
			j, _ := rs.Get(fieldCase("jdk", o.op, size), "time")
			r, _ := rs.Get(fieldRatio(o.op, size), "ratio")
			field.Rows = append(field.Rows, []string{o.op, sizeLabel(size), cell(w), cell(j), r.RatioText()})
		}
	}
	pw := lab.Table{Caption: "Password hashing on the JVM, JMH average time per operation (ms), Argon2id",
		Head: []string{"operation", "parameters", "ms (p05–p95)"}}
	for _, c := range passwordCases {
		if r, ok := rs.Get(passwordCase(c.bench), "hash_latency"); ok {
			pw.Rows = append(pw.Rows, []string{c.label, c.params, cell(r)})
		}
	}
	for _, t := range []lab.Table{field, pw} {
		if len(t.Rows) > 0 {
			sec.Tables = append(sec.Tables, t)
		}
	}
	sec.Answer, sec.Headlines = answers(rs)
	return sec, nil
}

// sizeLabel is a size as the lab's other tables write it: 64 B, 16 KiB.
func sizeLabel(n int) string {
	if n >= 1024 && n%1024 == 0 {
		return fmt.Sprintf("%d KiB", n/1024)
	}
	return fmt.Sprintf("%d B", n)
}

func cell(r lab.Result) string {
	if r.N == 0 {
		return "not run"
	}
	return fmt.Sprintf("%s (%s–%s)", lab.FormatNumber(r.Median), lab.FormatNumber(r.P05), lab.FormatNumber(r.P95))
}

func answers(rs lab.Results) ([]string, []lab.Result) {
	var out []string
	var heads []lab.Result
	seal, okS := rs.Get(fieldRatio("seal", 500), "ratio")
	open, okO := rs.Get(fieldRatio("open", 500), "ratio")
	if okS && okO {
		w, _ := rs.Get(fieldCase("ward-java", "seal", 500), "time")
		out = append(out, fmt.Sprintf("A 500 B chat message: ward-java seals in %s ns, %s the JDK's bare AES-GCM; it opens in %s of the JDK's time (JMH).",
			lab.FormatNumber(w.Median), seal.RatioText(), open.RatioText()))
		heads = append(heads, seal, open)
	}
	if r, ok := rs.Get(passwordRatio, "ratio"); ok {
		sp, _ := rs.Get(passwordCase("springEncode"), "hash_latency")
		ow, _ := rs.Get(passwordCase("wardEncode"), "hash_latency")
		out = append(out, fmt.Sprintf("Spring's Argon2PasswordEncoder takes %s ms a hash; ward-java's encoder at the same parameters %s of it, %s ms at ward's default preset.",
			lab.FormatNumber(sp.Median), r.RatioText(), lab.FormatNumber(ow.Median)))
		heads = append(heads, r)
	}
	return out, heads // what did not run, the report lists itself
}

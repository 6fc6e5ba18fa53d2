package subjectlab

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wardlab/ward/lab"
)

// TestRunAndReport runs the scenario small and checks that every part is
// measured and reported.
func TestRunAndReport(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Argon2 at OWASP parameters")
	}
	env := lab.NewEnv("subject", true, nil, nil)
	env.Sampling = lab.Sampling{Samples: 3, Target: 2 * time.Millisecond}
	s := Scenario{Keys: 3000, ForgetSizes: []int{100, 2000}}
	if err := s.Run(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	rs := lab.Results(env.Results())
	for _, c := range []struct{ cas, metric string }{
		{ratioCase("seal"), "ratio"}, {ratioCase("open"), "ratio"}, {caseUnwrap, "time"}, {caseColdOpen, "time"},
		{"login/key-bearing-vs-plain", "ratio"}, {"login/private-vs-plain", "ratio"},
		{forgetCase(100), "time"}, {forgetCase(2000), "time"}, {resealCase(1), "rows_per_second"}, {resealCase(4), "rows_per_second"},
	} {
		r, ok := rs.Get(c.cas, c.metric)
		if !ok || !(r.Median > 0) {
			t.Errorf("%s %s: %+v", c.cas, c.metric, r)
		}
	}
	sec, err := s.Report(rs)
	if err != nil {
		t.Fatal(err)
	}
	if len(sec.Answer) != 4 || len(sec.Charts) != 1 || len(sec.Tables) != 1 || !strings.Contains(sec.Answer[2], "Forgetting a user") {
		t.Fatalf("section: %d answers %q, %d charts, %d tables", len(sec.Answer), sec.Answer, len(sec.Charts), len(sec.Tables))
	}
}

package peers

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// A JMH 1.37 result file, cut to two benchmarks: one of two forks, one
// with a single iteration (its error "NaN").
const jmhFixture = `[
  {"jmhVersion":"1.37","benchmark":"io.github.wardlab.ward.bench.FieldBench.rawOpen","mode":"avgt","threads":1,"forks":2,
   "params":{"keyring":"/tmp/kr.json","masterKey":"/tmp/mk.b64","size":"500"},
   "primaryMetric":{"score":2329.0007,"scoreError":120.5,"scoreConfidence":[1,2],"scoreUnit":"ns/op","rawData":[[3005.48,1652.51],[2400,2258]]}},
  {"jmhVersion":"1.37","benchmark":"io.github.wardlab.ward.bench.PasswordBench.springEncode","mode":"avgt","threads":1,"forks":1,
   "params":null,
   "primaryMetric":{"score":41.5,"scoreError":"NaN","scoreUnit":"ms/op","rawData":[[41.5]]}}
]`

func TestParseJMH(t *testing.T) {
	rs, err := parseJMH([]byte(jmhFixture))
	if err != nil || len(rs) != 2 {
		t.Fatalf("%v %+v", err, rs)
	}
	if r := rs[0]; r.Benchmark != "rawOpen" || r.Params["size"] != "500" || r.Score != 2329.0007 || r.Error != 120.5 ||
		r.Unit != "ns/op" || !slices.Equal(r.Samples, []float64{3005.48, 1652.51, 2400, 2258}) {
		t.Errorf("first: %+v", r)
	}
	if r := rs[1]; r.Benchmark != "springEncode" || !math.IsNaN(r.Error) || r.Unit != "ms/op" || len(r.Samples) != 1 {
		t.Errorf("second: %+v", r)
	}
	for _, bad := range []string{``, `{}`, `[{"benchmark":"x","primaryMetric":{"score":"NaN"}}]`, `[{"primaryMetric":{"score":1}}]`} {
		if _, err := parseJMH([]byte(bad)); err == nil {
			t.Errorf("%q: parsed", bad)
		}
	}
}

func TestJMHArgs(t *testing.T) {
	run := JMHRun{Include: "FieldBench", Params: map[string]string{"size": "64", "keyring": "/k"}, Forks: 2, Warmups: 1,
		Iterations: 3, Warmup: 300 * time.Millisecond, Measure: time.Second}
	args, err := jmhArgs(run, "/out.json")
	if err != nil {
		t.Fatal(err)
	}
	want := "FieldBench -f 2 -wi 1 -i 3 -r 1000ms -foe true -rf json -rff /out.json -w 300ms -p keyring=/k -p size=64"
	if got := strings.Join(args, " "); got != want {
		t.Errorf("args:\n%s\nwant\n%s", got, want)
	}
	run.Warmups = 0
	if args, _ := jmhArgs(run, "/o"); slices.Contains(args, "-w") {
		t.Errorf("no warm-up iterations, yet -w: %v", args)
	}
	for _, bad := range []JMHRun{{}, {Include: "x", Forks: 0, Iterations: 1, Measure: time.Second}, {Include: "x", Forks: 1, Iterations: 1},
		{Include: "x", Forks: 1, Iterations: 1, Measure: time.Second, Warmups: 1}} {
		if _, err := jmhArgs(bad, "/o"); err == nil {
			t.Errorf("%+v: accepted", bad)
		}
	}
}

package peers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// JMHRun is one run of ward's JMH benchmarks (java/ward-lab,
// io.github.wardlab.ward.bench): which benchmarks, their parameters, and
// JMH's own profile (forks, warm-up and measured iterations and their
// lengths).
type JMHRun struct {
	Include    string            // a regexp of benchmarks, "FieldBench"
	Params     map[string]string // -p NAME=VALUE
	Forks      int
	Warmups    int
	Iterations int
	Warmup     time.Duration // each warm-up iteration
	Measure    time.Duration // each measured iteration
}

// JMHResult is one benchmark at one set of parameters: JMH's score and
// error, and every measured iteration's score (of every fork).
type JMHResult struct {
	Benchmark string            // the method's name, "wardSeal"
	Params    map[string]string // its @Param values
	Score     float64
	Error     float64 // JMH's 99.9% half-interval; NaN with too few iterations
	Unit      string  // "ns/op", "ms/op"
	Samples   []float64
}

// jmhJSON is what JMH writes with -rf json.
type jmhJSON struct {
	Benchmark     string            `json:"benchmark"`
	Params        map[string]string `json:"params"`
	PrimaryMetric struct {
		Score      json.RawMessage `json:"score"`
		ScoreError json.RawMessage `json:"scoreError"`
		ScoreUnit  string          `json:"scoreUnit"`
		RawData    [][]float64     `json:"rawData"`
	} `json:"primaryMetric"`
}

// parseJMH reads JMH's JSON results; the benchmark is named by its method.
func parseJMH(b []byte) ([]JMHResult, error) {
	var in []jmhJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("peers: JMH's results are not its JSON: %w", err)
	}
	out := make([]JMHResult, 0, len(in))
	for _, r := range in {
		score, err := jmhNumber(r.PrimaryMetric.Score)
		if err != nil || r.Benchmark == "" || math.IsNaN(score) {
			return nil, fmt.Errorf("peers: a JMH result without a benchmark or a score")
		}
		res := JMHResult{Benchmark: r.Benchmark[strings.LastIndexByte(r.Benchmark, '.')+1:], Params: r.Params,
			Score: score, Unit: r.PrimaryMetric.ScoreUnit}
		if res.Error, err = jmhNumber(r.PrimaryMetric.ScoreError); err != nil {
			res.Error = math.NaN()
		}
		for _, fork := range r.PrimaryMetric.RawData {
			res.Samples = append(res.Samples, fork...)
		}
		out = append(out, res)
	}
	return out, nil
}

// jmhNumber reads a number JMH wrote, or the string "NaN" it writes for
// an error it could not compute (a single iteration).
func jmhNumber(raw json.RawMessage) (float64, error) {
	return strconv.ParseFloat(strings.Trim(string(raw), `"`), 64)
}

// jmhArgs is JMH's command line for run, writing its results to file.
func jmhArgs(run JMHRun, file string) ([]string, error) {
	if run.Include == "" || run.Forks < 1 || run.Iterations < 1 || run.Warmups < 0 || run.Measure <= 0 || (run.Warmups > 0 && run.Warmup <= 0) {
		return nil, errors.New("peers: a JMH run needs benchmarks, forks, iterations and their lengths")
	}
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + "ms" }
	args := []string{run.Include, "-f", strconv.Itoa(run.Forks), "-wi", strconv.Itoa(run.Warmups), "-i", strconv.Itoa(run.Iterations),
		"-r", ms(run.Measure), "-foe", "true", "-rf", "json", "-rff", file}
	if run.Warmups > 0 {
		args = append(args, "-w", ms(run.Warmup))
	}
	for _, k := range slices.Sorted(maps.Keys(run.Params)) {
		args = append(args, "-p", k+"="+run.Params[k])
	}
	return args, nil
}

// JMH runs ward's JMH benchmarks from $WARD_JAVA_CLASSPATH (java/ward-lab's
// target/lib, which holds JMH and the benchmarks): JMH forks its own JVMs
// on that class path.
func (r *Runner) JMH(ctx context.Context, run JMHRun) ([]JMHResult, error) {
	const peer = "java/ward-lab (JMH)"
	cp := os.Getenv(JavaEnv)
	if cp == "" {
		return nil, &MissingError{Peer: peer, Need: "ward's JVM modules (java/)", Install: installWardJava}
	}
	java, err := need(peer, "java", installJDK)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(r.dir, fmt.Sprintf("jmh-%d.json", time.Now().UnixNano()))
	args, err := jmhArgs(run, file)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, java, append([]string{"-cp", cp, "org.openjdk.jmh.Main"}, args...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("peers: JMH %s: %w: %s", run.Include, err, tail(string(b), 600))
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("peers: JMH wrote no results: %w", err)
	}
	return parseJMH(b)
}

// tail is the last n bytes of s, where a failing JVM prints why.
func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return strings.TrimSpace(s)
}

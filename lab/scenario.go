package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// A Scenario is one experiment of the lab, usually reproducing a field
// report's. It owns everything about itself: what it measures, the cases
// it names (typed keys shared by Run and Report), the field report's own
// figures, and its section of the report. The registry is package
// lab/scenarios.
type Scenario interface {
	// Name is the scenario's command-line name, such as "aead".
	Name() string
	// Title names the topic, as the report's section title.
	Title() string
	// Question is one sentence saying what the scenario answers.
	Question() string
	// Run measures and records results through env.
	Run(ctx context.Context, env *Env) error
	// Report builds the scenario's section from its results (of this
	// run, or read back from a results folder).
	Report(rs Results) (Section, error)
}

// ChildScenario is a Scenario with a part that must run in a separate
// process, for example under a different GODEBUG setting. The parent
// calls [Env.RunChild]; the child process calls RunChild.
type ChildScenario interface {
	Scenario
	RunChild(ctx context.Context, env *Env, args []string) error
}

// Env is what a running scenario sees: its profile, progress reporting and
// where its results go.
type Env struct {
	// Quick selects the short profile.
	Quick bool
	// Sampling is the measurement profile for Measure.
	Sampling Sampling
	// Log receives human-readable progress lines (never results).
	Log io.Writer
	// Options carries scenario-specific settings from the command line,
	// such as "kms" (a KMS URL to measure instead of a local one).
	Options map[string]string
	// OutDir is the results folder, for scenarios that write extra files
	// (such as per-run CSVs). Empty means none is kept.
	OutDir string

	scenario string
	results  []Result
	progress func(done, total int)
}

// NewEnv returns an Env for running scenario name.
func NewEnv(name string, quick bool, log io.Writer, progress func(done, total int)) *Env {
	s := FullSampling
	if quick {
		s = QuickSampling
	}
	if log == nil {
		log = io.Discard
	}
	return &Env{Quick: quick, Sampling: s, Log: log, scenario: name, progress: progress}
}

// Record adds results; Scenario fields left empty are filled in.
func (e *Env) Record(rs ...Result) {
	for _, r := range rs {
		if r.Scenario == "" {
			r.Scenario = e.scenario
		}
		if r.Params == nil {
			r.Params = map[string]any{}
		}
		e.results = append(e.results, r)
	}
}

// Results returns everything recorded so far.
func (e *Env) Results() []Result { return e.results }

// Progress reports that done of total steps are finished.
func (e *Env) Progress(done, total int) {
	if e.progress != nil {
		e.progress(done, total)
	}
}

// ChildEnv is the environment variable that turns a ward process into a
// scenario's child. Its value is the scenario name.
const ChildEnv = "WARD_LAB_CHILD"

// RunChild runs this scenario's child part in a new process of the current
// executable, with extra environment variables (such as
// "GODEBUG=cpu.aes=off") and arguments, and returns the results it
// recorded.
func (e *Env) RunChild(ctx context.Context, extraEnv []string, args ...string) ([]Result, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("lab: finding own executable: %w", err)
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(append(os.Environ(), ChildEnv+"="+e.scenario, childQuickEnv+"="+fmt.Sprint(e.Quick)), extraEnv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("lab: %s child (%s): %w: %s", e.scenario, strings.Join(extraEnv, " "), err, strings.TrimSpace(errb.String()))
	}
	var rs []Result
	if err := json.Unmarshal(out.Bytes(), &rs); err != nil {
		return nil, fmt.Errorf("lab: %s child output: %w", e.scenario, err)
	}
	return rs, nil
}

const childQuickEnv = "WARD_LAB_CHILD_QUICK"

// ServeChild runs a scenario's child part if this process was started by
// [Env.RunChild], writing its results as JSON to stdout, and reports
// whether it did. Call it first in main (and in TestMain of packages that
// run scenarios), before anything else writes to stdout.
func ServeChild(ctx context.Context, scenarios []Scenario, args []string) (bool, error) {
	name := os.Getenv(ChildEnv)
	if name == "" {
		return false, nil
	}
	for _, s := range scenarios {
		cs, ok := s.(ChildScenario)
		if !ok || s.Name() != name {
			continue
		}
		env := NewEnv(name, os.Getenv(childQuickEnv) == "true", os.Stderr, nil)
		if err := cs.RunChild(ctx, env, args); err != nil {
			return true, err
		}
		return true, json.NewEncoder(os.Stdout).Encode(env.Results())
	}
	return true, errors.New("lab: no child scenario named " + name)
}

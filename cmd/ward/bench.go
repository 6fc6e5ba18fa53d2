package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/report"
	aeadlab "github.com/wardlab/ward/lab/scenarios/aead"
	chatlab "github.com/wardlab/ward/lab/scenarios/chat"
	handshakelab "github.com/wardlab/ward/lab/scenarios/handshake"
	kmslab "github.com/wardlab/ward/lab/scenarios/kms"
	passwordlab "github.com/wardlab/ward/lab/scenarios/password"
	tlslab "github.com/wardlab/ward/lab/scenarios/tls"
)

// scenarios lists the lab's scenarios in the order `ward bench` runs them.
func scenarios() []lab.Scenario {
	return []lab.Scenario{aeadlab.Scenario{}, passwordlab.Scenario{}, kmslab.Scenario{}, handshakelab.Scenario{}, tlslab.Scenario{}, chatlab.Scenario{}}
}

type benchOptions struct {
	quick, quiet, list bool
	out, kms           string
}

func (a *app) newBenchCmd() *cobra.Command {
	var o benchOptions
	cmd := &cobra.Command{
		Use:   "bench [scenario...]",
		Short: "Run the lab: reproduce the seeds' experiments on this machine",
		Long: `Run the lab's scenarios (all, or those named) and write results.csv,
results.json, manifest.json, an HTML report (report.html) and a Markdown
summary (summary.md) into --out. --quick runs a short profile that
finishes in a few minutes on 2 cores; the default is the full profile.`,
		RunE: func(cmd *cobra.Command, args []string) error { return a.bench(cmd, args, &o) },
	}
	f := cmd.Flags()
	f.BoolVar(&o.quick, "quick", false, "short profile (fewer samples)")
	f.StringVar(&o.out, "out", "bench-out", "results folder")
	f.BoolVar(&o.quiet, "quiet", false, "no progress output")
	f.BoolVar(&o.list, "list", false, "list scenarios and exit")
	f.StringVar(&o.kms, "kms", "", "scenario kms: measure this KMS URL (e.g. awskms://alias/NAME?region=R) instead of a local one")
	return cmd
}

func (a *app) bench(cmd *cobra.Command, names []string, o *benchOptions) error {
	all := scenarios()
	if o.list {
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		for _, s := range all {
			fmt.Fprintf(tw, "%s\t%s\n", s.Name(), s.Description())
		}
		return tw.Flush()
	}
	run := all
	if len(names) > 0 {
		run = nil
		for _, n := range names {
			i := slices.IndexFunc(all, func(s lab.Scenario) bool { return s.Name() == n })
			if i < 0 {
				var known []string
				for _, s := range all {
					known = append(known, s.Name())
				}
				return usage(fmt.Errorf("unknown scenario %q", n), "scenarios: "+strings.Join(known, ", "))
			}
			run = append(run, all[i])
		}
	}
	profile := "full"
	if o.quick {
		profile = "quick"
	}
	var ran []string
	for _, s := range run {
		ran = append(ran, s.Name())
	}
	manifest := lab.NewManifest(profile, ran)
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	var results []lab.Result
	for _, s := range run {
		start := time.Now()
		bar := newProgress(a.stderr, s.Name(), 100, o.quiet)
		log := a.stderr
		if o.quiet {
			log = nil
		}
		env := lab.NewEnv(s.Name(), o.quick, log, bar.set)
		env.OutDir = o.out
		env.Options = map[string]string{"kms": o.kms}
		err := s.Run(cmd.Context(), env)
		bar.finish()
		if err != nil {
			return fmt.Errorf("bench %s: %w", s.Name(), err)
		}
		results = append(results, env.Results()...)
		if !o.quiet {
			fmt.Fprintf(a.stderr, "%s: %d results in %s\n", s.Name(), len(env.Results()), time.Since(start).Round(time.Second))
		}
	}
	if err := lab.WriteDir(o.out, manifest, results); err != nil {
		return err
	}
	htmlPath, mdPath, err := report.Write(o.out, manifest, results)
	if err != nil {
		return err
	}
	a.printSummary(results)
	fmt.Fprintf(a.stdout, "\nresults: %s/%s, %s, %s\nsummary: %s\nreport:  %s\n", o.out, lab.ResultsCSV, lab.ResultsJSON, lab.ManifestJSON, mdPath, htmlPath)
	return nil
}

// printSummary prints each scenario's headline rows: derived ratios and
// seed quotes.
func (a *app) printSummary(results []lab.Result) {
	if len(results) == 0 {
		return
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tCASE\tMETRIC\tMEDIAN\tSOURCE")
	for _, r := range results {
		if !isHeadline(r) {
			continue
		}
		src := "here"
		if r.Source != "" {
			src = r.Source
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.4g %s\t%s\n", r.Scenario, r.Case, r.Metric, r.Median, r.Unit, src)
	}
	tw.Flush()
}

func isHeadline(r lab.Result) bool {
	if r.Source != "" {
		return true
	}
	switch r.Metric {
	case "hash_latency", "burst_vs_ideal", "ratio", "speedup", "overhead":
		return true
	case "burst_time":
		return r.Params["concurrent"] == 10
	case "hw_speedup", "field_overhead":
		size, _ := r.Params["size"].(int)
		return size == 500 || size == 1<<20
	}
	return false
}

func (a *app) newReportCmd() *cobra.Command {
	var compare bool
	cmd := &cobra.Command{
		Use:   "report DIR | report --compare DIR_A DIR_B",
		Short: "Rebuild the HTML report of a results folder, or compare two runs",
		Long: `Rebuild report.html and summary.md from a results folder written by
'ward bench' (on this machine or another), or with --compare print, for every
case measured in both, the ratio of B's median to A's.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if compare {
				if len(args) != 2 {
					return usage(errors.New("--compare takes two results folders"), "")
				}
				ma, ra, err := lab.ReadDir(args[0])
				if err != nil {
					return usage(err, "")
				}
				mb, rb, err := lab.ReadDir(args[1])
				if err != nil {
					return usage(err, "")
				}
				cs := report.Compare(ra, rb)
				if len(cs) == 0 {
					return usage(errors.New("the two folders share no measured case"), "")
				}
				return report.WriteComparison(a.stdout, ma, mb, cs)
			}
			if len(args) != 1 {
				return usage(errors.New("report takes one results folder"), "")
			}
			h, m, err := report.Rebuild(args[0])
			if err != nil {
				return usage(err, "")
			}
			fmt.Fprintf(a.stdout, "summary: %s\nreport:  %s\n", m, h)
			return nil
		},
	}
	cmd.Flags().BoolVar(&compare, "compare", false, "compare two results folders")
	return cmd
}

package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/wardlab/ward/internal/cli"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/report"
	"github.com/wardlab/ward/lab/scenarios"
)

type benchOptions struct {
	quick, quiet, list bool
	out, kms           string
}

func (a *app) newBenchCmd() *cobra.Command {
	var o benchOptions
	cmd := &cobra.Command{
		Use:   "bench [scenario...]",
		Short: "Run the lab: reproduce the field reports' experiments on this machine",
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
	all := scenarios.All()
	if o.list {
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		for _, s := range all {
			fmt.Fprintf(tw, "%s\t%s\n", s.Name(), s.Question())
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
				return cli.Usage(fmt.Errorf("unknown scenario %q", n), "scenarios: "+strings.Join(known, ", "))
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
	eta := newETA(run, o.quick)
	for _, s := range run {
		rs, r, err := a.runScenario(cmd, s, o)
		if err != nil {
			return err
		}
		results = append(results, rs...)
		manifest.Runs = append(manifest.Runs, r)
		if !o.quiet {
			a.printProgress(s.Name(), rs, eta.done(s.Name(), r.Seconds))
		}
	}
	if err := lab.WriteDir(o.out, manifest, results); err != nil {
		return err
	}
	rep, err := report.New(manifest, results, all)
	if err != nil {
		return err
	}
	htmlPath, mdPath, err := rep.Write(o.out)
	if err != nil {
		return err
	}
	a.printHeadlines(rep.Headlines())
	fmt.Fprintf(a.stdout, "\nresults: %s/%s, %s, %s\nsummary: %s\nreport:  %s\n", o.out, lab.ResultsCSV, lab.ResultsJSON, lab.ManifestJSON, mdPath, htmlPath)
	return nil
}

// runScenario runs one scenario with a progress bar, noting how busy the
// machine was before and after.
func (a *app) runScenario(cmd *cobra.Command, s lab.Scenario, o *benchOptions) ([]lab.Result, lab.ScenarioRun, error) {
	start, before := time.Now(), lab.ReadLoad()
	bar := cli.NewProgress(a.stderr, s.Name(), 100, o.quiet)
	log := a.stderr
	if o.quiet {
		log = nil
	}
	env := lab.NewEnv(s.Name(), o.quick, log, bar.Set)
	env.OutDir = o.out
	env.Options = map[string]string{"kms": o.kms}
	err := s.Run(cmd.Context(), env)
	bar.Finish()
	if err != nil {
		return nil, lab.ScenarioRun{}, fmt.Errorf("bench %s: %w", s.Name(), err)
	}
	if !o.quiet {
		fmt.Fprintf(a.stderr, "%s: %d results in %s\n", s.Name(), len(env.Results()), time.Since(start).Round(time.Second))
	}
	return env.Results(), lab.Run(s.Name(), before, lab.ReadLoad()), nil
}

// printProgress prints, as soon as a scenario ends, its first-screen
// answer and how long the rest of the run should take.
func (a *app) printProgress(name string, rs []lab.Result, left time.Duration) {
	if lead := report.Lead(name, rs); lead != "" {
		fmt.Fprintf(a.stderr, "%s: %s\n", name, lead)
	}
	if left > 0 {
		fmt.Fprintf(a.stderr, "about %s left\n", left.Round(5*time.Second))
	}
}

// printHeadlines prints each section's headline results with their
// spread.
func (a *app) printHeadlines(rs []lab.Result) {
	if len(rs) == 0 {
		return
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tCASE\tMETRIC\tMEDIAN\tP05–P95\tSOURCE")
	for _, r := range rs {
		src := "here"
		if r.Source != "" {
			src = r.Source
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s %s\t%s\t%s\n", r.Scenario, r.Case, r.Metric, lab.FormatNumber(r.Median), r.Unit, r.Spread(), src)
	}
	tw.Flush()
}

func (a *app) newReportCmd() *cobra.Command {
	var compare bool
	cmd := &cobra.Command{
		Use:   "report DIR | report --compare DIR_A DIR_B",
		Short: "Rebuild the HTML report of a results folder, or compare two runs",
		Long: `Rebuild report.html and summary.md from a results folder written by
'ward-lab bench' (on this machine or another), or with --compare print, for every
case measured in both, the ratio of B's median to A's.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if compare {
				if len(args) != 2 {
					return cli.Usage(errors.New("--compare takes two results folders"), "")
				}
				ma, ra, err := lab.ReadDir(args[0])
				if err != nil {
					return cli.Usage(err, "")
				}
				mb, rb, err := lab.ReadDir(args[1])
				if err != nil {
					return cli.Usage(err, "")
				}
				cs := report.Compare(ra, rb)
				if len(cs) == 0 {
					return cli.Usage(errors.New("the two folders share no measured case"), "")
				}
				return report.WriteComparison(a.stdout, ma, mb, cs)
			}
			if len(args) != 1 {
				return cli.Usage(errors.New("report takes one results folder"), "")
			}
			h, m, err := report.Rebuild(args[0], scenarios.All())
			if err != nil {
				return cli.Usage(err, "")
			}
			fmt.Fprintf(a.stdout, "summary: %s\nreport:  %s\n", m, h)
			return nil
		},
	}
	cmd.Flags().BoolVar(&compare, "compare", false, "compare two results folders")
	return cmd
}

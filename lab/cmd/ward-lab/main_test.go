package main

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/wardlab/ward/internal/cli"
	"github.com/wardlab/ward/internal/cli/clitest"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/lab/scenarios"
)

func TestMain(m *testing.M) {
	// A lab child started by `ward-lab bench` inside a script re-executes
	// this test binary; serve it before anything else.
	if served, err := lab.ServeChild(context.Background(), scenarios.All(), os.Args[1:]); served {
		if err != nil {
			fmt.Fprintln(os.Stderr, "ward-lab: error:", err)
			os.Exit(cli.ExitUsage)
		}
		os.Exit(0)
	}
	testscript.Main(m, map[string]func(){
		"ward-lab": main,
	})
}

// TestScripts runs the real ward-lab binary on the scripts in testdata/script.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/script"})
}

// flagTests names, for every flag of ward-lab, a test that sets it and
// asserts an effect that differs from the default. TestFlagTable keeps it
// complete.
var flagTests = map[string]string{
	"ward-lab bench --kms":      "testdata/script/bench.txtar",
	"ward-lab bench --list":     "testdata/script/bench.txtar",
	"ward-lab bench --out":      "testdata/script/bench.txtar",
	"ward-lab bench --quick":    "testdata/script/bench.txtar",
	"ward-lab bench --quiet":    "testdata/script/bench.txtar",
	"ward-lab report --compare": "testdata/script/bench.txtar",
}

// TestFlagTable: every flag of ward-lab has an entry in flagTests naming a
// script with a line that sets it, and every entry names a flag that
// exists.
func TestFlagTable(t *testing.T) {
	clitest.FlagTable(t, (&app{}).newRootCmd(), flagTests, ".")
}

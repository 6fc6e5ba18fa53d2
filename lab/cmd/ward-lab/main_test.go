package main

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/wardlab/ward/internal/cli"

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

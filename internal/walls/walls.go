// Package walls states the walls between ward's modules and checks them:
// which packages the library may import, and which packages the operator
// CLI must never link. The tests of the library module and of cmd/ward
// call it; CONTRIBUTING.md ("Modules and walls") gives the reasons.
package walls

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Package is one package as go list describes it.
type Package struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Doc        string // the package comment's first sentence
}

// List runs go list on patterns in dir and returns the packages; with
// deps, every package they depend on too. It uses the go command of the
// running toolchain.
func List(dir string, deps bool, patterns ...string) ([]Package, error) {
	args := []string{"list", "-json=ImportPath,Standard,Imports,Doc"}
	if deps {
		args = append(args, "-deps")
	}
	//lint:ignore SA1019 the go command of the toolchain that built this test, not one on PATH
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), append(args, patterns...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("walls: go list %s: %v\n%s", strings.Join(patterns, " "), err, stderr.Bytes())
	}
	var pkgs []Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p Package
		if err := dec.Decode(&p); err == io.EOF {
			return pkgs, nil
		} else if err != nil {
			return nil, fmt.Errorf("walls: go list output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
}

// MaxCLIMiB is the most the operator CLI (cmd/ward) may weigh, in MiB,
// built with a plain go build.
const MaxCLIMiB = 30

// MaxLibraryRequirements is the most direct requirements the library
// module may list in its tidy go.mod, test requirements included.
const MaxLibraryRequirements = 8

// DirectRequirements returns the module paths the go.mod in dir requires
// directly (not marked // indirect).
func DirectRequirements(dir string) ([]string, error) {
	//lint:ignore SA1019 the go command of the toolchain that built this test, not one on PATH
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "mod", "edit", "-json")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("walls: go mod edit -json: %w", err)
	}
	var mod struct {
		Require []struct {
			Path     string
			Indirect bool
		}
	}
	if err := json.Unmarshal(out, &mod); err != nil {
		return nil, fmt.Errorf("walls: go.mod: %w", err)
	}
	var direct []string
	for _, r := range mod.Require {
		if !r.Indirect {
			direct = append(direct, r.Path)
		}
	}
	return direct, nil
}

// Module is ward's root module, the library.
const Module = "github.com/wardlab/ward"

// LibraryAllowed are the import-path prefixes a library package may import
// besides the standard library and other library packages: the library
// module's requirements. Anything else (a database driver, the lab, a
// provider with its SDK) belongs in another module.
var LibraryAllowed = []string{
	"golang.org/x/crypto/",
	"golang.org/x/sys/",
	"golang.org/x/text/",
	"golang.org/x/time/",
	"github.com/hashicorp/golang-lru/v2/",
}

// Library are the library's packages: what applications import. Every
// other package of the root module is plumbing for ward's binaries and
// tests (Plumbing).
var Library = []string{
	Module + "/keyring",
	Module + "/field",
	Module + "/ledger",
	Module + "/field/reseal",
	Module + "/fleet",
	Module + "/fleetgate",
	Module + "/field/subject",
	Module + "/lifecycle",
	Module + "/forgetlog",
	Module + "/internal/sqltable",
	Module + "/internal/keycore",
	Module + "/internal/boundfile",
	Module + "/internal/printable",
	Module + "/password",
	Module + "/password/internal/argon2",
	Module + "/kms",
	Module + "/kms/local",
	Module + "/kms/kmsurl",
	Module + "/kms/plugin",
	Module + "/observe",
}

// Plumbing are the root module's packages that are not library: public
// helpers a program beside the library uses (dburl opens databases and
// scrubs their passwords from output, conncap caps a server's
// connections: ward's binaries and the examples import them, and so can
// an adopter's program), and internal helpers of ward's binaries, the lab
// and tests. Library packages must not import them.
var Plumbing = []string{
	Module + "/conncap",
	Module + "/contrib/internal/ormkit",
	Module + "/contrib/internal/recordedtest",
	Module + "/dburl",
	Module + "/internal/dbtest",
	Module + "/internal/golden",
	Module + "/internal/killtest",
	Module + "/internal/mytest",
	Module + "/internal/myserver",
	Module + "/internal/myurl",
	Module + "/internal/pgcluster",
	Module + "/internal/pgtest",
	Module + "/internal/walls",
	Module + "/kms/plugin/plugintest",
}

// LibraryViolations returns, for the library packages among pkgs, every
// import that is neither standard, nor another library package, nor under
// LibraryAllowed, and every root-module package that is neither Library nor
// Plumbing (a new package must be placed on one side of the wall).
func LibraryViolations(pkgs []Package) []string {
	std := map[string]bool{}
	for _, p := range pkgs {
		if p.Standard {
			std[p.ImportPath] = true
		}
	}
	isLib := func(path string) bool { return contains(Library, path) }
	var out []string
	for _, p := range pkgs {
		if p.Standard || !strings.HasPrefix(p.ImportPath, Module+"/") {
			continue
		}
		if !isLib(p.ImportPath) {
			if !contains(Plumbing, p.ImportPath) {
				out = append(out, fmt.Sprintf("%s is neither library nor plumbing: add it to walls.Library or walls.Plumbing", p.ImportPath))
			}
			continue
		}
		for _, imp := range p.Imports {
			if std[imp] || isStd(imp) || isLib(imp) || hasPrefix(LibraryAllowed, imp) {
				continue
			}
			out = append(out, fmt.Sprintf("%s imports %s, outside the library's allow-list", p.ImportPath, imp))
		}
	}
	return out
}

// CLIForbidden are the import-path prefixes the operator CLI (cmd/ward)
// must never link: the lab and its instruments, the PQ protocols'
// module, the examples, test doubles, emulators, proxies, plotting and
// browsers.
var CLIForbidden = []string{
	Module + "/lab",
	Module + "/pq",
	Module + "/examples",
	Module + "/integration",
	Module + "/internal/localkms",
	Module + "/internal/browsertest",
	Module + "/internal/pgcluster",
	Module + "/contrib",
	"github.com/nsmithuk/local-kms",
	"github.com/Shopify/toxiproxy",
	"github.com/prometheus/",
	"github.com/rs/zerolog",
	"github.com/sirupsen/logrus",
	"github.com/chromedp/",
	"gonum.org/v1/plot",
	"golang.org/x/perf",
	"github.com/cloudflare/circl",
}

// ForbiddenDeps returns the packages among deps (go list -deps of a
// binary) that match a forbidden prefix.
func ForbiddenDeps(deps []Package, forbidden []string) []string {
	var out []string
	for _, p := range deps {
		if !p.Standard && hasPrefix(forbidden, p.ImportPath) {
			out = append(out, p.ImportPath)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// hasPrefix reports whether path is one of prefixes, or lies under one (a
// prefix ending in "/" matches what starts with it).
func hasPrefix(prefixes []string, path string) bool {
	for _, p := range prefixes {
		if path == strings.TrimSuffix(p, "/") || strings.HasPrefix(path, strings.TrimSuffix(p, "/")+"/") {
			return true
		}
	}
	return false
}

// isStd reports whether an import path looks like the standard library's
// (no dot in its first element), for imports go list did not describe.
func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// MayImportKeyring are the packages under internal/ that may import
// package keyring: test helpers, which read vectors through the public
// API. Every other internal package is mechanism under the library
// (internal/keycore is keyring's) or plumbing beside it, and an import
// back up the layers is what the typed core replaced.
var MayImportKeyring = []string{Module + "/internal/golden"}

// UpwardImports returns the packages among pkgs under the root module's
// internal/ that import package keyring, outside MayImportKeyring.
func UpwardImports(pkgs []Package) []string {
	var out []string
	for _, p := range pkgs {
		if !strings.HasPrefix(p.ImportPath, Module+"/internal/") || contains(MayImportKeyring, p.ImportPath) {
			continue
		}
		if contains(p.Imports, Module+"/keyring") {
			out = append(out, fmt.Sprintf("%s imports %s/keyring: internal packages sit below the library (use internal/keycore)", p.ImportPath, Module))
		}
	}
	return out
}

// ExampleImports returns, among pkgs, every import of a root-module
// internal/ package by a package under examples/: adopters copy the
// examples into modules of their own, where such an import does not
// build ("use of internal package … not allowed").
func ExampleImports(pkgs []Package) []string {
	var out []string
	for _, p := range pkgs {
		if !strings.HasPrefix(p.ImportPath, Module+"/examples/") {
			continue
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, Module+"/internal/") {
				out = append(out, fmt.Sprintf("%s imports %s: an example uses only what a module outside ward can import", p.ImportPath, imp))
			}
		}
	}
	return out
}

package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// DeprecatedFlag is the annotation (pflag.FlagSet.SetAnnotation) of a flag
// kept for one release that does nothing but warn.
const DeprecatedFlag = "ward-deprecated"

// Flags lists every flag a command tree defines, as "PATH --NAME" (the
// command's path, then the flag), once where it is defined: a persistent
// flag under the command that declares it. Cobra's own help and
// completion flags are left out.
func Flags(root *cobra.Command) []string {
	var out []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		add := func(f *pflag.Flag) {
			if _, dep := f.Annotations[DeprecatedFlag]; f.Name != "help" && !dep {
				out = append(out, c.CommandPath()+" --"+f.Name)
			}
		}
		c.LocalNonPersistentFlags().VisitAll(add)
		c.PersistentFlags().VisitAll(add)
		for _, sub := range c.Commands() {
			// A hidden command is a deprecated name of another (same flags,
			// same code): the new name's entries cover it.
			if sub.Name() != "help" && sub.Name() != "completion" && !sub.Hidden {
				walk(sub)
			}
		}
	}
	walk(root)
	sort.Strings(out)
	return out
}

// UncoveredFlags checks a binary's table of flag tests: each flag of
// Flags(root) must have an entry naming either a Go test of dir
// ("TestName", whose body must mention the flag as --NAME) or a script
// under dir ("testdata/script/x.txtar", which must mention it). Every
// entry must name a flag that exists. It returns what is wrong.
func UncoveredFlags(root *cobra.Command, table map[string]string, dir string) ([]string, error) {
	src, err := testSources(dir)
	if err != nil {
		return nil, err
	}
	var bad []string
	flags := Flags(root)
	for _, f := range flags {
		proof, ok := table[f]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: no entry in the flag table (name a test that sets it and asserts its effect)", f))
			continue
		}
		body, err := proofBody(dir, src, proof)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", f, err))
		} else if !setsFlag(body, f) {
			bad = append(bad, fmt.Sprintf("%s: %s never sets it (no line names the command and the flag)", f, proof))
		}
	}
	for f := range table {
		if !contains(flags, f) {
			bad = append(bad, fmt.Sprintf("%s: in the flag table, but no such flag", f))
		}
	}
	sort.Strings(bad)
	return bad, nil
}

// setsFlag reports whether a line of body names the flag of f ("ward
// reseal --batch") with every word of its command path but the binary's
// name: a script's "exec ward reseal … --batch 5", or a Go test's
// run("reseal", …, "--batch", "5").
func setsFlag(body, f string) bool {
	words := strings.Fields(f)
	flag := regexp.MustCompile(regexp.QuoteMeta(words[len(words)-1]) + `([^A-Za-z0-9-]|$)`)
	cmds := words[1 : len(words)-1]
	for _, line := range strings.Split(body, "\n") {
		if !flag.MatchString(line) {
			continue
		}
		ok := true
		for _, w := range cmds {
			if !regexp.MustCompile(`(^|[^A-Za-z0-9-])` + regexp.QuoteMeta(w) + `([^A-Za-z0-9-]|$)`).MatchString(line) {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// testSources concatenates the _test.go files of dir.
func testSources(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		b.Write(data)
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// proofBody returns the text of a script, or of a Go test's function.
func proofBody(dir, src, proof string) (string, error) {
	if strings.Contains(proof, "/") {
		data, err := os.ReadFile(filepath.Join(dir, proof))
		return string(data), err
	}
	i := strings.Index(src, "\nfunc "+proof+"(")
	if i < 0 {
		return "", fmt.Errorf("no test %s in %s", proof, dir)
	}
	body := src[i+1:]
	if j := strings.Index(body, "\n}\n"); j >= 0 {
		body = body[:j]
	}
	return body, nil
}

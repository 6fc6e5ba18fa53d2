package cli

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// DocCommand is one command line a document shows.
type DocCommand struct {
	File string
	Line int
	Text string   // the line as written
	Args []string // the arguments after the binary's name, as read by DocCommands
}

func (c DocCommand) String() string { return fmt.Sprintf("%s:%d: %s", c.File, c.Line, c.Text) }

// DocCommands extracts, from the fenced code blocks of files, every line
// that runs bin ("./bin …", or "bin …" after a pipe or at the start), with
// its arguments: a trailing comment cut, a redirection or a further pipe
// ended, an optional part in brackets kept, the first of alternatives
// ("a|b", "[X | --y Y]"), and "…" or "..." dropped. Placeholders (URL,
// KEY-ID, "$VAR") are kept as they are.
func DocCommands(bin string, files ...string) ([]DocCommand, error) {
	var out []DocCommand
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		fence, n := false, 0
		for sc.Scan() {
			n++
			line := sc.Text()
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fence = !fence
				continue
			}
			if !fence {
				continue
			}
			if args, ok := commandArgs(bin, line); ok {
				out = append(out, DocCommand{File: file, Line: n, Text: strings.TrimSpace(line), Args: args})
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// commandArgs finds bin's invocation in a shell line and reads its
// arguments.
func commandArgs(bin, line string) ([]string, bool) {
	if i := strings.Index(line, " #"); i >= 0 {
		line = line[:i]
	}
	toks := strings.Fields(line)
	start := -1
	for i, t := range toks {
		if (t == "./"+bin || t == bin) && (i == 0 || toks[i-1] == "|" || toks[i-1] == "&&") {
			start = i + 1
			break
		}
	}
	if start < 0 {
		return nil, false
	}
	var args []string
	depth, skip := 0, false
	for _, t := range toks[start:] {
		if depth == 0 && (t == "|" || t == ">" || t == "<" || t == "&&" || t == ";") {
			break
		}
		opens, closes := strings.Count(t, "["), strings.Count(t, "]")
		t = strings.NewReplacer("[", "", "]", "").Replace(t)
		switch {
		case t == "|": // alternatives inside brackets: keep the first
			skip = true
		case t == "…" || t == "..." || t == "":
		case !skip:
			if i := strings.Index(t, "|"); i > 0 {
				t = t[:i]
			}
			args = append(args, strings.TrimSuffix(t, "..."))
		}
		depth += opens - closes
		if depth == 0 {
			skip = false
		}
	}
	return args, true
}

var placeholder = regexp.MustCompile(`^(["']?\$|[A-Z][A-Z0-9_-]*$|[A-Z][A-Z0-9_-]*=)`)

// CheckDocCommand checks a command line of the documentation against the
// command tree: its words name a command that runs (not a group), every
// --flag is one of that command's, and every value that is not a
// placeholder parses as the flag's type.
func CheckDocCommand(root *cobra.Command, c DocCommand) error {
	cmd, rest, err := root.Find(c.Args)
	if err != nil {
		return fmt.Errorf("%v: %w", c, err)
	}
	if !cmd.Runnable() {
		return fmt.Errorf("%v: %q is a group of commands, not a command", c, cmd.CommandPath())
	}
	if cmd.Deprecated != "" || cmd.Hidden {
		return fmt.Errorf("%v: %q is deprecated", c, cmd.CommandPath())
	}
	flags := pflag.NewFlagSet("", pflag.ContinueOnError)
	flags.AddFlagSet(cmd.Flags())
	flags.AddFlagSet(cmd.InheritedFlags())
	for i := 0; i < len(rest); i++ {
		name, value, hasValue := strings.Cut(strings.TrimPrefix(rest[i], "--"), "=")
		if !strings.HasPrefix(rest[i], "--") {
			continue // a positional argument
		}
		f := flags.Lookup(name)
		if f == nil {
			return fmt.Errorf("%v: %s has no flag --%s", c, cmd.CommandPath(), name)
		}
		if _, dep := f.Annotations[DeprecatedFlag]; dep || f.Deprecated != "" {
			return fmt.Errorf("%v: --%s is deprecated", c, name)
		}
		if f.Value.Type() == "bool" && !hasValue {
			continue
		}
		if !hasValue {
			if i+1 >= len(rest) {
				return fmt.Errorf("%v: --%s needs a value", c, name)
			}
			i++
			value = rest[i]
		}
		if !placeholder.MatchString(value) {
			if err := f.Value.Set(strings.Trim(value, `'"`)); err != nil {
				return fmt.Errorf("%v: --%s %s: %w", c, name, value, err)
			}
		}
	}
	return nil
}

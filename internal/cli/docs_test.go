package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestDocCommands: command lines are read out of code blocks, with their
// optional parts, first alternatives and placeholders; each is checked
// against a command tree, which catches an unknown command, a group, an
// unknown or deprecated flag and a value of the wrong type.
func TestDocCommands(t *testing.T) {
	doc := "text ./bin run --n 5\n```sh\n" +
		"./bin run [--n 5] [--mode a|b] URL...   # a comment\n" +
		"echo x | ./bin run --n N > out.txt\n" +
		"./bin tool|run [X | --n 2] …\n" +
		"./bin group\n" +
		"./bin run --nope\n" +
		"./bin run --n five\n" +
		"./bin run --old\n" +
		"./binary run\n" +
		"```\n"
	file := filepath.Join(t.TempDir(), "doc.md")
	os.WriteFile(file, []byte(doc), 0o644)
	cmds, err := DocCommands("bin", file)
	if err != nil || len(cmds) != 7 {
		t.Fatalf("%d commands, %v", len(cmds), err)
	}
	want := [][]string{{"run", "--n", "5", "--mode", "a", "URL"}, {"run", "--n", "N"}, {"tool", "X"}}
	for i, w := range want {
		if !slices.Equal(cmds[i].Args, w) {
			t.Errorf("line %d: %q, want %q", cmds[i].Line, cmds[i].Args, w)
		}
	}
	root := &cobra.Command{Use: "bin"}
	run := &cobra.Command{Use: "run", Run: func(*cobra.Command, []string) {}}
	run.Flags().Int("n", 1, "")
	run.Flags().String("mode", "", "")
	run.Flags().Bool("old", false, "")
	run.Flags().SetAnnotation("old", DeprecatedFlag, nil)
	tool := &cobra.Command{Use: "tool", Run: func(*cobra.Command, []string) {}}
	root.AddCommand(run, tool, &cobra.Command{Use: "group"})
	var errs []string
	for _, c := range cmds {
		if err := CheckDocCommand(root, c); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) != 4 || !strings.Contains(errs[0], "group of commands") || !strings.Contains(errs[1], "no flag --nope") ||
		!strings.Contains(errs[2], "five") || !strings.Contains(errs[3], "deprecated") {
		t.Fatalf("errors: %q", errs)
	}
}

package main

import (
	"strings"
	"testing"

	"github.com/wardlab/ward/internal/pgcluster"
)

// TestRetireWaitsForReplicas: with a replica whose replay is paused,
// 'keyring retire --replica' waits --replica-wait, then refuses and
// changes nothing; once the replica replays, the same command retires.
// A --replica that replicates none of the --db databases is refused.
func TestRetireWaitsForReplicas(t *testing.T) {
	p, s := pgcluster.PairForTest(t, "ward_replica")
	other := pgcluster.ForTest(t)
	c := newCLI(t)
	c.newKeyring(t)
	if code, _, e := c.run("keyring", "add", "--db", p.URL); code != 0 {
		t.Fatal(e)
	}
	code, out, e := c.run("keyring", "list")
	if code != 0 {
		t.Fatal(e)
	}
	var added string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.Contains(line, "decrypt-only") {
			added = f[0]
		}
	}
	if added == "" {
		t.Fatalf("no decrypt-only key listed: %q", out)
	}
	sdb, _, err := openDB(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	if _, err := sdb.Exec(`SELECT pg_wal_replay_pause()`); err != nil {
		t.Fatal(err)
	}
	// A write after the pause: the replica is now behind its primary.
	pdb, _, err := openDB(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer pdb.Close()
	if _, err := pdb.Exec(`CREATE TABLE after_pause (x int)`); err != nil {
		t.Fatal(err)
	}
	if code, _, e := c.run("keyring", "retire", added, "--db", p.URL, "--replica", other.URL); code != 2 || !strings.Contains(e, "replicates none of the --db databases") {
		t.Fatalf("retire with a replica of another server: %d %q", code, e)
	}
	code, _, e = c.run("keyring", "retire", added, "--db", p.URL, "--replica", s.URL, "--replica-wait", "1s")
	if code != 1 || !strings.Contains(e, "has not replayed") || !strings.Contains(e, "nothing was changed") {
		t.Fatalf("retire with a paused replica: %d %q", code, e)
	}
	if _, out, _ := c.run("keyring", "list"); !strings.Contains(out, added) {
		t.Fatal("a refused retire removed the key")
	}
	if _, err := sdb.Exec(`SELECT pg_wal_replay_resume()`); err != nil {
		t.Fatal(err)
	}
	if code, out, e := c.run("keyring", "retire", added, "--db", p.URL, "--replica", s.URL); code != 0 || !strings.Contains(e, "has replayed") {
		t.Fatalf("retire once the replica replays: %d %q %q", code, out, e)
	}
}

package chat

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/wardlab/ward/ledger"
)

var updateAccess = flag.Bool("update-access", false, "rewrite testdata/access-chain.json (only when the access log's format changes)")

// accessVector is one entry of the access log's chain, for other
// languages: its fields, its identity (hex) and the head after it (hex).
type accessVector struct {
	Seq          uint64 `json:"seq"`
	User         int64  `json:"user_id"`
	At           int64  `json:"at"`
	Reader       string `json:"reader"`
	Conversation int64  `json:"conversation_id"`
	Messages     int64  `json:"messages"`
	Identity     string `json:"identity"`
	Head         string `json:"head"`
}

// TestAccessChainGolden pins the access log's chain: the identity of an
// entry and the ledger tally's link over it (ledger.Tally.Add), from the
// zero head.
func TestAccessChainGolden(t *testing.T) {
	rows := []accessRow{
		{seq: 1, user: 42, at: 1764979200000, reader: ReaderAssistant, conversation: 7, messages: 5},
		{seq: 2, user: 43, at: 1764979260123, reader: ReaderAssistantWorker, conversation: -1, messages: 50},
		{seq: 3, user: 42, at: 0, reader: "", conversation: 0, messages: 0},
	}
	var got []accessVector
	tally := ledger.Tally{}
	for _, r := range rows {
		id := accessIdentity(r)
		tally = tally.Add(id)
		got = append(got, accessVector{r.seq, r.user, r.at, r.reader, r.conversation, r.messages, hex.EncodeToString(id), hex.EncodeToString(tally.Head)})
	}
	const path = "testdata/access-chain.json"
	if *updateAccess {
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want []accessVector
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(got) {
		t.Fatalf("%d vectors, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: got %+v, want %+v", i+1, got[i], want[i])
		}
	}
}

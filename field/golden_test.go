package field

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/internal/golden"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

var (
	updateGolden   = flag.Bool("update", false, "rewrite testdata/context-v3.json (only when a context version is added)")
	updateGoldenV4 = flag.Bool("update-v4", false, "rewrite testdata/context-v4.json (only when a context version is added)")
)

type typedValue struct {
	Type  string `json:"type"` // null, int64, string, bytes, bool, time, uuid
	Value string `json:"value,omitempty"`
}

func (v typedValue) goValue(t *testing.T) any {
	switch v.Type {
	case "null":
		return nil
	case "int64":
		var n int64
		if err := json.Unmarshal([]byte(v.Value), &n); err != nil {
			t.Fatal(err)
		}
		return n
	case "string":
		return v.Value
	case "bytes":
		b, err := hex.DecodeString(v.Value)
		if err != nil {
			t.Fatal(err)
		}
		return b
	case "bool":
		return v.Value == "true"
	case "time":
		tm, err := time.Parse(time.RFC3339Nano, v.Value)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	case "uuid":
		b, err := hex.DecodeString(v.Value)
		if err != nil || len(b) != 16 {
			t.Fatalf("uuid %q", v.Value)
		}
		return [16]byte(b)
	}
	t.Fatalf("unknown type %q", v.Type)
	return nil
}

type contextVector struct {
	Table      string       `json:"table"`
	Column     string       `json:"column"`
	Bind       []string     `json:"bind,omitempty"`
	Row        string       `json:"row"`
	Values     []typedValue `json:"values,omitempty"`
	Scope      string       `json:"scope_hex,omitempty"`
	Context    string       `json:"context_hex"`
	Plaintext  string       `json:"plaintext"`
	Ciphertext string       `json:"ciphertext_hex"`
}

type contextGolden struct {
	Comment   string          `json:"comment"`
	MasterKey string          `json:"master_key"`
	Keyring   json.RawMessage `json:"keyring"`
	Vectors   []contextVector `json:"vectors"`
}

func (v contextVector) column(t *testing.T, kr *keyring.Keyring, opts ...ColumnOption) (*Column, RowKey) {
	if v.Bind != nil {
		opts = append(opts, Bind(v.Bind...))
	}
	c, err := NewColumn(kr, v.Table, v.Column, opts...)
	if err != nil {
		t.Fatal(err)
	}
	rk := RowString(v.Row)
	if v.Bind != nil {
		vals := make([]any, len(v.Values))
		for i, tv := range v.Values {
			vals[i] = tv.goValue(t)
		}
		rk = rk.With(vals...)
	}
	return c, rk
}

func contextVectors() []contextVector {
	return []contextVector{
		{Table: "messages", Column: "body", Row: "42", Plaintext: "no bound columns"},
		{Table: "messages", Column: "body", Bind: []string{"conversation_id", "role"}, Row: "43",
			Values: []typedValue{{"int64", "7"}, {"string", "user"}}, Plaintext: "an integer and a string"},
		{Table: "messages", Column: "body", Bind: []string{"conversation_id", "role"}, Row: "44",
			Values: []typedValue{{"int64", "-7"}, {"null", ""}}, Plaintext: "a negative integer and NULL"},
		{Table: "notes", Column: "body", Bind: []string{"owner", "archived", "sent_at"}, Row: "0b9d7e0a-7c1e-4d5a-9f00-3c2d1e0f4a5b",
			Values:    []typedValue{{"uuid", "0b9d7e0a7c1e4d5a9f003c2d1e0f4a5b"}, {"bool", "true"}, {"time", "2026-11-30T16:35:50.123456789+09:00"}},
			Plaintext: "a UUID, a bool and a time"},
		{Table: "files", Column: "name", Bind: []string{"digest"}, Row: "9",
			Values: []typedValue{{"bytes", "00ff10"}}, Plaintext: "bytes"},
	}
}

func writeContextGolden(t *testing.T, path string, version byte) {
	ctx := context.Background()
	mk := local.Generate()
	kr, err := keyring.New(keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	g := contextGolden{Comment: "field context v3 and the ciphertexts (v3) sealed under it; regenerate with go test ./field -run Golden -update only when a version is added", MasterKey: mk.Encode()}
	if version == version4 {
		g.Comment = "field context v4 (after the column's scope) and the ciphertexts (v4) sealed under it; regenerate with go test ./field -run GoldenContextV4 -update-v4 only when a version is added"
	}
	gate := fleetgate.New()
	if version == version4 {
		gate.SetOpen([]fleetgate.Form{fleetgate.Ciphertext(version4)})
	}
	for _, v := range contextVectors() {
		c, rk := v.column(t, kr, WithForms(gate))
		cx, err := c.contextFor(nil, &rk, version)
		if err != nil {
			t.Fatal(err)
		}
		if version == version4 {
			v.Scope = hex.EncodeToString([]byte(keyring.FieldScope(v.Table, v.Column)))
		}
		ct, err := c.AppendSeal(nil, rk, []byte(v.Plaintext))
		if err != nil {
			t.Fatal(err)
		}
		v.Context, v.Ciphertext = hex.EncodeToString(cx), hex.EncodeToString(ct)
		g.Vectors = append(g.Vectors, v)
	}
	if g.Keyring, err = kr.Marshal(ctx, mk); err != nil {
		t.Fatal(err)
	}
	out, _ := json.MarshalIndent(g, "", "  ")
	if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGoldenContextV3(t *testing.T) {
	g, kr := loadContextGolden(t, "testdata/context-v3.json", version3, *updateGolden)
	for _, v := range g.Vectors {
		c, rk := v.column(t, kr)
		cx, err := c.Context(rk)
		if err != nil || hex.EncodeToString(cx) != v.Context {
			t.Fatalf("%s.%s row %s: context %x %v, want %s", v.Table, v.Column, v.Row, cx, err, v.Context)
		}
		ct, _ := hex.DecodeString(v.Ciphertext)
		if ct[0] != version3 {
			t.Fatalf("version %d", ct[0])
		}
		pt, err := c.AppendOpen(nil, rk, ct)
		if err != nil || string(pt) != v.Plaintext {
			t.Fatalf("%q: %q %v", v.Plaintext, pt, err)
		}
	}
}

// TestGoldenContextV4: the v4 vectors open, their contexts and scopes are
// what the column builds, and each value opens in no other column.
func TestGoldenContextV4(t *testing.T) {
	g, kr := loadContextGolden(t, "testdata/context-v4.json", version4, *updateGoldenV4)
	for _, v := range g.Vectors {
		c, rk := v.column(t, kr)
		cx, err := c.contextFor(nil, &rk, version4)
		if err != nil || hex.EncodeToString(cx) != v.Context || hex.EncodeToString([]byte(keyring.FieldScope(v.Table, v.Column))) != v.Scope {
			t.Fatalf("%s.%s row %s: context %x %v, want %s", v.Table, v.Column, v.Row, cx, err, v.Context)
		}
		ct, _ := hex.DecodeString(v.Ciphertext)
		if ct[0] != version4 {
			t.Fatalf("version %d", ct[0])
		}
		if pt, err := c.AppendOpen(nil, rk, ct); err != nil || string(pt) != v.Plaintext {
			t.Fatalf("%q: %q %v", v.Plaintext, pt, err)
		}
		if pt, err := kr.Scope(keyring.FieldScope(v.Table, v.Column)).Open(ct, cx); err != nil || string(pt) != v.Plaintext {
			t.Fatalf("%q through the keyring's scope: %q %v", v.Plaintext, pt, err)
		}
		other, _ := NewColumn(kr, v.Table, v.Column+"_copy", Bind(v.Bind...))
		if _, err := other.AppendOpen(nil, rk, ct); !errors.Is(err, keyring.ErrWrongContext) {
			t.Fatalf("%q opened in another column: %v", v.Plaintext, err)
		}
	}
}

// loadContextGolden reads a file of field-context vectors (rewriting it
// first with update) and opens its keyring.
func loadContextGolden(t *testing.T, path string, version byte, update bool) (contextGolden, *keyring.Keyring) {
	t.Helper()
	if update {
		writeContextGolden(t, path, version)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g contextGolden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	kr := goldenKeyring(t, g.MasterKey, g.Keyring)
	if len(g.Vectors) != len(contextVectors()) {
		t.Fatalf("%d vectors", len(g.Vectors))
	}
	return g, kr
}

type v2Owner struct{ n int }

func (o v2Owner) String() string { return "id-" + string(rune('0'+o.n)) }

func TestGoldenV2Values(t *testing.T) {
	raw, err := os.ReadFile("testdata/field-v2.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		MasterKey string          `json:"master_key"`
		Keyring   json.RawMessage `json:"keyring"`
		Values    []struct {
			Table, Column, Plaintext, Ciphertext, Note string
			Bind                                       []string
			Row                                        int64
			Values                                     []any
		}
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	kr := goldenKeyring(t, g.MasterKey, g.Keyring)
	for _, v := range g.Values {
		var opts []ColumnOption
		if v.Bind != nil {
			opts = append(opts, Bind(v.Bind...))
		}
		c, err := NewColumn(kr, v.Table, v.Column, opts...)
		if err != nil {
			t.Fatal(err)
		}
		vals := v.Values
		for i, x := range vals {
			switch x := x.(type) {
			case float64: // JSON numbers: these were int64
				vals[i] = int64(x)
			case map[string]any: // the Stringer
				vals[i] = v2Owner{3}
			case string:
				if tm, err := time.Parse(time.RFC3339Nano, x); err == nil {
					vals[i] = tm // read back: no monotonic reading
				}
			}
		}
		rk := RowInt(v.Row)
		if v.Bind != nil {
			rk = rk.With(vals...)
		}
		ct, _ := hex.DecodeString(v.Ciphertext)
		pt, err := c.AppendOpen(nil, rk, ct)
		if _, isTime := vals0(vals).(time.Time); isTime {
			if !errors.Is(err, keyring.ErrWrongContext) {
				t.Fatalf("%s: the monotonic v2 value opened or failed otherwise: %q %v", v.Note, pt, err)
			}
			continue
		}
		if err != nil || string(pt) != v.Plaintext {
			t.Fatalf("%s: %q %v", v.Note, pt, err)
		}
		// A column that refuses legacy forms refuses every v2 value.
		strict, _ := NewColumn(kr, v.Table, v.Column, append(opts, RefuseLegacyForms())...)
		if _, err := strict.AppendOpen(nil, rk, ct); !errors.Is(err, ErrLegacyForm) {
			t.Fatalf("%s: a column refusing legacy forms: %v", v.Note, err)
		}
		// The Stringer-bound value opens through the legacy path, but a
		// new value cannot be sealed with a Stringer.
		if _, isStringer := vals0(vals).(v2Owner); isStringer {
			if _, err := c.Seal(rk, []byte("x")); !errors.Is(err, ErrBinding) {
				t.Fatalf("sealing with a Stringer: %v", err)
			}
		}
	}
}

func vals0(v []any) any {
	if len(v) == 0 {
		return nil
	}
	return v[0]
}

func TestBoundValueEncodings(t *testing.T) {
	u := [16]byte{0x0b, 0x9d, 0x7e, 0x0a, 0x7c, 0x1e, 0x4d, 0x5a, 0x9f, 0x00, 0x3c, 0x2d, 0x1e, 0x0f, 0x4a, 0x5b}
	type myInt int32
	type myString string
	now := time.Now()
	n := int64(7)
	var nilPtr *int64
	for _, tc := range []struct {
		name string
		a, b any
	}{
		{"int and string", int64(7), "7"},
		{"int kinds", myInt(7), uint8(7)},
		{"named string", myString("ab"), []byte("ab")},
		{"bool and integer", true, int64(1)},
		{"false and zero", false, 0},
		{"uuid array and its text", u, "0b9d7e0a-7c1e-4d5a-9f00-3c2d1e0f4a5b"},
		{"time and its read-back", now, now.Round(0).UTC().Truncate(time.Microsecond)},
		{"time zones", now, now.In(time.FixedZone("x", 9*3600))},
		{"time and micros", time.UnixMicro(1700000000123456), int64(1700000000123456)},
		{"pointer", &n, int64(7)},
		{"nil pointer and nil", nilPtr, nil},
	} {
		a, errA := boundText(tc.a)
		b, errB := boundText(tc.b)
		if errA != nil || errB != nil || a != b {
			t.Errorf("%s: %+v %v vs %+v %v", tc.name, a, errA, b, errB)
		}
	}
	if a, _ := boundText(nil); !a.null {
		t.Error("nil is not NULL")
	}
	if a, _ := boundText(""); a.null {
		t.Error("the empty string is NULL")
	}
	for _, bad := range []any{1.5, float32(2), v2Owner{1}, struct{}{}, []int{1}, map[string]int{}} {
		if _, err := boundText(bad); err == nil {
			t.Errorf("%T accepted", bad)
		}
	}
	kr, _ := keyring.New(keyring.AES256GCM)
	c, _ := NewColumn(kr, "t", "c", Bind("owner"))
	if _, err := c.Seal(RowInt(1).With(v2Owner{1}), []byte("x")); !errors.Is(err, ErrBinding) {
		t.Fatalf("Stringer-only bound value: %v", err)
	}
	if _, err := c.Seal(RowInt(1).With(1.5), []byte("x")); !errors.Is(err, ErrBinding) {
		t.Fatalf("float bound value: %v", err)
	}
}

func TestTimeBindingSurvivesDatabase(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		kr, _ := keyring.New(keyring.AES256GCM)
		c, _ := NewColumn(kr, "events", "body", Bind("at"))
		tbl := d.table(t, "events")
		ts := map[string]string{"postgres": "TIMESTAMPTZ", "mysql": "TIMESTAMP(6)"}[d.name]
		if ts == "" {
			ts = "TIMESTAMP"
		}
		if _, err := d.db.Exec("CREATE TABLE " + tbl + " (id BIGINT PRIMARY KEY, at " + ts + ", body " + d.blob + ")"); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		ct, err := c.SealString(RowInt(1).With(now), "bound to time.Now()")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.db.Exec(d.q("INSERT INTO "+tbl+" (id, at, body) VALUES (?, ?, ?)"), 1, now, ct); err != nil {
			t.Fatal(err)
		}
		var at time.Time
		var stored Ciphertext
		if err := d.db.QueryRow("SELECT at, body FROM "+tbl).Scan(&at, &stored); err != nil {
			t.Fatal(err)
		}
		s, err := c.OpenString(RowInt(1).With(at), stored)
		if err != nil || s != "bound to time.Now()" {
			t.Fatalf("read back %v (sealed %v): %q %v", at, now, s, err)
		}
		if !bytes.Equal(stored.Bytes(), ct.Bytes()) {
			t.Fatal("stored value changed")
		}
	})
}

// TestRowOf: one row key whatever type carries it, and refusals.
func TestRowOf(t *testing.T) {
	type id int32
	u := [16]byte{0x0b, 0x9d, 0x7e, 0x0a, 0x7c, 0x1e, 0x4d, 0x5a, 0x9f, 0x00, 0x3c, 0x2d, 0x1e, 0x0f, 0x4a, 0x5b}
	for _, tc := range []struct {
		v    any
		want string
	}{{int64(42), "42"}, {id(42), "42"}, {uint16(42), "42"}, {"42", "42"}, {[]byte("k"), "k"}, {u, "0b9d7e0a-7c1e-4d5a-9f00-3c2d1e0f4a5b"}} {
		rk, err := RowOf(tc.v)
		if err != nil || rk.String() != tc.want {
			t.Errorf("%T: %q %v", tc.v, rk.String(), err)
		}
	}
	for _, bad := range []any{1.5, nil, struct{}{}, uint64(1) << 63} {
		if _, err := RowOf(bad); err == nil {
			t.Errorf("%T accepted", bad)
		}
	}
}

// goldenKeyring opens a golden file's keyring under its master key.
func goldenKeyring(t *testing.T, masterKey string, file json.RawMessage) *keyring.Keyring {
	t.Helper()
	return golden.Keyring(t, masterKey, file)
}

package plugin_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/plugin"
)

// vectors is testdata/vectors.json: frames of the protocol, for plug-in
// authors in any language. A request's frame is what ward writes for it;
// a response's is what ward accepts (Valid) or refuses.
type vectors struct {
	Requests []struct {
		Note    string            `json:"note"`
		Op      string            `json:"op"`
		URI     string            `json:"uri"`
		Data    string            `json:"data_hex"`
		Context map[string]string `json:"encryption_context"`
		Frame   string            `json:"frame_hex"`
	} `json:"requests"`
	Responses []struct {
		Note  string        `json:"note"`
		Frame string        `json:"frame_hex"`
		Valid bool          `json:"valid"`
		Data  string        `json:"data_hex"`
		Key   *plugin.Key   `json:"key"`
		Error *plugin.Error `json:"error"`
	} `json:"responses"`
}

// TestVectors: ward writes each request vector's frame byte for byte, and
// reads each response vector as it says (data, key, error or refused).
func TestVectors(t *testing.T) {
	b, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Requests) < 3 || len(v.Responses) < 6 {
		t.Fatalf("%d requests and %d responses: the file lost vectors", len(v.Requests), len(v.Responses))
	}
	for _, r := range v.Requests {
		data, _ := hex.DecodeString(r.Data)
		req := plugin.Request{Version: plugin.Version, Op: r.Op, URI: r.URI, Data: data}
		if r.Context != nil {
			req.Context = kms.CanonicalContext(r.Context)
		}
		var buf bytes.Buffer
		if err := plugin.WriteFrame(&buf, req); err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(buf.Bytes()); got != r.Frame {
			t.Errorf("%s: frame %s, the vector has %s", r.Note, got, r.Frame)
		}
		back, err := plugin.ReadRequest(&buf)
		if err != nil || back.Op != r.Op || !bytes.Equal(back.Data, data) {
			t.Errorf("%s: read back %+v %v", r.Note, back, err)
		}
	}
	for _, r := range v.Responses {
		frame, _ := hex.DecodeString(r.Frame)
		resp, err := plugin.ReadResponse(bytes.NewReader(frame))
		if !r.Valid {
			if !errors.Is(err, plugin.ErrFrame) {
				t.Errorf("%s: %v, want ErrFrame", r.Note, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", r.Note, err)
			continue
		}
		data, _ := hex.DecodeString(r.Data)
		if !bytes.Equal(resp.Data, data) || (r.Key == nil) != (resp.Key == nil) || (r.Key != nil && *r.Key != *resp.Key) ||
			(r.Error == nil) != (resp.Error == nil) || (r.Error != nil && *r.Error != *resp.Error) {
			t.Errorf("%s: read %+v", r.Note, resp)
		}
	}
}

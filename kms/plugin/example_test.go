package plugin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/plugin"
)

// A plug-in's side: Serve reads one request and writes one response. A
// real plug-in's main passes os.Stdin, os.Stdout and its own Handler; here
// a request is written to a buffer as ward would, and the echo Handler of
// the tests answers it.
func ExampleServe() {
	var in, out bytes.Buffer
	plugin.WriteFrame(&in, plugin.Request{Version: plugin.Version, Op: plugin.OpDescribe, URI: "echo:k"})
	if err := plugin.Serve(context.Background(), &in, &out, echo{}); err != nil {
		fmt.Println(err)
		return
	}
	resp, err := plugin.ReadResponse(&out)
	fmt.Println(resp.Key.Provider, resp.Key.ID, err)
	// Output: echo k <nil>
}

// Opening a key behind a plug-in, as kmsurl.Open does for a scheme no
// provider registered: without ward-kms-nosuch on PATH, the error says so.
func ExampleOpen() {
	_, err := plugin.Open(context.Background(), "nosuch:key-1")
	fmt.Println(errors.Is(err, plugin.ErrNotFound), errors.Is(err, kms.ErrMisconfigured))
	// Output: true true
}

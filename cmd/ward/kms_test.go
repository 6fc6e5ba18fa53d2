package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	sdk "github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/wardlab/ward/internal/localkms"
	"github.com/wardlab/ward/kms/awskms"
)

// TestKMSCommands drives the KMS commands against local-kms (in process,
// 127.0.0.1) through the AWS SDK: a keyring wrapped by a KMS key, rewrap
// to a second key, envelope and per-call encryption, and kms info.
func TestKMSCommands(t *testing.T) {
	srv, err := localkms.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	admin, _ := awskms.New(ctx, awskms.Config{KeyID: "x", Endpoint: srv.Endpoint(), Region: "us-east-1"})
	for _, alias := range []string{"alias/one", "alias/two"} {
		k, err := admin.Client().CreateKey(ctx, &sdk.CreateKeyInput{})
		if err != nil {
			t.Fatal(err)
		}
		admin.Client().CreateAlias(ctx, &sdk.CreateAliasInput{AliasName: aws.String(alias), TargetKeyId: k.KeyMetadata.KeyId})
	}
	url := func(alias string) string {
		return "awskms://" + alias + "?region=us-east-1&endpoint=" + srv.Endpoint()
	}
	dir := t.TempDir()
	env := map[string]string{KeyringEnv: filepath.Join(dir, "kr.json")}
	run := func(stdin string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		a := &app{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(k string) string { return env[k] }}
		return a.run(ctx, args), out.String(), errb.String()
	}
	if code, out, e := run("", "--kms", url("alias/one"), "keyring", "new"); code != 0 || !strings.Contains(out, "sealed under awskms:alias/one") {
		t.Fatalf("keyring new --kms: %d %s %s", code, out, e)
	}
	if code, _, e := run("", "keyring", "list"); code != 2 || !strings.Contains(e, "master key") {
		t.Fatalf("without the KMS: %d %s", code, e)
	}
	code, ct, _ := run("hello", "--kms", url("alias/one"), "encrypt", "--envelope", "--context", "c")
	if code != 0 || !strings.HasPrefix(ct, "e1:") {
		t.Fatal(ct)
	}
	// --kms alone means the key service of the keyring: a keyring value.
	code, kct, _ := run("hello", "--kms", url("alias/one"), "encrypt", "--context", "c")
	if code != 0 || !strings.HasPrefix(kct, "w3:") {
		t.Fatal(kct)
	}
	if code, out, e := run(kct, "--kms", url("alias/one"), "decrypt", "--context", "c"); code != 0 || out != "hello" {
		t.Fatalf("keyring decrypt under the KMS: %d %q %s", code, out, e)
	}
	env2 := env
	env = map[string]string{}
	if code, _, e := run("hello", "--kms", url("alias/one"), "encrypt", "--context", "c"); code != 2 || !strings.Contains(e, "--envelope") {
		t.Fatalf("--kms without a keyring: %d %s", code, e)
	}
	env = env2
	if code, out, _ := run("", "--kms", url("alias/one"), "keyring", "rewrap", "--to", url("alias/two")); code != 0 || !strings.Contains(out, "alias/two") {
		t.Fatalf("rewrap: %s", out)
	}
	if code, _, e := run("", "--kms", url("alias/one"), "keyring", "list"); code != 2 || !strings.Contains(e, "different key") {
		t.Fatalf("old key after rewrap: %d %s", code, e)
	}
	if code, out, _ := run("", "--kms", url("alias/two"), "keyring", "list"); code != 0 || !strings.Contains(out, "primary") {
		t.Fatalf("new key after rewrap: %s", out)
	}
	// Envelope text form, opened with the KMS.
	if code, out, e := run(ct, "--kms", url("alias/one"), "decrypt", "--context", "c"); code != 0 || out != "hello" {
		t.Fatalf("envelope decrypt: %d %q %s", code, out, e)
	}
	if code, _, _ := run(ct, "--kms", url("alias/one"), "decrypt", "--context", "d"); code != 1 {
		t.Fatalf("wrong context: %d", code)
	}
	// Per-call KMS encryption.
	code, b64, _ := run("per call", "--kms", url("alias/one"), "kms", "encrypt", "--ec", "k=v")
	if code != 0 {
		t.Fatal(b64)
	}
	if code, out, _ := run(b64, "--kms", url("alias/one"), "kms", "decrypt", "--ec", "k=v"); code != 0 || out != "per call" {
		t.Fatalf("kms decrypt: %q", out)
	}
	if code, _, _ := run(b64, "--kms", url("alias/one"), "kms", "decrypt", "--ec", "k=w"); code != 1 {
		t.Fatalf("kms decrypt with another context: %d", code)
	}
	code, out, _ := run("", "--kms", url("alias/one"), "kms", "info", "--json")
	var info struct {
		Provider string                    `json:"provider"`
		ARN      string                    `json:"arn"`
		Cache    struct{ KMSCalls uint64 } `json:"cache"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &info) != nil || info.Provider != "awskms" || !strings.HasPrefix(info.ARN, "arn:aws:kms:") || info.Cache.KMSCalls != 1 {
		t.Fatalf("kms info: %s", out)
	}
	if code, _, e := run("", "kms", "info"); code != 2 || !strings.Contains(e, "no KMS") {
		t.Fatalf("no KMS: %s", e)
	}
}

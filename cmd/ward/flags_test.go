package main

import (
	"testing"

	"github.com/wardlab/ward/internal/cli"
)

// flagTests names, for every flag of ward, a test that sets it and asserts
// an effect that differs from the default: a Go test of this package or a
// script under testdata/script. TestFlagTable keeps it complete.
var flagTests = map[string]string{
	"ward --keyring":                           "testdata/script/keyring.txtar",
	"ward --kms":                               "TestKMSCommands",
	"ward --master-key-file":                   "testdata/script/keyring.txtar",
	"ward decrypt --bind":                      "TestCryptBind",
	"ward decrypt --column":                    "TestCryptBind",
	"ward decrypt --context":                   "testdata/script/keyring.txtar",
	"ward decrypt --ec":                        "TestKMSCommands",
	"ward decrypt --row":                       "TestCryptBind",
	"ward decrypt --table":                     "TestCryptBind",
	"ward encrypt --binary":                    "testdata/script/keyring.txtar",
	"ward encrypt --bind":                      "TestCryptBind",
	"ward encrypt --column":                    "TestCryptBind",
	"ward encrypt --context":                   "testdata/script/keyring.txtar",
	"ward encrypt --ec":                        "TestKMSCommands",
	"ward encrypt --envelope":                  "TestKMSCommands",
	"ward encrypt --row":                       "TestCryptBind",
	"ward encrypt --table":                     "TestCryptBind",
	"ward encrypt-column --batch":              "TestJobFlags",
	"ward encrypt-column --bind":               "TestJobFlags",
	"ward encrypt-column --check":              "TestJobFlags",
	"ward encrypt-column --column":             "TestJobFlags",
	"ward encrypt-column --db":                 "TestJobFlags",
	"ward encrypt-column --dry-run":            "TestJobFlags",
	"ward encrypt-column --index":              "TestJobFlags",
	"ward encrypt-column --index-normalize":    "TestJobFlags",
	"ward encrypt-column --key":                "TestJobFlags",
	"ward encrypt-column --pause":              "TestJobFlags",
	"ward encrypt-column --quiet":              "TestJobFlags",
	"ward encrypt-column --rate":               "TestJobFlags",
	"ward encrypt-column --shard":              "TestJobFlags",
	"ward encrypt-column --table":              "TestJobFlags",
	"ward encrypt-column --text":               "TestJobFlags",
	"ward encrypt-column --workers":            "TestJobFlags",
	"ward fleet --db":                          "TestJSONFlags",
	"ward fleet --json":                        "TestJSONFlags",
	"ward keyring --db":                        "TestRotateStaleAfter",
	"ward keyring add --alg":                   "TestKeyringFlags",
	"ward keyring add --promote":               "TestKeyringFlags",
	"ward keyring gen-master-key --out":        "testdata/script/keyring.txtar",
	"ward keyring list --json":                 "TestKeyringFlags",
	"ward keyring new --alg":                   "testdata/script/keyring.txtar",
	"ward keyring new --force":                 "TestKeyringFlags",
	"ward keyring rewrap --to":                 "TestKMSCommands",
	"ward keyring rewrap --to-master-key-file": "TestKeyringFlags",
	"ward keyring rotate --alg":                "testdata/script/keyring.txtar",
	"ward keyring rotate --no-reencrypt":       "TestSubjectRewrapFlags",
	"ward keyring rotate --offline":            "TestJobFlags",
	"ward keyring rotate --skip":               "TestFleetRotation",
	"ward keyring rotate --stale-after":        "TestRotateStaleAfter",
	"ward keyring rotate --wait":               "TestRotateStaleAfter",
	"ward kms decrypt --ec":                    "TestKMSCommands",
	"ward kms encrypt --ec":                    "TestKMSCommands",
	"ward kms info --json":                     "TestKMSCommands",
	"ward ledger --db":                         "TestKeyCommandsCheckTheLedger",
	"ward ledger --json":                       "TestKeyCommandsCheckTheLedger",
	"ward ledger adopt --another-database":     "TestLedgerAdoptCommand",
	"ward ledger adopt --db":                   "TestKeyCommandsCheckTheLedger",
	"ward password calibrate --max-memory":     "testdata/script/password.txtar",
	"ward password calibrate --target":         "testdata/script/password.txtar",
	"ward password hash --allow-weak":          "testdata/script/password.txtar",
	"ward password hash --cost":                "testdata/script/password.txtar",
	"ward password hash --m":                   "testdata/script/password.txtar",
	"ward password hash --p":                   "testdata/script/password.txtar",
	"ward password hash --preset":              "testdata/script/password.txtar",
	"ward password hash --t":                   "testdata/script/password.txtar",
	"ward password inspect --hash-file":        "TestJSONFlags",
	"ward password inspect --json":             "TestJSONFlags",
	"ward password verify --bcrypt-truncate":   "testdata/script/password.txtar",
	"ward password verify --cost":              "testdata/script/password.txtar",
	"ward password verify --hash":              "testdata/script/password.txtar",
	"ward password verify --hash-file":         "testdata/script/password.txtar",
	"ward password verify --json":              "testdata/script/password.txtar",
	"ward password verify --m":                 "testdata/script/password.txtar",
	"ward password verify --p":                 "testdata/script/password.txtar",
	"ward password verify --preset":            "testdata/script/password.txtar",
	"ward password verify --t":                 "testdata/script/password.txtar",
	"ward reseal --batch":                      "TestJobFlags",
	"ward reseal --bind":                       "TestJobFlags",
	"ward reseal --check":                      "TestJobFlags",
	"ward reseal --column":                     "TestJobFlags",
	"ward reseal --db":                         "TestJobFlags",
	"ward reseal --dry-run":                    "TestJobFlags",
	"ward reseal --index":                      "TestJobFlags",
	"ward reseal --index-normalize":            "TestJobFlags",
	"ward reseal --key":                        "TestJobFlags",
	"ward reseal --pause":                      "TestJobFlags",
	"ward reseal --quiet":                      "TestJobFlags",
	"ward reseal --rate":                       "TestJobFlags",
	"ward reseal --shard":                      "TestJobFlags",
	"ward reseal --table":                      "TestJobFlags",
	"ward reseal --text":                       "TestJobFlags",
	"ward reseal --workers":                    "TestJobFlags",
	"ward subject --db":                        "TestSubjectRewrapFlags",
	"ward subject forget --namespace":          "TestSubjectCommands",
	"ward subject rewrap --batch":              "TestSubjectRewrapFlags",
	"ward subject rewrap --shard":              "TestSubjectRewrapShard",
	"ward subject rewrap --workers":            "TestSubjectRewrapFlags",
}

// TestFlagTable: every flag of ward has an entry in flagTests naming a test
// with a line that sets it (the command's words and the flag together),
// and every entry names a flag that exists.
func TestFlagTable(t *testing.T) {
	bad, err := cli.UncoveredFlags((&app{}).newRootCmd(), flagTests, ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

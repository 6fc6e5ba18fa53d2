package kmslab

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	sdk "github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/awskms"
)

// localMethods are the field report's local cipher and ward's field AEAD.
func localMethods() ([]method, error) {
	// (a) The report's AES-256-CBC with a fixed key and IV: unauthenticated,
	// deterministic, a legacy baseline only.
	key := bytes.Repeat([]byte{0x42}, 32)
	iv := bytes.Repeat([]byte{0x24}, 16)
	blk, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	cbc := method{name: "legacy-aes-256-cbc-fixed-iv", label: "(a) AES-256-CBC, fixed key and IV: unauthenticated legacy baseline",
		enc: func(_ context.Context, pt []byte) ([]byte, error) {
			pad := aes.BlockSize - len(pt)%aes.BlockSize
			buf := append(bytes.Clone(pt), bytes.Repeat([]byte{byte(pad)}, pad)...)
			cipher.NewCBCEncrypter(blk, iv).CryptBlocks(buf, buf)
			return buf, nil
		},
		dec: func(_ context.Context, ct []byte) ([]byte, error) {
			if len(ct)%aes.BlockSize != 0 || len(ct) == 0 {
				return nil, fmt.Errorf("bad CBC length")
			}
			buf := bytes.Clone(ct)
			cipher.NewCBCDecrypter(blk, iv).CryptBlocks(buf, buf)
			pad := int(buf[len(buf)-1])
			if pad == 0 || pad > aes.BlockSize {
				return nil, fmt.Errorf("bad padding")
			}
			return buf[:len(buf)-pad], nil
		}}
	// (b) ward's field AEAD with a local key.
	kr, err := keyring.New(keyring.AES256GCM)
	if err != nil {
		return nil, err
	}
	col, err := field.NewColumn(kr, "messages", "body")
	if err != nil {
		return nil, err
	}
	row := field.RowInt(1)
	fld := method{name: "field-local-key", label: "(b) ward field AEAD (AES-256-GCM), local key",
		enc: func(_ context.Context, pt []byte) ([]byte, error) { return col.AppendSeal(nil, row, pt) },
		dec: func(_ context.Context, ct []byte) ([]byte, error) { return col.AppendOpen(nil, row, ct) }}
	return []method{cbc, fld}, nil
}

// kmsMethods are per-call KMS and the two envelope variants over a key
// service; newKS makes another client of the same key, for the cold rows.
func kmsMethods(ks kms.KeyService, newKS func() (kms.KeyService, error)) []method {
	return []method{perCall(ks, newKS), envelope(ks, newKS, false), envelope(ks, newKS, true)}
}

func perCall(ks kms.KeyService, newKS func() (kms.KeyService, error)) method {
	m := method{name: "kms-per-call", label: "(c) KMS Encrypt/Decrypt on every value (the report's KMS)", kmsBound: true,
		enc: func(ctx context.Context, pt []byte) ([]byte, error) { return ks.Encrypt(ctx, pt, ec) },
		dec: func(ctx context.Context, ct []byte) ([]byte, error) { return ks.Decrypt(ctx, ct, ec) }}
	m.fresh = freshOf(newKS, func(ks kms.KeyService) method { return perCall(ks, nil) })
	return m
}

func envelope(ks kms.KeyService, newKS func() (kms.KeyService, error), noCache bool) method {
	env := kms.NewEnvelope(ks, kms.EnvelopeOptions{NoCache: noCache})
	ad := []byte("messages/body/1")
	m := method{name: "envelope-cached", label: "(d) envelope encryption, cached data keys",
		enc: func(ctx context.Context, pt []byte) ([]byte, error) { return env.Seal(ctx, pt, ad, ec) },
		dec: func(ctx context.Context, ct []byte) ([]byte, error) { return env.Open(ctx, ct, ad, ec) }}
	if noCache {
		m.name, m.label, m.kmsBound = "envelope-per-message", "(e) envelope encryption, a new data key per message", true
	}
	m.fresh = freshOf(newKS, func(ks kms.KeyService) method { return envelope(ks, nil, noCache) })
	return m
}

// freshOf returns a constructor of the method over a new client, or nil
// when there is none.
func freshOf(newKS func() (kms.KeyService, error), mk func(kms.KeyService) method) func() method {
	if newKS == nil {
		return nil
	}
	return func() method {
		ks, err := newKS()
		if err != nil {
			return method{enc: func(context.Context, []byte) ([]byte, error) { return nil, err }}
		}
		return mk(ks)
	}
}

// createKey makes the lab's key and alias on a fresh local KMS.
func createKey(ctx context.Context, endpoint string) error {
	admin, err := awskms.New(ctx, awskms.Config{KeyID: "alias/ward-lab", Endpoint: endpoint, Region: "us-east-1"})
	if err != nil {
		return err
	}
	k, err := admin.Client().CreateKey(ctx, &sdk.CreateKeyInput{Description: aws.String("ward lab")})
	if err != nil {
		return fmt.Errorf("kms: creating the lab key: %w", err)
	}
	_, err = admin.Client().CreateAlias(ctx, &sdk.CreateAliasInput{AliasName: aws.String("alias/ward-lab"), TargetKeyId: k.KeyMetadata.KeyId})
	return err
}

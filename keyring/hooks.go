package keyring

import (
	"context"

	"github.com/wardlab/ward/internal/keyhooks"
)

// The protocol only ward's own packages use reaches them through
// internal/keyproto, not this package's API.
func init() {
	keyhooks.StateMAC = func(kr any, msg []byte) (uint64, []byte) { return kr.(*Keyring).newestStateMAC(msg) }
	keyhooks.VerifyStateMAC = func(kr any, epoch uint64, msg, mac []byte) error {
		return kr.(*Keyring).verifyStateMAC(epoch, msg, mac)
	}
	keyhooks.StateEpoch = func(kr any) uint64 { return kr.(*Keyring).stateEpoch() }
	keyhooks.Anchor = func(kr any, database string) (any, bool) { return kr.(*Keyring).anchorOf(database) }
	keyhooks.Anchored = func(kr any) []string { return kr.(*Keyring).anchored() }
	keyhooks.SetAnchor = func(kr any, ctx any, database string, a any) error {
		return kr.(*Keyring).saveAnchor(ctx.(context.Context), database, a.(Anchor))
	}
	keyhooks.KeyIDOf = func(b []byte) (uint32, error) { id, err := keyIDOf(b); return uint32(id), err }
	keyhooks.IsSubjectSealed = isSubjectSealed
	keyhooks.SubjectKeyVersion = subjectKeyVersion
	keyhooks.WrapSubjectKeyWith = func(kek, sk any, context []byte) []byte {
		return wrapSubjectKeyWith(kek.(*SubjectKey), sk.(*SubjectKey), context)
	}
	keyhooks.UnwrapSubjectKeyWith = func(kek any, wrapped, context []byte) (any, error) {
		sk, err := unwrapSubjectKeyWith(kek.(*SubjectKey), wrapped, context)
		if err != nil {
			return nil, err
		}
		return sk, nil
	}
	keyhooks.SubjectKeyFromSecret = func(alg uint8, version uint32, secret []byte) (any, error) {
		sk, err := subjectKeyFromSecret(Algorithm(alg), version, secret)
		if err != nil {
			return nil, err
		}
		return sk, nil
	}
}

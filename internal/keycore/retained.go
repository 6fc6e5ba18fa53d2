package keycore

import (
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
)

// Retained derivations.
//
// Retiring a key removes its material, so that no backup's value or
// wrapped subject key opens with the keyring file any more. Some uses of a
// key outlive its values: a password hash peppered with it verifies only
// with the pepper key derived from it (DeriveFromKey), and a user who
// never logs in again never moves to a newer one. RemoveKeeping therefore
// keeps, for a removed key, the derivations named: HKDF output, from which
// the key's material cannot be computed, so it opens no value and unwraps
// no subject key; DeriveFromKey still returns them.

// maxRetained caps the retained derivations of one keyring file.
const maxRetained = 4096

// retainedLen is the length of a retained derivation.
const retainedLen = 32

// retained is one kept derivation of a removed key.
type retained struct {
	id      KeyID
	purpose string
	key     []byte
}

// ErrKeyRemoved means the key was removed (retired): its material is gone,
// and only the derivations kept for it remain ([Keyring.RemoveKeeping]).
// It matches [ErrUnknownKey].
var ErrKeyRemoved = fmt.Errorf("%w (removed: only its kept derivations remain)", ErrUnknownKey)

// RemoveKeeping is Remove, keeping for each purpose given the 32-byte
// derivation DeriveFromKey(id, purpose, 32) returned: after it, that call
// still returns the same bytes, while the key's material — which opens
// values and unwraps subject keys — is gone from the keyring and its file.
// The key ID is never reused.
func (kr *Keyring) RemoveKeeping(ctx context.Context, id KeyID, purposes ...string) error {
	return kr.update(ctx, func(next *snapshot) error {
		k, ok := next.byID[id]
		if !ok {
			return &KeyError{ID: id, Err: ErrUnknownKey}
		}
		if k.State == Primary {
			return &KeyError{ID: id, Err: ErrPrimaryKey}
		}
		if len(next.retained)+len(purposes) > maxRetained {
			return fmt.Errorf("keyring: more than %d retained derivations", maxRetained)
		}
		next.retained = slices.Clip(next.retained)
		for _, p := range purposes {
			d, err := derive(k.material, p, retainedLen)
			if err != nil {
				return err
			}
			next.retained = append(next.retained, retained{id: id, purpose: p, key: d})
		}
		next.keys = slices.DeleteFunc(next.keys, func(x *key) bool { return x.ID == id })
		delete(next.byID, id)
		next.removed = append(slices.Clip(next.removed), id)
		return nil
	})
}

// derive is DeriveFromKey's HKDF.
func derive(material []byte, purpose string, length int) ([]byte, error) {
	return hkdf.Key(sha256.New, material, nil, "ward keyring key-derive v1\x00"+purpose, length)
}

// retainedFor returns a kept derivation of a removed key.
func (s *snapshot) retainedFor(id KeyID, purpose string, length int) ([]byte, error) {
	for _, r := range s.retained {
		if r.id == id && r.purpose == purpose && length == retainedLen {
			return slices.Clone(r.key), nil
		}
	}
	if slices.Contains(s.removed, id) {
		return nil, &KeyError{ID: id, Err: ErrKeyRemoved}
	}
	return nil, &KeyError{ID: id, Err: ErrUnknownKey}
}

// Removed lists the key IDs removed from the keyring (retired), oldest
// first: their material is gone; DeriveFromKey answers for them only with
// what RemoveKeeping kept.
func (kr *Keyring) Removed() []KeyID { return slices.Clone(kr.load().removed) }

// payloadRetained is a retained derivation in a keyring file.
type payloadRetained struct {
	ID      uint32 `json:"id"`
	Purpose string `json:"purpose"`
	Key     []byte `json:"key"`
}

// loadRetained validates and loads the removed keys and retained
// derivations of a payload.
func (s *snapshot) loadRetained(p *payload) error {
	if len(p.Retained) > maxRetained || len(p.Removed) > maxRetained {
		return fmt.Errorf("%w: %d retained derivations", ErrCorruptKeyring, len(p.Retained))
	}
	for _, id := range p.Removed {
		if id == 0 || s.byID[KeyID(id)] != nil {
			return fmt.Errorf("%w: bad removed key ID", ErrCorruptKeyring)
		}
		s.removed = append(s.removed, KeyID(id))
	}
	for _, r := range p.Retained {
		if len(r.Key) != retainedLen || len(r.Purpose) > 256 || !slices.Contains(s.removed, KeyID(r.ID)) {
			return errors.Join(ErrCorruptKeyring, errors.New("keyring: bad retained derivation"))
		}
		s.retained = append(s.retained, retained{id: KeyID(r.ID), purpose: r.Purpose, key: r.Key})
	}
	return nil
}

// marshalRetained adds the removed keys and retained derivations to p.
func (s *snapshot) marshalRetained(p *payload) {
	for _, id := range s.removed {
		p.Removed = append(p.Removed, uint32(id))
	}
	for _, r := range s.retained {
		p.Retained = append(p.Retained, payloadRetained{ID: uint32(r.id), Purpose: r.purpose, Key: r.key})
	}
}

package keycore

import (
	"errors"
	"fmt"
)

// Integrity epochs.
//
// Records a database writer could forge or copy — tombstones, row MACs,
// fleet rows, forget-journal records, session and device bindings — are
// MAC'd under integrity keys. An integrity key belongs to an epoch, and an
// epoch is a keyring key: the epoch of a record is the ID of the key that
// was primary when it was written, and its integrity keys derive from that
// key's material (FORMAT.md, "Integrity epochs"):
//
//	K_int(epoch, purpose) = DeriveFromKey(epoch, "ward integrity v1" 0x00 ‖ purpose, 32)
//
// A rotation (the promotion of a new primary) starts a new epoch; records
// of older epochs keep verifying while their key is in the keyring, and a
// job moves them to the current epoch; retiring the key (its material
// removed) ends its epoch for good, so that a copy of the keyring file
// from before can forge nothing the keyring accepts any more: records of
// an ended epoch are refused, and a file from before a key was added never
// held the epoch's material. Records written before epochs (under keys
// derived from the keyring's root alone, which never rotates) verify only
// until the database's ledger records that a job moved them.

// integrityInfo prefixes an integrity key's purpose.
const integrityInfo = "ward integrity v1\x00"

// ErrEpochEnded means a record names an integrity epoch whose key was
// retired: its material is gone, and so is every integrity key of the
// epoch. A genuine record of it should have been moved to a later epoch
// before the key was retired; a record of an ended epoch is a copy from
// before (or a forgery made with an old keyring file).
var ErrEpochEnded = errors.New("keyring: the record's integrity epoch ended when its key was retired")

// IntegrityKey returns the integrity key of purpose in the current epoch,
// the primary key's, and the epoch, which a record stores beside its MAC.
// The key is secret.
func (kr *Keyring) IntegrityKey(purpose string) (KeyID, []byte, error) {
	p := kr.load().primary
	if p == nil {
		return 0, nil, ErrNoPrimary
	}
	k, err := derive(p.material, integrityInfo+purpose, 32)
	return p.ID, k, err
}

// IntegrityKeyAt returns the integrity key of purpose in the epoch a
// record names. An epoch the keyring does not hold is looked up again
// after one re-read of the file (a record of a process that promoted a key
// this one has not loaded), as values under unknown keys are. It fails
// with ErrEpochEnded for a retired key's epoch, and a *KeyError matching
// ErrUnknownKey or ErrKeyDisabled otherwise.
func (kr *Keyring) IntegrityKeyAt(epoch KeyID, purpose string) ([]byte, error) {
	k, ok := kr.load().byID[epoch]
	if !ok {
		reloaded := kr.reloadForUnknown()
		if k, ok = kr.load().byID[epoch]; !ok {
			if kr.isRemoved(epoch) {
				return nil, fmt.Errorf("%w: epoch %v", ErrEpochEnded, epoch)
			}
			return nil, &KeyError{ID: epoch, Err: ErrUnknownKey, Hint: "no integrity epoch of this keyring: " + kr.unknownKeyHint(reloaded)}
		}
	}
	if k.State == Disabled {
		return nil, &KeyError{ID: epoch, Err: ErrKeyDisabled}
	}
	return derive(k.material, integrityInfo+purpose, 32)
}

// retiredHint is what an unknown key ID means when the keyring removed
// that key: no re-read or reload brings it back.
const retiredHint = "the key was retired (removed from this keyring for good, ward keyring retire): values still under it no longer open, and no reload brings it back"

// isRemoved reports whether a key ID is one the keyring removed.
func (kr *Keyring) isRemoved(id KeyID) bool {
	for _, r := range kr.load().removed {
		if r == id {
			return true
		}
	}
	return false
}

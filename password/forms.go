package password

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/wardlab/ward/fleetgate"
)

// declareForms declares on the policy's gate the schemes the hasher
// verifies (and the pepper), and asks for its preferred scheme (and
// pepper) to open; it checks the fallback.
func (h *Hasher) declareForms() error {
	p := &h.policy
	if p.Forms == nil {
		return nil
	}
	if p.Fallback.Scheme == SchemeUnknown {
		return errors.New("password: Forms needs Fallback, the parameters the fleet's older processes write")
	}
	impl, err := schemeOf(p.Fallback.Scheme)
	if err != nil {
		return err
	}
	if own, ok := ownFormatOf(p.Fallback.Scheme); ok {
		p.Fallback.SaltLen, p.Fallback.KeyLen = own.lengths()
	} else if p.Fallback.SaltLen == 0 || p.Fallback.KeyLen == 0 {
		p.Fallback.SaltLen, p.Fallback.KeyLen = cmp.Or(p.Fallback.SaltLen, 16), cmp.Or(p.Fallback.KeyLen, 32)
	}
	if !impl.writable() {
		return fmt.Errorf("%w: Fallback %v is accepted for verification only", ErrUnsupportedScheme, p.Fallback.Scheme)
	}
	if !p.AllowWeak {
		if err := p.Fallback.checkStrength(); err != nil {
			return fmt.Errorf("password: Fallback: %w", err)
		}
	}
	if err := errors.Join(impl.valid(p.Fallback), h.limits.check(p.Fallback)); err != nil {
		return fmt.Errorf("password: Fallback: %w", err)
	}
	accepted := p.Accept
	if accepted == nil {
		accepted = slices.Sorted(maps.Keys(schemes))
	}
	if !slices.Contains(accepted, p.Fallback.Scheme) {
		return fmt.Errorf("password: Fallback %v is not among the accepted schemes", p.Fallback.Scheme)
	}
	for _, s := range accepted {
		p.Forms.Declare(fleetgate.Password(s.String()))
	}
	p.Forms.Want(fleetgate.Password(p.Preferred.Scheme.String()))
	if p.Pepper != nil {
		p.Forms.Want(fleetgate.Pepper)
	}
	return nil
}

// target returns the parameters Hash writes now, and whether it peppers.
func (h *Hasher) target() (Params, bool) {
	p := &h.policy
	if !p.Forms.Allows(fleetgate.Password(p.Preferred.Scheme.String())) {
		return p.Fallback, false
	}
	return p.Preferred, p.Pepper != nil && p.Forms.Allows(fleetgate.Pepper)
}

// needsRehash reports whether a verified hash should be replaced by what
// Hash writes now. While the fleet has not opened the preferred scheme, a
// hash is only strengthened within the fallback's scheme: one that another
// process wrote in a newer form is never turned back.
func (h *Hasher) needsRehash(d *decoded) bool {
	target, peppered := h.target()
	if target == h.policy.Fallback && h.policy.Forms != nil && !h.policy.Forms.Allows(fleetgate.Password(h.policy.Preferred.Scheme.String())) {
		return d.params.Scheme == target.Scheme && d.params.weakerThan(target)
	}
	if d.params.weakerThan(target) {
		return true
	}
	return peppered && d.pepper != h.policy.Pepper.Primary().ID
}

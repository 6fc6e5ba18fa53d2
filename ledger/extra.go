package ledger

import (
	"encoding/json"
	"maps"
	"reflect"
	"strings"
	"sync"
)

// stateFields is State without its JSON methods.
type stateFields State

// knownFields are the JSON names of State's fields.
var knownFields = sync.OnceValue(func() map[string]bool {
	known := map[string]bool{}
	t := reflect.TypeFor[stateFields]()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			known[strings.ToLower(name)] = true
		}
	}
	return known
})

// UnmarshalJSON decodes a ledger body, keeping the fields this release
// does not know (a newer release's records) so that its next write
// carries them on: a release rolled back to, or one of a fleet deployed
// one instance at a time, does not drop what a newer one recorded.
func (s *State) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, (*stateFields)(s)); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	// Go's decoder matches names without regard to case: so does the
	// test of what is known.
	maps.DeleteFunc(all, func(k string, _ json.RawMessage) bool { return knownFields()[strings.ToLower(k)] })
	s.extra = nil
	if len(all) > 0 {
		s.extra = all
	}
	return nil
}

// MarshalJSON encodes the state with the unknown fields it was read with.
func (s State) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(stateFields(s))
	if err != nil || len(s.extra) == 0 {
		return b, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	for k, v := range s.extra {
		all[k] = v
	}
	return json.Marshal(all)
}

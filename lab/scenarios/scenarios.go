// Package scenarios is the lab's registry: every scenario 'ward bench'
// runs, in order. Adding a scenario is one package under lab/scenarios and
// one line here (CONTRIBUTING.md).
package scenarios

import (
	"github.com/wardlab/ward/lab"
	aeadlab "github.com/wardlab/ward/lab/scenarios/aead"
	chatlab "github.com/wardlab/ward/lab/scenarios/chat"
	handshakelab "github.com/wardlab/ward/lab/scenarios/handshake"
	jvmlab "github.com/wardlab/ward/lab/scenarios/jvm"
	kmslab "github.com/wardlab/ward/lab/scenarios/kms"
	migratelab "github.com/wardlab/ward/lab/scenarios/migrate"
	passwordlab "github.com/wardlab/ward/lab/scenarios/password"
	subjectlab "github.com/wardlab/ward/lab/scenarios/subject"
	tlslab "github.com/wardlab/ward/lab/scenarios/tls"
)

// All returns the lab's scenarios in the order 'ward bench' runs them
// and the report shows them.
func All() []lab.Scenario {
	return []lab.Scenario{
		aeadlab.Scenario{},
		passwordlab.Scenario{},
		kmslab.Scenario{},
		handshakelab.Scenario{},
		tlslab.Scenario{},
		chatlab.Scenario{},
		migratelab.Scenario{},
		subjectlab.Scenario{},
		jvmlab.Scenario{},
	}
}

module github.com/wardlab/ward/cmd/ward-kms-pkcs11

go 1.27

replace github.com/wardlab/ward => ../..

require (
	github.com/ThalesGroup/crypto11 v1.6.2
	github.com/miekg/pkcs11 v1.1.2
	github.com/wardlab/ward v0.1.0
)

require (
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/thales-e-security/pool v0.0.2 // indirect
	golang.org/x/crypto v0.59.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

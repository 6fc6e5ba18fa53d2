module github.com/wardlab/ward/integration

go 1.27

replace (
	github.com/wardlab/ward => ..
	github.com/wardlab/ward/cmd/ward => ../cmd/ward
	github.com/wardlab/ward/examples => ../examples
	github.com/wardlab/ward/internal/browsertest => ../internal/browsertest
	github.com/wardlab/ward/internal/cli => ../internal/cli
	github.com/wardlab/ward/internal/localkms => ../internal/localkms
	github.com/wardlab/ward/kms/awskms => ../kms/awskms
	github.com/wardlab/ward/lab => ../lab
	github.com/wardlab/ward/pq => ../pq
)

require (
	github.com/go-crypt/crypt v0.14.15
	github.com/go-crypt/x v0.4.17
	github.com/wardlab/ward v0.0.0-00010101000000-000000000000
)

require (
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
	golang.org/x/crypto v0.59.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

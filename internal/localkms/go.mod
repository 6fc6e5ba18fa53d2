module github.com/wardlab/ward/internal/localkms

go 1.27

replace (
	github.com/wardlab/ward => ../..
	github.com/wardlab/ward/cmd/ward => ../../cmd/ward
	github.com/wardlab/ward/examples => ../../examples
	github.com/wardlab/ward/integration => ../../integration
	github.com/wardlab/ward/internal/browsertest => ../browsertest
	github.com/wardlab/ward/internal/cli => ../cli
	github.com/wardlab/ward/kms/awskms => ../../kms/awskms
	github.com/wardlab/ward/lab => ../../lab
	github.com/wardlab/ward/pq => ../../pq
)

tool github.com/nsmithuk/local-kms

require (
	github.com/nsmithuk/local-kms v0.0.0-20260228092603-2a5e92d09ab6
	github.com/sirupsen/logrus v1.4.2
)

require (
	github.com/aws/aws-sdk-go v1.44.295 // indirect
	github.com/btcsuite/btcd/btcec/v2 v2.3.2 // indirect
	github.com/decred/dcrd/dcrec/secp256k1/v4 v4.1.0 // indirect
	github.com/gofrs/uuid v4.2.0+incompatible // indirect
	github.com/golang/snappy v0.0.4 // indirect
	github.com/jmespath/go-jmespath v0.4.0 // indirect
	github.com/konsorten/go-windows-terminal-sequences v1.0.2 // indirect
	github.com/kr/pretty v0.3.0 // indirect
	github.com/rogpeppe/go-internal v1.16.0 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	github.com/syndtr/goleveldb v1.0.1-0.20210819022825-2ae1ddf74ef7 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.44.0 // indirect
	golang.org/x/xerrors v0.0.0-20240903120638-7835f813f4da // indirect
	gopkg.in/check.v1 v1.0.0-20201130134442-10cb98267c6c // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
)

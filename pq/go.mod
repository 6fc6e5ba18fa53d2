module github.com/wardlab/ward/pq

go 1.27

replace (
	github.com/wardlab/ward => ..
	github.com/wardlab/ward/cmd/ward => ../cmd/ward
	github.com/wardlab/ward/examples => ../examples
	github.com/wardlab/ward/integration => ../integration
	github.com/wardlab/ward/internal/browsertest => ../internal/browsertest
	github.com/wardlab/ward/internal/cli => ../internal/cli
	github.com/wardlab/ward/internal/localkms => ../internal/localkms
	github.com/wardlab/ward/kms/awskms => ../kms/awskms
	github.com/wardlab/ward/lab => ../lab
)

require (
	github.com/chromedp/chromedp v0.23.1
	github.com/cloudflare/circl v1.6.5
	github.com/spf13/cobra v1.10.2
	github.com/wardlab/ward v0.0.0-00010101000000-000000000000
	github.com/wardlab/ward/internal/browsertest v0.0.0-00010101000000-000000000000
	github.com/wardlab/ward/internal/cli v0.0.0-00010101000000-000000000000
	golang.org/x/sys v0.50.0
	golang.org/x/time v0.16.0
)

require (
	github.com/chromedp/cdproto v0.160.3 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	golang.org/x/crypto v0.59.0 // indirect
	golang.org/x/term v0.48.0 // indirect
)

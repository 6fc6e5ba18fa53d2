module github.com/wardlab/ward/internal/browsertest

go 1.27

replace (
	github.com/wardlab/ward => ../..
	github.com/wardlab/ward/cmd/ward => ../../cmd/ward
	github.com/wardlab/ward/examples => ../../examples
	github.com/wardlab/ward/integration => ../../integration
	github.com/wardlab/ward/internal/cli => ../cli
	github.com/wardlab/ward/internal/localkms => ../localkms
	github.com/wardlab/ward/kms/awskms => ../../kms/awskms
	github.com/wardlab/ward/lab => ../../lab
	github.com/wardlab/ward/pq => ../../pq
)

require github.com/chromedp/chromedp v0.23.1

require (
	github.com/chromedp/cdproto v0.160.3 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
)

// Command ward-chat is seed 000's service built on ward: a chat with an AI
// partner whose messages are encrypted in the application, bound to their
// rows, under a keyring wrapped by a KMS key, so that people with database
// access cannot read them while the user and the assistant can.
//
//	go run ./examples/chat/cmd/ward-chat [serve] [--listen 127.0.0.1:8080] [--db sqlite:chat.db | postgres://…] [--kms URL]
//	go run ./examples/chat/cmd/ward-chat inspect-db [--db …]      # what an operator sees
//	go run ./examples/chat/cmd/ward-chat rotate [--db …]          # new key + re-encryption (service stopped)
//	kill -HUP <pid of serve>                        # the same, live, inside the running service
//
// The master key comes from WARD_MASTER_KEY like the rest of ward; the
// keyring file (chat-keyring.json) is created on first start, wrapped by
// the local KMS provider, or by --kms (for example AWS KMS).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/wardlab/ward/examples/chat"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ward-chat: error:", err)
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	var o chat.Options
	var listen string
	fs.StringVar(&listen, "listen", "127.0.0.1:8080", "address to listen on")
	fs.StringVar(&o.DB, "db", "sqlite:chat.db", "database: sqlite:PATH or postgres://…")
	fs.StringVar(&o.KeyringPath, "keyring", "chat-keyring.json", "keyring file")
	fs.StringVar(&o.KMSURL, "kms", "local://", "KMS URL wrapping the keyring (local:// uses WARD_MASTER_KEY)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	app, err := chat.Open(ctx, o, true)
	if err != nil {
		return err
	}
	defer app.Close()
	switch cmd {
	case "serve":
		return app.Serve(ctx, listen, out)
	case "inspect-db":
		return app.Inspect(ctx, out)
	case "rotate":
		return app.Rotate(ctx, out)
	}
	return fmt.Errorf("unknown command %q (serve, inspect-db, rotate)", cmd)
}

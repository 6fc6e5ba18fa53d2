// Command adopt runs the adoption guide (docs/ADOPTING.md): with no
// arguments on a temporary SQLite database seeded with a plaintext users
// table, printing each step; with serve, as one process of the adopted
// application's fleet:
//
//	adopt serve --db URL --keyring FILE [--listen 127.0.0.1:0] [--stage NAME]
//
// (the master key in WARD_MASTER_KEY; the database already adopted).
// --stage runs one release of a rolling adoption instead (plain, reader,
// mixed, encrypted, argon2, subject: docs/ADOPTING.md's deploy plans), on
// a database prepared for it (adopt.PrepareStages); SIGTERM drains the
// requests under way and leaves the fleet.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	_ "modernc.org/sqlite"

	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/examples/adopt"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		if err := serve(os.Args[2:]); err != nil {
			log.Fatal(err)
		}
		return
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "ward-adopt")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", filepath.Join(dir, "app.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if err := adopt.Seed(ctx, db, field.SQLite, 1000); err != nil {
		log.Fatal(err)
	}
	fmt.Println("seeded: users (id INTEGER PRIMARY KEY AUTOINCREMENT, email TEXT UNIQUE, name) with 1,000 plaintext addresses")
	kr, err := keyring.New(keyring.AES256GCM) // in production: keyring.Load (ward keyring new)
	if err != nil {
		log.Fatal(err)
	}
	if err := adopt.Run(ctx, db, field.SQLite, kr, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	dbURL := fs.String("db", "", "database URL (sqlite:PATH or postgres://…)")
	krPath := fs.String("keyring", "keyring.json", "keyring file")
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	stageName := fs.String("stage", "", "serve one stage of a rolling adoption (plain, reader, mixed, encrypted, argon2, subject)")
	fs.Parse(args)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *stageName != "" {
		return serveStage(ctx, *dbURL, *krPath, *listen, *stageName)
	}
	kr, err := loadKeyring(ctx, *krPath)
	if err != nil {
		return err
	}
	db, driver, err := dburl.Open(*dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	d, err := field.ParseDialect(driver)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	return adopt.Serve(ctx, db, d, kr, ln, os.Stdout)
}

func loadKeyring(ctx context.Context, path string) (*keyring.Keyring, error) {
	mk, err := local.Load("", nil)
	if err != nil {
		return nil, err
	}
	return keyring.Load(ctx, path, mk)
}

// serveStage serves one stage of a rolling adoption (the keyring is not
// loaded at the stage before ward).
func serveStage(ctx context.Context, dbURL, krPath, listen, name string) error {
	st, err := adopt.ParseStage(name)
	if err != nil {
		return err
	}
	o := adopt.StageOptions{Stage: st}
	if st != adopt.StagePlain {
		if o.Keyring, err = loadKeyring(ctx, krPath); err != nil {
			return err
		}
	}
	db, driver, err := dburl.Open(dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	if o.Dialect, err = field.ParseDialect(driver); err != nil {
		return err
	}
	o.DB = db
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	return adopt.ServeStage(ctx, o, ln, os.Stdout)
}

// Command example shows ward's observer as OpenTelemetry metrics: with
// OTEL_METRICS_EXPORTER=console (set here for the demonstration; a
// service reads it from its environment), a column seals and opens a
// value, one open is refused for another row, and the console exporter
// prints the ward.* metrics when the providers shut down.
package main

import (
	"context"
	"fmt"
	"os"

	wardotel "github.com/wardlab/ward/contrib/otel"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/observe"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	os.Setenv("OTEL_METRICS_EXPORTER", "console")
	obs, shutdown, err := wardotel.Setup(ctx, os.Stdout)
	if err != nil {
		return err
	}
	observe.Set(obs)
	kr, err := keyring.New(keyring.AES256GCM)
	if err != nil {
		return err
	}
	col, err := field.NewColumn(kr, "notes", "body")
	if err != nil {
		return err
	}
	ct, err := col.SealString(field.RowInt(7), "the launch code is in the blue folder")
	if err != nil {
		return err
	}
	if _, err := col.OpenString(field.RowInt(7), ct); err != nil {
		return err
	}
	_, refused := col.OpenString(field.RowInt(8), ct)
	fmt.Printf("sealed and opened a value of notes.body; another row's open: %v\nthe metrics (console exporter, JSON):\n", refused)
	return shutdown(ctx)
}

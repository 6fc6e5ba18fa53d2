package main

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/term"
)

// errNoTTY means no terminal is available to prompt on.
var errNoTTY = errors.New("no terminal to prompt on")

// promptSecret reads a secret from the controlling terminal without echo.
// It uses /dev/tty rather than stdin, which carries data for encrypt and
// decrypt.
func promptSecret(prompt string) ([]byte, error) {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil, errNoTTY
	}
	defer tty.Close()
	if !term.IsTerminal(int(tty.Fd())) {
		return nil, errNoTTY
	}
	fmt.Fprint(tty, prompt)
	b, err := term.ReadPassword(int(tty.Fd()))
	fmt.Fprintln(tty)
	if err != nil {
		return nil, fmt.Errorf("reading from terminal: %w", err)
	}
	return b, nil
}

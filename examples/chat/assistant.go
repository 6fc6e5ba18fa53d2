package chat

import (
	"context"
	"fmt"
)

// Assistant writes the AI partner's reply from the decrypted context. A
// real model endpoint implements the same interface.
type Assistant interface {
	Reply(ctx context.Context, history []Message) (string, error)
}

// StandInAssistant is a clearly labelled stand-in for a model: it reads
// the decrypted conversation, exactly as a real model would receive it,
// and answers with a summary of what it read.
type StandInAssistant struct{}

// Reply summarises the context it was given.
func (StandInAssistant) Reply(_ context.Context, history []Message) (string, error) {
	var last string
	users := 0
	for _, m := range history {
		if m.Role == "user" {
			users++
			last = m.Body
		}
	}
	if r := []rune(last); len(r) > 80 {
		last = string(r[:80]) + "…"
	}
	return fmt.Sprintf("[stand-in assistant] I read %d messages of context (%d from you). You said: %q", len(history), users, last), nil
}

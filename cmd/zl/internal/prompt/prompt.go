// Package prompt asks the operator to confirm a destructive command. On a
// terminal it asks and reads the answer; elsewhere (a script, a pipe, CI)
// it refuses unless the command was given --yes, so nothing destructive
// happens unattended by accident. The reader, the writer and whether they
// are a terminal are the caller's, so tests drive them.
package prompt

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Confirmer asks yes/no questions before destructive work.
type Confirmer struct {
	// In is where the answer is read from (stdin).
	In io.Reader
	// Out is where the question is written (stderr: stdout carries the
	// command's result).
	Out io.Writer
	// Terminal reports that In is a terminal a person types into.
	Terminal bool
	// Yes answers every question yes without asking (--yes).
	Yes bool

	answers *bufio.Reader
}

// ErrDeclined is the operator answering no (or closing the input).
var ErrDeclined = errors.New("not confirmed: nothing was written")

// NeedYesError refuses a destructive command off a terminal without --yes.
type NeedYesError struct {
	// Action is what needed confirming.
	Action string
}

// Error implements error.
func (e *NeedYesError) Error() string {
	return fmt.Sprintf("%s needs confirmation, and stdin is not a terminal: pass --yes to go ahead", e.Action)
}

// Confirm asks question ("Delete namespace x?") and returns nil when the
// operator answers y or yes; ErrDeclined for anything else; a
// *NeedYesError off a terminal without Yes. action names the work for
// that error ("namespace delete").
func (c *Confirmer) Confirm(action, question string) error {
	if c.Yes {
		return nil
	}
	if !c.Terminal || c.In == nil {
		return &NeedYesError{Action: action}
	}
	if c.answers == nil {
		c.answers = bufio.NewReader(c.In)
	}
	if _, err := fmt.Fprintf(c.Out, "%s [y/N] ", question); err != nil {
		return err
	}
	line, err := c.answers.ReadString('\n')
	if err != nil && line == "" {
		_, _ = fmt.Fprintln(c.Out)
		return ErrDeclined
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return ErrDeclined
}

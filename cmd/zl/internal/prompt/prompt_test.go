package prompt_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/zae-limiter/zae-limiter-go/cmd/zl/internal/prompt"
)

// TestConfirm: y or yes (any case) goes ahead, anything else or a closed
// input declines; --yes never asks; off a terminal it refuses without
// reading; one reader serves several questions.
func TestConfirm(t *testing.T) {
	for in, want := range map[string]error{
		"y\n": nil, "YES\n": nil, " yes \n": nil, "Y": nil,
		"n\n": prompt.ErrDeclined, "\n": prompt.ErrDeclined, "": prompt.ErrDeclined, "yep\n": prompt.ErrDeclined,
	} {
		var out bytes.Buffer
		c := &prompt.Confirmer{In: strings.NewReader(in), Out: &out, Terminal: true}
		if err := c.Confirm("thing", "Do it?"); !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Errorf("answer %q: %v, want %v", in, err, want)
		}
		if !strings.HasPrefix(out.String(), "Do it? [y/N] ") {
			t.Errorf("answer %q: asked %q", in, out.String())
		}
	}

	var out bytes.Buffer
	yes := &prompt.Confirmer{In: strings.NewReader("n\n"), Out: &out, Terminal: false, Yes: true}
	if err := yes.Confirm("thing", "Do it?"); err != nil || out.Len() != 0 {
		t.Fatalf("--yes: %v, asked %q", err, out.String())
	}

	in := strings.NewReader("y\n")
	off := &prompt.Confirmer{In: in, Out: &out, Terminal: false}
	var ny *prompt.NeedYesError
	if err := off.Confirm("namespace delete", "Delete?"); !errors.As(err, &ny) || err.Error() != "namespace delete needs confirmation, and stdin is not a terminal: pass --yes to go ahead" {
		t.Fatalf("off a terminal: %v", err)
	}
	if in.Len() != 2 || out.Len() != 0 {
		t.Fatal("off a terminal, the input was read or the question asked")
	}

	two := &prompt.Confirmer{In: strings.NewReader("y\nn\n"), Out: &out, Terminal: true}
	if err := two.Confirm("a", "First?"); err != nil {
		t.Fatalf("first: %v", err)
	}
	if err := two.Confirm("b", "Second?"); !errors.Is(err, prompt.ErrDeclined) {
		t.Fatalf("second: %v", err)
	}
}

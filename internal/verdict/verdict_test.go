package verdict_test

import (
	"errors"
	"testing"

	"github.com/zae-limiter/zae-limiter-go/core/limiter"
	"github.com/zae-limiter/zae-limiter-go/internal/verdict"
)

func TestOf(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{&limiter.ResourceDisabled{}, verdict.Disabled},
		{&limiter.RateLimitExceeded{}, verdict.Limited},
		{errors.New("boom"), ""},
	}
	for _, c := range cases {
		if got := verdict.Of(nil, c.err); got != c.want {
			t.Errorf("%T: %q want %q", c.err, got, c.want)
		}
	}
}

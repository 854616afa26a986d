// Package progress shows an operator that a long write is under way: the
// config written, then the fan-out that brings every bucket already in
// use in line (docs/design.md §8), which can take a while on a busy
// namespace. It draws only on a terminal, so scripts and logs see the
// result alone.
package progress

import (
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Indicator is what a command updates while it works.
type Indicator interface {
	// Step names what is being done now.
	Step(description string)
	// Done removes the indicator.
	Done()
}

// Start shows description on w with a spinner and the elapsed time when
// terminal is true (w is a terminal and the operator did not ask for
// quiet); otherwise it shows nothing.
func Start(w io.Writer, terminal bool, description string) Indicator {
	if !terminal {
		return silent{}
	}
	bar := progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(description),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetSpinnerChangeInterval(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	_ = bar.RenderBlank()
	return &spinner{bar: bar}
}

// Counter is a bar for work of a known size: the buckets of a fan-out,
// the targets of an apply.
func Counter(w io.Writer, terminal bool, total int, description string) *progressbar.ProgressBar {
	return progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetVisibility(terminal),
		progressbar.OptionSetDescription(description),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionClearOnFinish(),
	)
}

type spinner struct{ bar *progressbar.ProgressBar }

func (s *spinner) Step(description string) { s.bar.Describe(description) }

func (s *spinner) Done() {
	_ = s.bar.Finish()
	_ = s.bar.Clear()
}

type silent struct{}

func (silent) Step(string) {}
func (silent) Done()       {}

// Fanout is a bar over the buckets a fan-out brings in line
// (docs/design.md §8): its total grows as the fan-out's discovery passes
// count the buckets, and it fills as each is brought in line, found in
// line, found gone or failed.
// Off a terminal it draws nothing. Safe for concurrent use.
type Fanout struct {
	mu    sync.Mutex
	bar   *progressbar.ProgressBar
	total int
}

// StartFanout shows a bar described by description on w when terminal is
// true (w is a terminal and the operator did not ask for quiet).
func StartFanout(w io.Writer, terminal bool, description string) *Fanout {
	if !terminal {
		return &Fanout{}
	}
	bar := progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(description),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionClearOnFinish(),
	)
	_ = bar.RenderBlank()
	return &Fanout{bar: bar}
}

// Set shows done of total buckets.
func (f *Fanout) Set(total, done int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.bar == nil {
		return
	}
	if total != f.total && total > 0 {
		f.total = total
		f.bar.ChangeMax(total)
	}
	_ = f.bar.Set(done)
}

// Done removes the bar.
func (f *Fanout) Done() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.bar == nil {
		return
	}
	_ = f.bar.Finish()
	_ = f.bar.Clear()
	f.bar = nil
}

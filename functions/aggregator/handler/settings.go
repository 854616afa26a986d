package handler

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/zae-limiter/zae-limiter-go/core/aggregator"
)

// The function's environment (docs/design.md §6, §13).
const (
	envTable           = "TABLE_NAME"
	envSnapshotWindows = "SNAPSHOT_WINDOWS"
	envSnapshotTTLDays = "SNAPSHOT_TTL_DAYS"
)

// Settings are the function's configuration: the aggregator's, read from
// the environment by SettingsFromEnv, and what the wiring adds.
type Settings struct {
	// Config is the aggregator's configuration: TableName (TABLE_NAME),
	// Windows (SNAPSHOT_WINDOWS, default hourly,daily) and SnapshotTTL
	// (SNAPSHOT_TTL_DAYS, default 90 days); the rest keep their defaults.
	Config aggregator.Config
	// Clock is the wall clock of the aggregator and its maintainer
	// (default time.Now).
	Clock func() time.Time
	// Metrics receives one EMF document per invocation; main passes
	// aggregator.WriterSink(os.Stdout). Nil disables metrics.
	Metrics aggregator.MetricsSink
}

// SettingsFromEnv reads the function's settings from its environment
// through getenv (os.Getenv in the Lambda).
func SettingsFromEnv(getenv func(string) string) (Settings, error) {
	c := aggregator.Config{TableName: getenv(envTable)}
	if c.TableName == "" {
		return Settings{}, errors.New("aggregator: " + envTable + " is not set")
	}
	windows := getenv(envSnapshotWindows)
	if windows == "" {
		windows = "hourly,daily"
	}
	for _, w := range strings.Split(windows, ",") {
		switch aggregator.Window(strings.TrimSpace(w)) {
		case aggregator.Hourly, aggregator.Daily, aggregator.Monthly:
			c.Windows = append(c.Windows, aggregator.Window(strings.TrimSpace(w)))
		default:
			return Settings{}, fmt.Errorf("aggregator: %s: unknown window %q (hourly, daily, monthly)", envSnapshotWindows, w)
		}
	}
	c.SnapshotTTL = 90 * 24 * time.Hour
	if s := getenv(envSnapshotTTLDays); s != "" {
		days, err := strconv.Atoi(s)
		if err != nil || days < 1 {
			return Settings{}, fmt.Errorf("aggregator: %s=%q: want a positive whole number of days", envSnapshotTTLDays, s)
		}
		c.SnapshotTTL = time.Duration(days) * 24 * time.Hour
	}
	return Settings{Config: c}, nil
}

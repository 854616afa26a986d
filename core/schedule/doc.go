// Package schedule is the calendar of phase 2a (docs/design.md §14): pure
// functions of a cron, a time zone and an instant.
//
//   - [Cron] is a five-field cron expression read as a set of wall-clock
//     minutes ([ParseCron]); [Cron.PrevEdge] and [Cron.NextEdge] find the
//     instants it starts to match (a calendar quota's resets), and
//     [Cron.NextChange] the instants its match changes either way.
//   - [Schedule] is a limit's parameter schedule: entries in order, the
//     first in force wins, each scaling or replacing the parameters
//     ([Schedule.Effective]).
//   - [Resets] is a calendar quota's reset schedule.
//   - [NextBoundary] is the instant a writer stamps into a bucket's vu;
//     [Schedule.RetryAfter] and [Resets.RetryAfter] are the retry hints.
//   - [Decode], [DecodeResets] and the Encode methods are the stored form
//     shared with Python clients of the same table; [Zone] reads the
//     item's time zone.
package schedule

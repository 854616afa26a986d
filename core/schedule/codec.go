package schedule

import (
	"strconv"
	"strings"
)

// The stored form (docs/design.md §14): what a bucket's `sched`, `rsched`,
// `b_{n}_sched` and `b_{n}_rsched` and a config item's `l_{n}_sched` and
// `l_{n}_rsched` hold, as the Python client of the same table writes them.
// Each entry is its cron's fields that are not `*`, tagged in the order
// m (minute), h (hour), D (day of month), M (month), w (weekday), each as
// stored by [Cron.String]; a parameter entry then carries its scale, per
// mille, tagged s, or its absolute values tagged c (capacity), a (refill
// amount) and p (refill period, seconds). Entries are joined by `;` in
// their order. The time zone is the item's `sched_tz`, shared by every
// schedule on the item. Example: `h9-17w1-5s500;h0-6c2000`.
//
// A newer Python client opens the text with an encoding version in decimal
// digits (`1h9-17w1-5s500`); no entry starts with a digit, so the reader
// takes both, and refuses a version it does not know (docs/decisions.md
// P45).

// None is the stored schedule of a limit that has none beside limits
// that do: it overrides the item's default with nothing.
const None = "-"

// encodingVersion is the newest stored-form version this package reads.
const encodingVersion = 1

const (
	fieldTags    = "mhDMw"
	modifierTags = "scap"
)

// EncodingError reports stored schedule text this package cannot read:
// the text, the byte offset at fault and why. A client treats a bucket
// carrying one as unavailable, and the aggregator leaves it alone.
type EncodingError struct {
	Text   string
	Offset int
	Reason string
}

// Error implements error.
func (e *EncodingError) Error() string {
	return "schedule: stored schedule " + strconv.Quote(e.Text) + " at offset " + strconv.Itoa(e.Offset) + ": " + e.Reason
}

// Encode returns s in the stored form; "" for the empty schedule (stored
// as no attribute). s must validate.
func (s Schedule) Encode() string {
	var b strings.Builder
	for i, e := range s {
		if i > 0 {
			b.WriteByte(';')
		}
		writeCron(&b, e.Cron)
		if e.ScalePerMille != 0 {
			b.WriteString("s" + strconv.FormatInt(e.ScalePerMille, 10))
			continue
		}
		for _, m := range [...]struct {
			tag byte
			v   int64
		}{{'c', e.Capacity}, {'a', e.RefillAmount}, {'p', e.RefillPeriodSeconds}} {
			if m.v != 0 {
				b.WriteByte(m.tag)
				b.WriteString(strconv.FormatInt(m.v, 10))
			}
		}
	}
	return b.String()
}

// Encode returns r in the stored form; "" for no resets.
func (r Resets) Encode() string {
	var b strings.Builder
	for i, c := range r {
		if i > 0 {
			b.WriteByte(';')
		}
		writeCron(&b, c)
	}
	return b.String()
}

// writeCron writes c's fields that are not `*`, tagged. A cron of five
// `*` writes nothing: an entry in force at every minute.
func writeCron(b *strings.Builder, c Cron) {
	for i, text := range c.text {
		if text != "*" {
			b.WriteByte(fieldTags[i])
			b.WriteString(text)
		}
	}
}

// Decode reads a parameter schedule in the stored form. "" and None
// decode to the empty schedule. Every entry must carry exactly one of a
// scale or some absolute values, within bounds.
func Decode(text string) (Schedule, error) {
	entries, err := decodeEntries(text)
	if err != nil || entries == nil {
		return nil, err
	}
	s := make(Schedule, 0, len(entries))
	for _, de := range entries {
		e := Entry{Cron: de.cron}
		for _, m := range de.modifiers {
			n, err := strconv.ParseInt(m.value, 10, 64)
			if err != nil || n <= 0 || strings.HasPrefix(m.value, "+") {
				return nil, &EncodingError{Text: text, Offset: m.offset, Reason: "modifier " + string(m.tag) + " is not a positive whole number"}
			}
			switch m.tag {
			case 's':
				e.ScalePerMille = n
			case 'c':
				e.Capacity = n
			case 'a':
				e.RefillAmount = n
			case 'p':
				e.RefillPeriodSeconds = n
			}
		}
		if err := e.Validate(); err != nil {
			return nil, &EncodingError{Text: text, Offset: de.offset, Reason: err.(*EntryError).Reason}
		}
		s = append(s, e)
	}
	return s, nil
}

// DecodeResets reads a reset schedule in the stored form. "" and None
// decode to no resets; an entry carrying a scale or absolute values is
// refused (a reset changes no parameters).
func DecodeResets(text string) (Resets, error) {
	entries, err := decodeEntries(text)
	if err != nil || entries == nil {
		return nil, err
	}
	r := make(Resets, 0, len(entries))
	for _, de := range entries {
		if len(de.modifiers) > 0 {
			m := de.modifiers[0]
			return nil, &EncodingError{Text: text, Offset: m.offset, Reason: "a reset entry carries modifier " + string(m.tag) + "; a reset changes no parameters"}
		}
		r = append(r, de.cron)
	}
	return r, nil
}

type decodedEntry struct {
	offset    int
	cron      Cron
	modifiers []modifier
}

type modifier struct {
	tag    byte
	value  string
	offset int
}

// decodeEntries splits stored text into entries, each a cron and its
// modifiers; nil for "" and None.
func decodeEntries(text string) ([]decodedEntry, error) {
	if text == "" || text == None {
		return nil, nil
	}
	body, offset := text, 0
	if i := strings.IndexFunc(body, func(r rune) bool { return r < '0' || r > '9' }); i != 0 {
		if i < 0 {
			i = len(body)
		}
		v, err := strconv.Atoi(body[:i])
		if err != nil || v < 1 || v > encodingVersion {
			return nil, &EncodingError{Text: text, Reason: "encoding version " + strconv.Quote(body[:i]) + " is not one this build reads (up to " + strconv.Itoa(encodingVersion) + ")"}
		}
		body, offset = body[i:], i
		if body == "" {
			return nil, &EncodingError{Text: text, Offset: offset, Reason: "no entry after the encoding version"}
		}
	}
	var out []decodedEntry
	for _, entry := range strings.Split(body, ";") {
		de, err := decodeEntry(text, entry, offset)
		if err != nil {
			return nil, err
		}
		out = append(out, de)
		offset += len(entry) + 1
	}
	return out, nil
}

// decodeEntry reads one entry that starts at offset in text.
func decodeEntry(text, entry string, offset int) (decodedEntry, error) {
	de := decodedEntry{offset: offset}
	if entry == "" {
		return de, &EncodingError{Text: text, Offset: offset, Reason: "empty entry"}
	}
	fields := [5]string{"*", "*", "*", "*", "*"}
	var seen [256]bool
	for i := 0; i < len(entry); {
		tag := entry[i]
		if !strings.ContainsRune(fieldTags+modifierTags, rune(tag)) {
			return de, &EncodingError{Text: text, Offset: offset + i, Reason: "no tag " + strconv.Quote(string(tag)) + " (want one of " + fieldTags + modifierTags + ")"}
		}
		if seen[tag] {
			return de, &EncodingError{Text: text, Offset: offset + i, Reason: "tag " + string(tag) + " given twice"}
		}
		seen[tag] = true
		j := i + 1
		for j < len(entry) && !strings.ContainsRune(fieldTags+modifierTags, rune(entry[j])) {
			j++
		}
		if j == i+1 {
			return de, &EncodingError{Text: text, Offset: offset + i, Reason: "tag " + string(tag) + " has no value"}
		}
		if k := strings.IndexByte(fieldTags, tag); k >= 0 {
			fields[k] = entry[i+1 : j]
		} else {
			de.modifiers = append(de.modifiers, modifier{tag: tag, value: entry[i+1 : j], offset: offset + i})
		}
		i = j
	}
	c, err := ParseCron(strings.Join(fields[:], " "))
	if err != nil {
		return de, &EncodingError{Text: text, Offset: offset, Reason: err.Error()}
	}
	de.cron = c
	return de, nil
}

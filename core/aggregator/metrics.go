package aggregator

import (
	"encoding/json"
	"io"
	"sync"
	"time"
)

// MetricsSink receives the aggregator's metrics: one CloudWatch Embedded
// Metric Format (EMF) JSON document per invocation. In Lambda the document
// is written as one line to stdout, where CloudWatch Logs extracts the
// metrics (WriterSink(os.Stdout)). Emit must not keep doc.
type MetricsSink interface {
	Emit(doc []byte)
}

// WriterSink returns a sink writing each document followed by a newline to
// w, one document at a time.
func WriterSink(w io.Writer) MetricsSink { return &writerSink{w: w} }

type writerSink struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *writerSink) Emit(doc []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	line := make([]byte, 0, len(doc)+1)
	line = append(append(line, doc...), '\n')
	_, _ = s.w.Write(line)
}

// EMF names: the namespace, the one dimension, and the metrics.
const (
	MetricsNamespace = "ZaeLimiter/Aggregator"
	DimensionTable   = "TableName"

	MetricRecords          = "Records"          // records delivered
	MetricSnapshotsWritten = "SnapshotsWritten" // snapshot UpdateItems that applied
	MetricRefills          = "Refills"          // proactive refills that landed
	MetricDoublings        = "Doublings"        // shard-0 doublings that landed
	MetricClones           = "Clones"           // Path 2 clones created
	MetricSkippedRecords   = "SkippedRecords"   // records ignored (not bucket INSERT/MODIFY) or poison
	MetricPoisonRecords    = "PoisonRecords"    // bucket records that could not be used
	MetricFailures         = "Failures"         // snapshot runs not done + maintenance failures
	MetricStreamLagMs      = "StreamLagMs"      // now − oldest ApproximateCreationDateTime
)

// emfMetric is one entry of CloudWatchMetrics[].Metrics.
type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

// emfDirective is one entry of _aws.CloudWatchMetrics.
type emfDirective struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []emfMetric `json:"Metrics"`
}

// emfMetadata is the _aws member.
type emfMetadata struct {
	Timestamp         int64          `json:"Timestamp"`
	CloudWatchMetrics []emfDirective `json:"CloudWatchMetrics"`
}

// emfDocument renders st as an EMF document: the _aws metadata, the
// TableName dimension and every metric value as top-level members.
// StreamLagMs is present only when some record carried a timestamp. It
// returns nil if the document does not render (it always does: every
// member is a string, an int64 or a fixed struct).
func emfDocument(table string, now time.Time, st batchStats) []byte {
	doc := map[string]any{DimensionTable: table}
	var metrics []emfMetric
	put := func(name, unit string, v int64) {
		metrics = append(metrics, emfMetric{Name: name, Unit: unit})
		doc[name] = v
	}
	put(MetricRecords, "Count", int64(st.records))
	put(MetricSnapshotsWritten, "Count", int64(st.writes))
	put(MetricRefills, "Count", int64(st.maint.Refills))
	put(MetricDoublings, "Count", int64(st.maint.Doublings))
	put(MetricClones, "Count", int64(st.maint.Clones))
	put(MetricSkippedRecords, "Count", int64(st.skipped+st.poison))
	put(MetricPoisonRecords, "Count", int64(st.poison))
	put(MetricFailures, "Count", int64(st.failures+st.maint.Failures))
	if st.hasLag {
		put(MetricStreamLagMs, "Milliseconds", st.lag.Milliseconds())
	}
	doc["_aws"] = emfMetadata{
		Timestamp: now.UnixMilli(),
		CloudWatchMetrics: []emfDirective{{
			Namespace:  MetricsNamespace,
			Dimensions: [][]string{{DimensionTable}},
			Metrics:    metrics,
		}},
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil
	}
	return out
}

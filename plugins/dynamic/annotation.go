// This file reads and writes the node annotations the annotator and the
// plugin share: "<metric>: <value>,<timestamp>", and when such a value is
// still fresh enough to trust.

package dynamic

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
	// A zone named by $TZ (crane deployments set Asia/Shanghai) must load
	// on machines without a zone database.
	_ "time/tzdata"
)

// Annotation keys and freshness periods, as crane-scheduler has them.
const (
	// HotValueKey is the annotation holding a node's hot value: how many
	// pods were bound to it recently, in the HotValue policy's units.
	HotValueKey = "node_hot_value"
	// HotValueActivePeriod is how long a hot value stays fresh.
	HotValueActivePeriod = 5 * time.Minute
	// ExtraActivePeriod is added to a metric's sync period to get how long
	// its annotation stays fresh, so one late sync does not blind the plugin.
	ExtraActivePeriod = 5 * time.Minute
)

// Timestamps. crane-scheduler writes the wall-clock time of the zone named
// by $TZ followed by a literal "Z", and reads it back in the same zone. With
// $TZ unset, crane assumes Asia/Shanghai; minisched assumes UTC, which is
// what the "Z" says and what RFC 3339 readers and hand-written annotations
// mean by it. To share annotations with a crane annotator that runs without
// $TZ, run minisched with TZ=Asia/Shanghai. Writer and reader must agree
// on the zone, so both use TimestampLocation.
const (
	// TimestampFormat is crane-scheduler's layout.
	TimestampFormat = "2006-01-02T15:04:05Z"
	// DefaultTimeZone is the zone of timestamps when $TZ is unset.
	DefaultTimeZone = "UTC"
)

// TimestampLocation is the zone of crane-style timestamps: $TZ, else
// DefaultTimeZone; UTC if the name does not load.
func TimestampLocation() *time.Location {
	zone := os.Getenv("TZ")
	if zone == "" {
		zone = DefaultTimeZone
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// FormatAnnotation is the annotation value "<value>,<timestamp>" with the
// timestamp in crane-scheduler's form, in loc.
func FormatAnnotation(value string, t time.Time, loc *time.Location) string {
	return value + "," + t.In(loc).Format(TimestampFormat)
}

// ParseAnnotation splits "<value>,<timestamp>" into a value, which must be
// a number not below 0, and a time. The timestamp is either crane's form
// (read in loc) or RFC 3339 with an offset, such as
// 2026-11-23T17:32:51+01:00. A timestamp ending in "Z" is read as crane's.
func ParseAnnotation(s string, loc *time.Location) (float64, time.Time, error) {
	valueStr, tsStr, ok := strings.Cut(s, ",")
	if !ok || strings.Contains(tsStr, ",") {
		return 0, time.Time{}, fmt.Errorf("%q is not <value>,<timestamp>", s)
	}
	value, err := strconv.ParseFloat(strings.TrimSpace(valueStr), 64)
	if err != nil || value < 0 || math.IsNaN(value) || math.IsInf(value, 0) {
		return 0, time.Time{}, fmt.Errorf("value %q of %q is not a number ≥ 0", valueStr, s)
	}
	tsStr = strings.TrimSpace(tsStr)
	ts, err := time.ParseInLocation(TimestampFormat, tsStr, loc)
	if err != nil {
		if ts, err = time.Parse(time.RFC3339, tsStr); err != nil {
			return 0, time.Time{}, fmt.Errorf("timestamp %q of %q is neither %s nor RFC 3339", tsStr, s, TimestampFormat)
		}
	}
	return value, ts, nil
}

// errNoAnnotation marks a node without the annotation: nothing to report.
var errNoAnnotation = errors.New("no annotation")

// freshValue returns the value of annotation key if it was written less
// than active ago (crane-scheduler's "now before timestamp + active").
// Missing, malformed and stale values are errors, which callers treat as
// "no data".
func freshValue(annotations map[string]string, key string, active time.Duration, now time.Time,
	loc *time.Location) (float64, error) {
	s, ok := annotations[key]
	if !ok {
		return 0, errNoAnnotation
	}
	value, ts, err := ParseAnnotation(s, loc)
	if err != nil {
		return 0, err
	}
	if !now.Before(ts.Add(active)) {
		return 0, fmt.Errorf("%q is stale: written at %s, fresh for %v", s, ts.Format(time.RFC3339), active)
	}
	return value, nil
}

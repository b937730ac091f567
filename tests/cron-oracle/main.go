// The oracle of tests/cronDifferential.spec.ts: robfig/cron v3.0.1 itself (the parser Karpenter v1.14.1 and
// Kubernetes' CronJob controller vendor), built offline in GOPATH mode from Debian's golang-github-robfig-cron-dev.
//
// Usage: oracle PATTERN < schedules. PATTERN is the NodePool CRD's pattern for budgets[].schedule. Each input line is
// one schedule as a JSON string; each output line is a JSON object with two readings of it:
//   - "budget": as a NodePool budget: the API server matches PATTERN (Go regexp, as apiextensions does), then
//     Budget.IsActive parses "TZ=UTC " + schedule with cron.ParseStandard (karpenter v1.14.1 nodepool.go:416);
//   - "cronjob": as a CronJob's spec.schedule with timeZone set: the API server's validateScheduleFormat
//     (cron.ParseStandard(schedule), and no "TZ" in it), then the controller parses "TZ=Etc/UTC " + schedule.
//
// Each reading is "refused: why", "every DURATION" (a ConstantDelaySchedule), or "fires COUNT FIRST LAST HASH": the
// fire times from 2026-01-01T00:00Z (inclusive) to 2027-01-01T00:00Z (exclusive) found by SpecSchedule.Next, as
// minutes since the start; HASH is FNV-1a 32 over each minute as 4 little-endian bytes, in order (hex).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"regexp"
	"strings"
	"time"
	// Etc/UTC without the machine's zoneinfo.
	_ "time/tzdata"

	cron "github.com/robfig/cron/v3"
)

var (
	start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	end   = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
)

// Fire times by schedule bits (both readers, and many spellings, come to the same bits), in UTC.
var seen = map[[6]uint64]string{}

func fires(s cron.Schedule) string {
	switch s := s.(type) {
	case cron.ConstantDelaySchedule:
		return "every " + s.Delay.String()
	case *cron.SpecSchedule:
		key := [6]uint64{s.Second, s.Minute, s.Hour, s.Dom, s.Month, s.Dow}
		if out, ok := seen[key]; ok {
			return out
		}
		out := walk(s)
		seen[key] = out
		return out
	default:
		return fmt.Sprintf("refused: unknown schedule type %T", s)
	}
}

// walk lists the fire times in [start, end) with SpecSchedule.Next, as the oracle's "fires" line.
func walk(s *cron.SpecSchedule) string {
	// ParseStandard's seconds field is second 0 alone (the default "0" it fills in, parser.go:38-39 and :204-207; the
	// descriptors' 1 << seconds.min, :369), so no fire time lies in the 59 s after one: Next from a fire time's 59th
	// second is Next from the fire time, without stepping through those seconds one at a time (spec.go:162-171),
	// which is most of a dense schedule's walk.
	if s.Second != 1<<0 {
		return fmt.Sprintf("refused: seconds field %b is not second 0 alone", s.Second)
	}
	h := fnv.New32a()
	var count, first, last int64 = 0, -1, -1
	buf := make([]byte, 4)
	// Next returns the first time strictly after its argument, so start a second early.
	for t := s.Next(start.Add(-time.Second)); !t.IsZero() && t.Before(end); t = s.Next(t.Add(59 * time.Second)) {
		if t.Sub(start)%time.Minute != 0 {
			return fmt.Sprintf("refused: fire time %s is not on a minute", t)
		}
		m := int64(t.Sub(start) / time.Minute)
		buf[0], buf[1], buf[2], buf[3] = byte(m), byte(m>>8), byte(m>>16), byte(m>>24)
		h.Write(buf)
		if first < 0 {
			first = m
		}
		last = m
		count++
	}
	return fmt.Sprintf("fires %d %d %d %08x", count, first, last, h.Sum32())
}

// parse is cron.ParseStandard, with its panic on "TZ=" and no ASCII space (parser.go:97-99, robfig/cron issue 554)
// as an error: the API server recovers a panicking request and refuses it.
func parse(spec string) (s cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return cron.ParseStandard(spec)
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: oracle PATTERN < schedules (one JSON string a line)")
		os.Exit(2)
	}
	pattern := regexp.MustCompile(os.Args[1])
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for in.Scan() {
		var schedule string
		if err := json.Unmarshal(in.Bytes(), &schedule); err != nil {
			fmt.Fprintf(os.Stderr, "not a JSON string: %s\n", in.Text())
			os.Exit(2)
		}
		var budget, cronjob string
		if !pattern.MatchString(schedule) {
			budget = "refused: CRD pattern"
		} else if s, err := parse("TZ=UTC " + schedule); err != nil {
			budget = "refused: " + err.Error()
		} else {
			budget = fires(s)
		}
		if _, err := parse(schedule); err != nil {
			cronjob = "refused: " + err.Error()
		} else if strings.Contains(schedule, "TZ") {
			cronjob = "refused: TZ in schedule"
		} else if s, err := parse("TZ=Etc/UTC " + schedule); err != nil {
			cronjob = "refused: controller: " + err.Error()
		} else {
			cronjob = fires(s)
		}
		if err := enc.Encode(map[string]string{"budget": budget, "cronjob": cronjob}); err != nil {
			panic(err)
		}
	}
	if err := in.Err(); err != nil {
		panic(err)
	}
}

package tasks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/internal/jsapi"
)

// Schedule is a periodic task: the server enqueues one task each time it
// comes, by its own clock, however many workers declare it. Exactly one
// of Cron and Every is set.
type Schedule struct {
	// Cron is when, as six fields with seconds first ("0 0 2 * * *": at
	// 02:00:00 every day) or a name: @yearly, @monthly, @weekly, @daily,
	// @hourly. In UTC, or in TimeZone.
	Cron string `yaml:"cron"`
	// TimeZone is the IANA zone Cron is read in (Europe/Paris); only with
	// Cron.
	TimeZone string `yaml:"time_zone"`
	// Every is the period, at least 1s: the first task comes a period
	// after the schedule is declared, rounded to the second.
	Every time.Duration `yaml:"every"`
	// Data is each task's data.
	Data string `yaml:"data"`
	// Priority is each task's; default normal.
	Priority Priority `yaml:"priority"`
	// LatestOnly keeps at most one of its tasks waiting: a tick replaces
	// the one before it that no worker took yet, so that an outage leaves
	// one task, not one per tick missed.
	LatestOnly bool `yaml:"latest_only"`
}

// maxScheduleName is the longest name of a schedule, in bytes.
const maxScheduleName = 128

// cronNames are the names nats-server takes for a cron expression.
var cronNames = map[string]bool{"@yearly": true, "@annually": true, "@monthly": true, "@weekly": true,
	"@daily": true, "@midnight": true, "@hourly": true}

// validate adds s's problems under its name's path to p.
func (s Schedule) validate(p conf.Problems, path string) {
	switch {
	case (s.Cron == "") == (s.Every == 0):
		p.Addf(path, "one of cron and every, not %s", map[bool]string{true: "both", false: "neither"}[s.Cron != ""])
	case s.Every != 0 && s.Every < time.Second:
		p.Addf(path+".every", "must be at least 1s, got %v", s.Every)
	case s.Every != 0 && s.TimeZone != "":
		p.Addf(path+".time_zone", "only with cron: every is a period, not a time of day")
	case s.Cron != "" && !cronNames[s.Cron] && len(strings.Fields(s.Cron)) != 6:
		p.Addf(path+".cron", "%q: want six fields, seconds first (\"0 0 2 * * *\"), or a name such as @daily", s.Cron)
	}
	if s.TimeZone != "" {
		if _, err := time.LoadLocation(s.TimeZone); err != nil {
			p.Addf(path+".time_zone", "%v", err)
		}
	}
	if s.Priority != Normal && s.Priority != High && s.Priority != Low {
		p.Addf(path+".priority", "unknown priority %d", int(s.Priority))
	}
}

// pattern is s as the server's Nats-Schedule header writes it.
func (s Schedule) pattern() string {
	if s.Every != 0 {
		return "@every " + s.Every.String()
	}
	return s.Cron
}

// definition is a digest of all that makes s: a schedule whose digest
// is unchanged is not written again, which would move an @every's phase.
func (s Schedule) definition() string {
	sum := sha256.Sum256([]byte(strings.Join([]string{s.pattern(), s.TimeZone, s.Data, s.Priority.String(),
		strconv.FormatBool(s.LatestOnly)}, "\x00")))
	return hex.EncodeToString(sum[:16])
}

// tickID is the task id of schedule name's ticks, in the queue's reserved
// space: every tick waits on the one subject it names.
func tickID(name string) string { return ReservedMsgIDPrefix + "tick:" + name }

// scheduleMsg is schedule name, s, as the queue stream stores it.
func (n names) scheduleMsg(name string, s Schedule) *nats.Msg {
	m := nats.NewMsg(fmt.Sprintf(periodicTmpl, n.queue, name))
	m.Data = []byte(s.Data)
	m.Header.Set(scheduleNameHeader, name)
	m.Header.Set(scheduleDefHeader, s.definition())
	m.Header.Set(jetstream.ScheduleHeader, s.pattern())
	m.Header.Set(jetstream.ScheduleTargetHeader, n.waiting(s.Priority.slot(), tickID(name)))
	if s.TimeZone != "" {
		m.Header.Set(jetstream.ScheduleTimeZoneHeader, s.TimeZone)
	}
	if s.LatestOnly {
		m.Header.Set(jetstream.ScheduleRollupHeader, "sub")
	}
	return m
}

// reconcile makes the queue's periodic schedules those of the worker's
// configuration: a schedule missing or changed is written (compare-and-set
// on what it read, so that workers starting together write it once), one
// unchanged is left alone, and one that Corral declared and the
// configuration no longer has is deleted. Schedules written by others,
// without the queue's header, are left alone.
func (w *Worker) reconcile(ctx context.Context, js jetstream.JetStream) error {
	s, err := jsapi.Ask(ctx, func(ctx context.Context) (jetstream.Stream, error) { return js.Stream(ctx, w.cfg.Stream) })
	if err != nil {
		return fmt.Errorf("stream %s: %w", w.cfg.Stream, err)
	}
	for name, sch := range w.cfg.Schedules {
		if err := w.declareSchedule(ctx, js, s, name, sch); err != nil {
			return fmt.Errorf("schedule %s: %w", name, err)
		}
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(fmt.Sprintf(periodicAllTmpl, w.queue)))
	if err != nil {
		return fmt.Errorf("stream %s: %w", w.cfg.Stream, err)
	}
	for subj := range info.State.Subjects {
		name := subj[strings.LastIndexByte(subj, '.')+1:]
		if _, keep := w.cfg.Schedules[name]; keep {
			continue
		}
		m, err := s.GetLastMsgForSubject(ctx, subj)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("schedule %s: %w", name, err)
		}
		if m.Header.Get(scheduleNameHeader) == "" {
			continue // not the queue's
		}
		if err := s.DeleteMsg(ctx, m.Sequence); err != nil {
			// nats.go gives the reason as text alone: look instead.
			if _, gerr := s.GetMsg(ctx, m.Sequence); !errors.Is(gerr, jetstream.ErrMsgNotFound) {
				return fmt.Errorf("remove schedule %s: %w", name, err)
			}
		}
		w.events.Emit(ScheduleRemoved{EventTime: w.events.Stamp(), Queue: w.queue, Schedule: name})
	}
	return nil
}

// declareSchedule writes schedule name unless the stream has it as it is.
func (w *Worker) declareSchedule(ctx context.Context, js jetstream.JetStream, s jetstream.Stream, name string, sch Schedule) error {
	m := w.names.scheduleMsg(name, sch)
	for range 3 {
		var last uint64
		cur, err := s.GetLastMsgForSubject(ctx, m.Subject)
		switch {
		case err == nil && cur.Header.Get(scheduleDefHeader) == sch.definition():
			return nil
		case err == nil:
			last = cur.Sequence
		case !errors.Is(err, jetstream.ErrMsgNotFound):
			return err
		}
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(last, 10))
		_, err = js.PublishMsg(ctx, m)
		if err == nil {
			w.events.Emit(ScheduleDeclared{EventTime: w.events.Stamp(), Queue: w.queue, Schedule: name, Pattern: sch.pattern()})
			return nil
		}
		if !jsapi.WrongLastSequence(err) {
			return err
		}
		// Another worker wrote it meanwhile: look again.
	}
	return fmt.Errorf("written by other workers meanwhile, three times over")
}

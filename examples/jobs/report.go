package main

import (
	"fmt"
	"time"
)

// summary is what the run found.
type summary struct {
	scheduled, early          int
	lateP99                   time.Duration
	ticks, tickDuplicates     int
	cancelled, ranAfterCancel int
	results, resultsWrong     int
	duplicatesRefused         int
	recovery                  time.Duration
	lost                      int
}

// String is the run's one line.
func (s summary) String() string {
	return fmt.Sprintf("jobs: scheduled=%d early=%d late_p99_ms=%d periodic_ticks=%d periodic_duplicates=%d cancelled=%d "+
		"cancelled_ran_to_completion=%d results=%d results_wrong=%d duplicates_refused=%d recovery_ms=%d lost=%d",
		s.scheduled, s.early, s.lateP99.Milliseconds(), s.ticks, s.tickDuplicates, s.cancelled, s.ranAfterCancel,
		s.results, s.resultsWrong, s.duplicatesRefused, s.recovery.Milliseconds(), s.lost)
}

// check fails unless the run was sound (see sound) and the times are
// within their bounds: late_p99_ms at most 1500, recovery_ms at most 5000.
func (s summary) check() error {
	if err := s.sound(); err != nil {
		return err
	}
	if s.lateP99 > 1500*time.Millisecond || s.recovery > 5*time.Second {
		return errTooSlow
	}
	return nil
}

// sound fails unless nothing ran early, twice, after its cancel or not at
// all, every result was right and every duplicate refused.
func (s summary) sound() error {
	if s.early > 0 || s.tickDuplicates > 0 || s.ranAfterCancel > 0 || s.resultsWrong > 0 || s.lost > 0 ||
		s.duplicatesRefused != 100 || s.cancelled != 50 || s.results != 100 {
		return errFailed
	}
	return nil
}

package tasks

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/internal/logfield"
)

// task is one copy of a task: as the queue delivered it, or as its held
// record keeps it.
type task struct {
	id        string
	attempt   int
	failures  int
	notBefore time.Time
	avoid     string // a worker the task should not go back to
	nonce     string // the EnqueueTask call it comes from, if any
	schedule  string // the periodic schedule it comes from, if any
	copySeq   uint64 // see copyHeader: set on records and markers
	data      []byte
	header    nats.Header // the task's own headers, without the protocol's
}

// record is a held record: the durable copy of a task while a worker
// holds it, or, once finished, a tombstone that outlives it for
// KeepCompleted.
type record struct {
	task
	holder
	state   string
	seq     uint64    // the record's stream sequence: the run's fencing token
	stored  time.Time // when the server stored it
	lastErr string    // a failed run's tombstone's; a completed one's data is its result
}

// parseTask reads a copy of a task delivered at stream sequence seq.
func parseTask(h nats.Header, data []byte, seq uint64) task {
	t := task{id: taskID(h, seq), data: data}
	// One pass over the few headers a task carries, not a lookup for
	// each one it might.
	for k, v := range h {
		if !protocolHeader(k) {
			if !jsapi.ActsOnStream(k) {
				if t.header == nil {
					t.header = nats.Header{} // most tasks carry none of their own
				}
				t.header[k] = v
			}
			continue
		}
		if len(v) == 0 {
			continue
		}
		switch k {
		case AttemptHeader:
			t.attempt = int(parseUint(v[0]))
		case FailuresHeader:
			t.failures = int(parseUint(v[0]))
		case NotBeforeHeader:
			if n, err := strconv.ParseInt(v[0], 10, 64); err == nil {
				t.notBefore = time.Unix(0, n)
			}
		case AvoidHeader:
			t.avoid = v[0]
		case nonceHeader:
			t.nonce = v[0]
		case scheduleNameHeader:
			t.schedule = v[0]
		case copyHeader:
			t.copySeq = parseUint(v[0])
		}
	}
	return t
}

// parseUint reads a counter or a sequence from a header: 0 when it is
// missing or not a number. A missing one, the common case of a first
// copy, is not parsed: a parse error allocates.
func parseUint(s string) uint64 {
	if s == "" {
		return 0
	}
	n, _ := strconv.ParseUint(s, 10, 63)
	return n
}

func protocolHeader(k string) bool { return strings.HasPrefix(k, "Corral-Task-") }

// marker reports whether rec is a cancel marker, which no worker holds.
func (rec record) marker() bool { return rec.state == stateCancelled && rec.worker == "" }

// parseRecord reads a held record.
func parseRecord(m *jetstream.RawStreamMsg) record {
	return record{task: parseTask(m.Header, m.Data, m.Sequence),
		holder: holder{worker: m.Header.Get(workerHeader), process: m.Header.Get(processHeader)},
		state:  m.Header.Get(stateHeader), seq: m.Sequence, stored: m.Time, lastErr: m.Header.Get(lastErrorHeader)}
}

// message is t as a message on subject, with its protocol headers.
func (t task) message(subject string) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = t.data
	for k, v := range t.header {
		m.Header[k] = v
	}
	m.Header.Set(TaskIDHeader, t.id)
	m.Header.Set(AttemptHeader, strconv.Itoa(t.attempt))
	if t.failures > 0 {
		m.Header.Set(FailuresHeader, strconv.Itoa(t.failures))
	}
	if t.avoid != "" {
		m.Header.Set(AvoidHeader, t.avoid)
	}
	if t.nonce != "" {
		m.Header.Set(nonceHeader, t.nonce)
	}
	if t.schedule != "" {
		m.Header.Set(scheduleNameHeader, t.schedule)
	}
	if t.copySeq != 0 {
		m.Header.Set(copyHeader, strconv.FormatUint(t.copySeq, 10))
	}
	return m
}

// The messages below are the protocol's writes about a task: the ledger
// sends them, and CheckTask measures those that carry the task's data
// and headers. Their conditions are set as headers here, as nats.go's
// publish options would set them, so that what is measured is what is
// sent.

// claimMsg is t's held record for h, written on the condition that the
// task's last record is at sequence after: 0 for none at all, held by
// anyone or recently finished; a failed run's tombstone for a retry.
func (n names) claimMsg(t task, h holder, after uint64) *nats.Msg {
	m := t.message(n.held(t.id, h.worker))
	m.Header.Set(stateHeader, stateHeld)
	h.set(m.Header)
	m.Header.Set(jetstream.ExpectedLastSubjSeqSubjHeader, n.heldByTask(t.id))
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(after, 10))
	return m
}

// putBackMsg is next, the next attempt of a task, enqueued again among
// the tasks that come back: at once, or as a schedule that puts it there
// at its not-before time.
func (n names) putBackMsg(next task) *nats.Msg {
	m := next.message(n.waiting(slotBack, next.id))
	m.Header.Set(jetstream.MsgIDHeader, putBackID(next.id, next.attempt))
	if !next.notBefore.IsZero() {
		schedule(m, n.scheduled(next.id), next.notBefore)
	}
	return m
}

// putBackID is the Msg-Id of the put-back of task id at attempt: the same
// for every writer, and in the queue's reserved space, so that it never
// matches an id a task was enqueued with.
func putBackID(id string, attempt int) string {
	return ReservedMsgIDPrefix + "put-back:" + id + ":" + strconv.Itoa(attempt)
}

// deadLetterMsg is t's dead letter on subject, after its run at attempt
// failed with cause; its Msg-Id makes a dead letter written twice (a
// write tried again) one message.
func deadLetterMsg(subject string, t task, attempt int, cause error) *nats.Msg {
	m := t.message(subject)
	m.Header.Set(lastErrorHeader, errorText(cause))
	m.Header.Set(jetstream.MsgIDHeader, ReservedMsgIDPrefix+"dead-letter:"+t.id+":"+strconv.Itoa(attempt))
	return m
}

// tombstoneMsg replaces rec with a tombstone in state, kept for keep, on
// the condition that rec is still the task's record. Its data is the
// run's result, if any.
func (n names) tombstoneMsg(rec record, state string, cause error, keep time.Duration, result []byte) *nats.Msg {
	m := nats.NewMsg(n.held(rec.id, rec.worker))
	m.Data = result
	m.Header.Set(TaskIDHeader, rec.id)
	m.Header.Set(AttemptHeader, strconv.Itoa(rec.attempt))
	m.Header.Set(stateHeader, state)
	rec.holder.set(m.Header)
	if rec.nonce != "" {
		m.Header.Set(nonceHeader, rec.nonce)
	}
	if rec.copySeq != 0 {
		m.Header.Set(copyHeader, strconv.FormatUint(rec.copySeq, 10))
	}
	if cause != nil {
		m.Header.Set(lastErrorHeader, errorText(cause))
	}
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(rec.seq, 10))
	m.Header.Set(jetstream.MsgTTLHeader, keep.String())
	return m
}

// set writes h in a record's headers; a process left empty (a record of
// a worker older than Config.Process, read back) is left out.
func (h holder) set(hdr nats.Header) {
	hdr.Set(workerHeader, h.worker)
	if h.process != "" {
		hdr.Set(processHeader, h.process)
	}
}

// MaxErrorLen is the most of a failed run's error text, in bytes, that
// its tombstone and its dead letter keep (their Corral-Task-Error
// header): a longer text is cut at a character's start and ends saying
// how many bytes were cut. An error's text is the handler's to choose,
// and the server refuses headers past 64 KiB.
const MaxErrorLen = 1024

// errorText is err's text as a record keeps it: at most MaxErrorLen bytes.
func errorText(err error) string {
	s := logfield.Text(err)
	if len(s) <= MaxErrorLen {
		return s
	}
	// The note's count has no more digits than len(s).
	keep := MaxErrorLen - len(fmt.Sprintf("… (%d bytes cut)", len(s)))
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return fmt.Sprintf("%s… (%d bytes cut)", s[:keep], len(s)-keep)
}

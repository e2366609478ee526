package middleware

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/codec"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/subject"
	"github.com/corral-go/corral/kv"
)

// DedupConfig tunes [Dedup]. Its zero value means the defaults.
type DedupConfig struct {
	// Key returns the key a message is recorded under, and false for a
	// message that is handled every time, unrecorded. Default [DedupKey].
	Key func(m *consumer.Msg) (string, bool) `yaml:"-"`
	// Timeout bounds the record written once the handler has succeeded;
	// it does not end with the handler's ctx, which may have just run
	// out. Default (zero or negative) 5s.
	Timeout time.Duration `yaml:"timeout"`
	// OnDuplicate, when set, is called for each message skipped because
	// its key was recorded. Default none.
	OnDuplicate func(m *consumer.Msg, key string) `yaml:"-"`
}

const defaultRecordTimeout = 5 * time.Second

// Dedup returns middleware that makes at-least-once delivery effectively
// once for idempotent handlers, by recording in bucket the messages
// handled:
//
//   - A message's key is cfg.Key's, by default [DedupKey]'s: its
//     handler's name and its Nats-Msg-Id header if it has one, else its
//     stream and stream sequence. A message without a key (a core
//     message without Nats-Msg-Id) is handled every time.
//   - If the key is recorded, the message is handled already: Dedup
//     returns nil without calling the handler, so a JetStream message is
//     acked (and a request answered with an empty reply).
//   - Otherwise the handler runs. If it fails, nothing is recorded, and
//     the message is retried as usual. If it succeeds, the key is
//     recorded, then Dedup returns nil.
//   - A lookup or a record that fails makes the message fail (retried,
//     for JetStream): Dedup never runs a handler it could not check, and
//     never reports a message handled that it has not recorded.
//   - A record is kept for the bucket's TTL (kv.Config.TTL): set it
//     longer than a message can come again (redeliveries, and the
//     publishers' retries).
//
// The handler can run twice for one message: when the process dies, or
// the record fails, after the handler succeeded and before the key was
// recorded; or when two deliveries of one message run at once (after an
// ack wait ran out, or on two instances), since the lookup and the record
// are not one step. Hence idempotent handlers only: Dedup makes
// duplicates rare, not impossible. A nil bucket fails every message.
func Dedup[T any](bucket *kv.Bucket[T], cfg DedupConfig) consumer.Middleware {
	if cfg.Key == nil {
		cfg.Key = DedupKey
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = defaultRecordTimeout
	}
	var records *kv.Bucket[[]byte]
	if bucket != nil {
		records = kv.Typed(bucket, codec.Bytes{})
	}
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
			if records == nil {
				return errors.New("middleware: dedup: nil bucket")
			}
			key, ok := cfg.Key(m)
			if !ok {
				return next.Handle(ctx, m)
			}
			_, err := records.Get(ctx, key)
			switch {
			case err == nil:
				if cfg.OnDuplicate != nil {
					cfg.OnDuplicate(m, key)
				}
				return nil
			case !errors.Is(err, kv.ErrKeyNotFound):
				return fmt.Errorf("middleware: dedup: look up %s: %w", key, err)
			}
			if err := next.Handle(ctx, m); err != nil {
				return err
			}
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.Timeout)
			defer cancel()
			if _, err := records.Put(rctx, key, []byte(m.Subject())); err != nil {
				return fmt.Errorf("middleware: dedup: record %s: %w", key, err)
			}
			return nil
		})
	}
}

// DedupKey is [Dedup]'s default key: the handler's name, then
//
//   - "id." and the message's Nats-Msg-Id header when it has one (or
//     "id64." and the header in unpadded URL-safe base64 when it is not a
//     valid key, or "idh." and its SHA-256 in that base64 when neither is,
//     or either is longer than 1744 bytes, the longest key every bucket
//     takes: a long Msg-Id is recorded, not refused with
//     kv.ErrInvalidKey), else
//   - for a JetStream message, "seq.", its stream, "." and its stream
//     sequence (or "seq64." and the stream's name in base64, for a name
//     that is not a valid key token; "seqh." and its hash, as above, for
//     one whose encoding is not either).
//
// Each handler thus records its own messages: two handlers consuming one
// stream each handle a message once. A core message without Nats-Msg-Id
// has no key (false).
func DedupKey(m *consumer.Msg) (string, bool) {
	if h := m.Header(); h != nil {
		if id := h.Get(nats.MsgIdHdr); id != "" {
			return key(m.Handler(), "id", id), true
		}
	}
	if md := m.Metadata(); md != nil {
		return key(m.Handler(), "seq", md.Stream) + "." + strconv.FormatUint(md.Sequence.Stream, 10), true
	}
	return "", false
}

// key joins handler, kind and v, encoding v when it is not a valid key,
// and hashing it when even its encoding is not, or is too long for some
// bucket (see maxKeyLen).
func key(handler, kind, v string) string {
	if k := handler + "." + kind + "." + v; fits(k) {
		return k
	}
	if k := handler + "." + kind + "64." + base64.RawURLEncoding.EncodeToString([]byte(v)); fits(k) {
		return k
	}
	sum := sha256.Sum256([]byte(v))
	return handler + "." + kind + "h." + base64.RawURLEncoding.EncodeToString(sum[:])
}

// maxKeyLen is the longest key DedupKey returns unhashed: the longest any
// bucket takes, that of a bucket with the longest name. A longer key is
// refused with kv.ErrInvalidKey by a bucket whose name is long enough.
var maxKeyLen = kv.KeyLimit(strings.Repeat("b", subject.MaxBucketLen))

// fits reports whether k is a valid key for every bucket.
func fits(k string) bool { return len(k) <= maxKeyLen && kv.ValidKey(k) == nil }

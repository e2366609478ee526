package publisher

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"

	"github.com/nats-io/nats.go"
)

// A spool record is: length of the body (4), crc32 of the body (4), then
// the body: sequence (8), subject length (2), subject, header length (4),
// header JSON, data. Integers are little-endian.
const recordHeader = 8 // length and crc32

// minRecord is the smallest record: its header and a body with an empty
// subject, no header and no data.
const minRecord = recordHeader + 14

// encodeRecord returns the record of msg, whose header is already encoded
// as hdr, with spool sequence seq. It refuses a message whose subject,
// header or record does not fit the record's length fields.
func encodeRecord(seq uint64, msg *nats.Msg, hdr []byte) ([]byte, error) {
	sl := len(msg.Subject)
	if sl > math.MaxUint16 {
		return nil, fmt.Errorf("%w: %d bytes, a spool record holds at most %d", ErrSubjectTooLong, sl, math.MaxUint16)
	}
	if n := 14 + uint64(sl) + uint64(len(hdr)) + uint64(len(msg.Data)); n > math.MaxUint32 {
		return nil, fmt.Errorf("publisher: spool: a record of %d bytes, at most %d fit", n, uint32(math.MaxUint32))
	}
	rec := make([]byte, recordHeader+14+sl+len(hdr)+len(msg.Data))
	body := rec[recordHeader:]
	binary.LittleEndian.PutUint64(body[0:], seq)
	binary.LittleEndian.PutUint16(body[8:], uint16(sl))
	copy(body[10:], msg.Subject)
	binary.LittleEndian.PutUint32(body[10+sl:], uint32(len(hdr)))
	copy(body[14+sl:], hdr)
	copy(body[14+sl+len(hdr):], msg.Data)
	binary.LittleEndian.PutUint32(rec[0:], uint32(len(body)))
	binary.LittleEndian.PutUint32(rec[4:], crc32.ChecksumIEEE(body))
	return rec, nil
}

// readRecord decodes the record at the start of b into an entry with its
// spool sequence, and returns the record's length. An error means the
// record is torn or damaged. The lengths are checked before the checksum,
// so that scanning damaged bytes for the next record is cheap.
func readRecord(b []byte) (*entry, int, error) {
	if len(b) < recordHeader {
		return nil, 0, errors.New("short record")
	}
	n := int(binary.LittleEndian.Uint32(b[0:]))
	if n < minRecord-recordHeader || n > len(b)-recordHeader {
		return nil, 0, fmt.Errorf("bad record length %d", n)
	}
	body := b[recordHeader : recordHeader+n]
	sl := int(binary.LittleEndian.Uint16(body[8:]))
	if 10+sl+4 > len(body) {
		return nil, 0, errors.New("bad subject length")
	}
	hl := int(binary.LittleEndian.Uint32(body[10+sl:]))
	rest := body[14+sl:]
	if hl > len(rest) {
		return nil, 0, errors.New("bad header length")
	}
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(b[4:]) {
		return nil, 0, errors.New("bad checksum")
	}
	e := &entry{seq: binary.LittleEndian.Uint64(body[0:])}
	msg := &nats.Msg{Subject: string(body[10 : 10+sl])}
	if hl > 0 {
		if err := json.Unmarshal(rest[:hl], &msg.Header); err != nil {
			return nil, 0, err
		}
	}
	msg.Data = slices.Clone(rest[hl:])
	e.msg, e.size = msg, msgSize(msg)
	return e, recordHeader + n, nil
}

package publisher

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"

	"github.com/nats-io/nats.go"
)

// record layout: length (4), crc32 of the rest (4), sequence (8), subject
// length (2), subject, header length (4), header JSON, data.
const recordHeader = 8

func readRecord(b []byte) (*entry, int, error) {
	if len(b) < recordHeader {
		return nil, 0, errors.New("short record")
	}
	n := int(binary.LittleEndian.Uint32(b[0:]))
	if n < 14 || n > len(b)-recordHeader {
		return nil, 0, fmt.Errorf("bad record length %d", n)
	}
	body := b[recordHeader : recordHeader+n]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(b[4:]) {
		return nil, 0, errors.New("bad checksum")
	}
	e := &entry{seq: binary.LittleEndian.Uint64(body[0:])}
	sl := int(binary.LittleEndian.Uint16(body[8:]))
	if 10+sl+4 > len(body) {
		return nil, 0, errors.New("bad subject length")
	}
	msg := &nats.Msg{Subject: string(body[10 : 10+sl])}
	hl := int(binary.LittleEndian.Uint32(body[10+sl:]))
	rest := body[14+sl:]
	if hl > len(rest) {
		return nil, 0, errors.New("bad header length")
	}
	if hl > 0 {
		if err := json.Unmarshal(rest[:hl], &msg.Header); err != nil {
			return nil, 0, err
		}
	}
	msg.Data = slices.Clone(rest[hl:])
	e.msg, e.size = msg, msgSize(msg)
	return e, recordHeader + n, nil
}

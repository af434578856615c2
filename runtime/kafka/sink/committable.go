package sink

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// committable is what an exactly-once transaction leaves when it is
// pre-committed, in the sink's checkpoint state: enough to commit it from
// any process (its transactional id, producer id and epoch), and where its
// records are, to read them back should the broker lose it. Its text is
// "transactional-id|producer-id|epoch|from|ends"; checkpoints of older
// versions have no ends.
type committable struct {
	txn   string
	pid   int64
	epoch int16
	// from is each partition's end offset when the transaction began: its
	// records are at or after it.
	from map[int32]int64
	// ends is, for each partition it wrote to, the offset after its last
	// record (nil: not known).
	ends map[int32]int64
}

func (c committable) String() string {
	s := fmt.Sprintf("%s|%d|%d|%s", c.txn, c.pid, c.epoch, encodeFrom(c.from))
	if c.ends != nil {
		s += "|" + encodeFrom(c.ends)
	}
	return s
}

// parseCommittable reads what String wrote.
func parseCommittable(s string) (committable, error) {
	parts := strings.Split(s, "|")
	if len(parts) != 4 && len(parts) != 5 {
		return committable{}, fmt.Errorf("committable %q is not transactional-id|producer-id|epoch|offsets", s)
	}
	pid, err1 := strconv.ParseInt(parts[1], 10, 64)
	epoch, err2 := strconv.ParseInt(parts[2], 10, 16)
	if err1 != nil || err2 != nil {
		return committable{}, fmt.Errorf("committable %q: bad producer id or epoch", s)
	}
	c := committable{txn: parts[0], pid: pid, epoch: int16(epoch)}
	var err error
	if c.from, err = decodeFrom(parts[3]); err != nil {
		return committable{}, fmt.Errorf("committable %q: %w", s, err)
	}
	if len(parts) == 5 {
		if c.ends, err = decodeFrom(parts[4]); err != nil {
			return committable{}, fmt.Errorf("committable %q: %w", s, err)
		}
	}
	return c, nil
}

func encodeFrom(from map[int32]int64) string {
	parts := make([]string, 0, len(from))
	for p, o := range from {
		parts = append(parts, fmt.Sprintf("%d:%d", p, o))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func decodeFrom(s string) (map[int32]int64, error) {
	out := map[int32]int64{}
	if s == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		p, o, ok := strings.Cut(kv, ":")
		pn, err1 := strconv.ParseInt(p, 10, 32)
		on, err2 := strconv.ParseInt(o, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("offsets %q", s)
		}
		out[int32(pn)] = on
	}
	return out, nil
}

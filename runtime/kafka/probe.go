package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/IBM/sarama"
)

// A Sarama partition consumer hands out records but never says where it
// is: the offsets of commit and abort markers, and of aborted records under
// read_committed, are skipped without a word. To know that the consumer has
// delivered everything below an offset, the live verifier and the oracle's
// read_committed reads ask the broker itself what lies between the last
// delivered record and that offset, and
// sorts it exactly as Sarama's consumer does (partitionConsumer.parseResponse):
// control batches are never delivered, and under read_committed neither are
// the transactional batches of a producer from the first offset of one of
// its aborted transactions up to its abort marker.

// errLegacyRecords means a broker answered in the pre-0.11 message format,
// in which there are no transactions to wait for.
var errLegacyRecords = errors.New("the broker answered in the legacy message format")

// probeFetchBytes bounds one probe's answer.
const probeFetchBytes = 1 << 20

// ListOffsets asks the leaders of topic's partitions for their newest
// offset: the high watermark with ReadUncommitted, the last stable offset
// (LSO, below which every transaction is decided) with ReadCommitted.
// Sarama's Client.GetOffset cannot ask for the LSO: it never sets the
// request's isolation level.
func ListOffsets(cl sarama.Client, topic string, parts []int32, iso sarama.IsolationLevel) (map[int32]int64, error) {
	type group struct {
		b     *sarama.Broker
		req   *sarama.OffsetRequest
		parts []int32
	}
	groups := map[int32]*group{}
	for _, p := range parts {
		b, err := cl.Leader(topic, p)
		if err != nil {
			return nil, fmt.Errorf("leader of %s/%d: %w", topic, p, err)
		}
		g := groups[b.ID()]
		if g == nil {
			req := sarama.NewOffsetRequest(cl.Config().Version)
			req.IsolationLevel = iso
			g = &group{b: b, req: req}
			groups[b.ID()] = g
		}
		g.req.AddBlock(topic, p, sarama.OffsetNewest, 1)
		g.parts = append(g.parts, p)
	}
	out := make(map[int32]int64, len(parts))
	for _, g := range groups {
		resp, err := g.b.GetAvailableOffsets(g.req)
		if err != nil {
			_ = g.b.Close()
			return nil, fmt.Errorf("list offsets of %s: %w", topic, err)
		}
		for _, p := range g.parts {
			blk := resp.GetBlock(topic, p)
			if blk == nil {
				return nil, fmt.Errorf("list offsets of %s/%d: %w", topic, p, sarama.ErrIncompleteResponse)
			}
			if !errors.Is(blk.Err, sarama.ErrNoError) {
				_ = cl.RefreshMetadata(topic)
				return nil, fmt.Errorf("list offsets of %s/%d: %w", topic, p, blk.Err)
			}
			off := blk.Offset
			if g.req.Version == 0 {
				if len(blk.Offsets) == 0 {
					return nil, fmt.Errorf("list offsets of %s/%d: %w", topic, p, sarama.ErrIncompleteResponse)
				}
				off = blk.Offsets[0]
			}
			out[p] = off
		}
	}
	return out, nil
}

// fetchOnce fetches partition p of topic from offset without waiting.
func fetchOnce(cl sarama.Client, topic string, p int32, offset int64, iso sarama.IsolationLevel) (*sarama.FetchResponseBlock, error) {
	b, err := cl.Leader(topic, p)
	if err != nil {
		return nil, fmt.Errorf("leader of %s/%d: %w", topic, p, err)
	}
	// The response may be larger than the partition's share: kfake leaves
	// the aborted transactions out of a partition's answer when the
	// response's own limit is what cut it short, and without them an
	// aborted transaction longer than one answer would look committed.
	req := &sarama.FetchRequest{MinBytes: 1, MaxWaitTime: 0, MaxBytes: 4 * probeFetchBytes, Isolation: iso}
	switch v := cl.Config().Version; {
	case v.IsAtLeast(sarama.V2_7_0_0):
		req.Version = 12
	case v.IsAtLeast(sarama.V2_3_0_0):
		req.Version = 11
	default:
		req.Version = 5
	}
	if req.Version >= 7 {
		req.SessionID, req.SessionEpoch = 0, -1 // no fetch session
	}
	req.AddBlock(topic, p, offset, probeFetchBytes, -1)
	resp, err := b.Fetch(req)
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("fetch %s/%d at %d: %w", topic, p, offset, err)
	}
	blk := resp.GetBlock(topic, p)
	if blk == nil {
		return nil, fmt.Errorf("fetch %s/%d at %d: %w", topic, p, offset, sarama.ErrIncompleteResponse)
	}
	if !errors.Is(blk.Err, sarama.ErrNoError) {
		_ = cl.RefreshMetadata(topic)
		return nil, fmt.Errorf("fetch %s/%d at %d: %w", topic, p, offset, blk.Err)
	}
	return blk, nil
}

// VisibleIn fetches partition p of topic from offset from and reports the
// last offset below to that a consumer with isolation iso is handed (-1:
// none), and how far the answer reached: every offset in [from, end) has
// been sorted, and end <= to. end == from when the broker had nothing to
// give yet (from is at its end or, under read_committed, at its LSO).
func VisibleIn(cl sarama.Client, topic string, p int32, from, to int64, iso sarama.IsolationLevel) (last, end int64, err error) {
	blk, err := fetchOnce(cl, topic, p, from, iso)
	if err != nil {
		return -1, from, err
	}
	last, end = -1, from
	aborted := append([]*sarama.AbortedTransaction(nil), blk.AbortedTransactions...)
	sort.Slice(aborted, func(i, j int) bool { return aborted[i].FirstOffset < aborted[j].FirstOffset })
	abortedPIDs := map[int64]bool{}
	for _, rs := range blk.RecordsSet {
		rb := rs.RecordBatch
		if rb == nil {
			if rs.MsgSet != nil {
				return -1, from, fmt.Errorf("fetch %s/%d: %w", topic, p, errLegacyRecords)
			}
			continue
		}
		if rb.PartialTrailingRecord {
			break
		}
		if rb.FirstOffset >= to {
			end = to
			break
		}
		for len(aborted) > 0 && aborted[0].FirstOffset <= rb.LastOffset() {
			abortedPIDs[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		switch {
		case rb.Control:
			if isAbortMarker(rb) {
				delete(abortedPIDs, rb.ProducerID)
			}
		case iso == sarama.ReadCommitted && rb.IsTransactional && abortedPIDs[rb.ProducerID]:
		default:
			for _, r := range rb.Records {
				if off := rb.FirstOffset + r.OffsetDelta; off >= from && off < to && off > last {
					last = off
				}
			}
		}
		end = max(end, min(rb.LastOffset()+1, to))
	}
	return last, end, nil
}

// isAbortMarker reads a control batch's record key: version, then type
// (0 abort, 1 commit).
func isAbortMarker(rb *sarama.RecordBatch) bool {
	if len(rb.Records) == 0 || len(rb.Records[0].Key) < 4 {
		return false
	}
	return binary.BigEndian.Uint16(rb.Records[0].Key[2:4]) == 0
}
